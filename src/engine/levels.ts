import type { LevelEvent, Soul, Trait } from './model.ts';
import { requireText } from './normalize.ts';
import { renderBlock, renderInputs } from './render.ts';
import { expiryCutoff, type Knobs } from './settings.ts';
import { meanPairwise, textSimilarity } from './similarity-modes.ts';
import type { SoulsDb } from './souls-db.ts';
import { readyEdges } from './crystallization.ts';
import { principleHints, similarityMeasure, type TraitHintCode } from './polarity.ts';
import { consolidationConflicts, InvalidStateError, LevelUpPlanError, NotFoundError, type CounterCitation, type PlanProblem } from './errors.ts';

export type ConsolidationGroup = { sourceTraitIds: readonly number[]; mergedPrinciple: string; mergedProvenance: string };
export type LevelUpPlan = {
  newEssence: string;
  consolidations: readonly ConsolidationGroup[];
  promotedTraitIds: readonly number[];
  carriedTraitIds: readonly number[];
};

export type LevelUpWarning = { kind: 'WEAK_CONSOLIDATION' | 'PREMATURE_PROMOTION' | TraitHintCode; message: string; traitIds: number[] };

type CleanPlan = LevelUpPlan & { consolidations: ConsolidationGroup[] };

const sortedUnique = (ids: Iterable<number>) => [...new Set(ids)].sort((a, b) => a - b);

/**
 * Every active trait exactly once across consolidations, promotions and
 * carries; every listed id an active trait of this soul; non-empty texts; no
 * merged principle repeating a carried trait's or another merged one; no merged
 * trait citing counter-evidence (`counterCitations` among the active traits,
 * SPEC §13); and a change (a consolidation, a promotion or a new essence).
 * Returns the cleaned plan, or the structured diff as a LevelUpPlanError.
 */
export function checkLevelUpPlan(
  soul: Pick<Soul, 'essence'>,
  activeTraits: readonly Trait[],
  plan: LevelUpPlan,
  knobs: { maxEssenceBytes: number; maxPrincipleBytes: number; maxProvenanceBytes: number },
  counterCitations: readonly CounterCitation[] = [],
): CleanPlan | LevelUpPlanError {
  const problems: PlanProblem[] = [];
  const text = (field: string, value: unknown, max: number): string => {
    try {
      return requireText(field, value, max);
    } catch (error) {
      problems.push({ field, message: (error as Error).message });
      return '';
    }
  };
  const newEssence = text('newEssence', plan.newEssence, knobs.maxEssenceBytes);
  const consolidations = (plan.consolidations ?? []).map((group, i) => {
    if ((group.sourceTraitIds ?? []).length === 0) problems.push({ field: `consolidations[${i}].sourceTraitIds`, message: 'must list at least one trait' });
    return {
      sourceTraitIds: group.sourceTraitIds ?? [],
      mergedPrinciple: text(`consolidations[${i}].mergedPrinciple`, group.mergedPrinciple, knobs.maxPrincipleBytes),
      mergedProvenance: text(`consolidations[${i}].mergedProvenance`, group.mergedProvenance, knobs.maxProvenanceBytes),
    };
  });
  const listed = [...consolidations.flatMap((g) => g.sourceTraitIds), ...(plan.promotedTraitIds ?? []), ...(plan.carriedTraitIds ?? [])];
  const active = new Set(activeTraits.map((t) => t.id));
  const seen = new Set<number>();
  const duplicated: number[] = [];
  for (const id of listed) {
    if (seen.has(id)) duplicated.push(id);
    seen.add(id);
  }
  const diff = {
    missing: sortedUnique([...active].filter((id) => !seen.has(id))),
    duplicated: sortedUnique(duplicated),
    notActive: sortedUnique(listed.filter((id) => !active.has(id))),
    problems,
  };
  problems.push(...repeatedPrinciples(activeTraits, consolidations, plan.carriedTraitIds ?? []));
  problems.push(...consolidationConflicts(consolidations, counterCitations));
  if (consolidations.length === 0 && (plan.promotedTraitIds ?? []).length === 0 && newEssence === soul.essence) {
    problems.push({ field: 'newEssence', message: 'the plan changes nothing (no consolidation, no promotion, the same essence): consolidate or promote traits, or give a new essence' });
  }
  if (diff.missing.length + diff.duplicated.length + diff.notActive.length + problems.length > 0) return new LevelUpPlanError(diff);
  return { newEssence, consolidations, promotedTraitIds: plan.promotedTraitIds ?? [], carriedTraitIds: plan.carriedTraitIds ?? [] };
}

/** A merged principle may not be the principle of a trait that stays active (carried) or of another merged trait. */
function repeatedPrinciples(activeTraits: readonly Trait[], consolidations: readonly ConsolidationGroup[], carriedTraitIds: readonly number[]): PlanProblem[] {
  const carried = new Set(carriedTraitIds);
  const holders = new Map<string, string>(activeTraits.filter((t) => carried.has(t.id)).map((t) => [t.principle, `carried trait ${t.id}`]));
  const problems: PlanProblem[] = [];
  consolidations.forEach((group, i) => {
    if (group.mergedPrinciple === '') return;
    const holder = holders.get(group.mergedPrinciple);
    if (holder) problems.push({ field: `consolidations[${i}].mergedPrinciple`, message: `is the principle of ${holder}: two active traits would share it` });
    else holders.set(group.mergedPrinciple, `consolidations[${i}]`);
  });
  return problems;
}

/**
 * Advisory only, never blocking a level-up: weak consolidations, premature promotions, and each merged principle
 * close to (NEAR_DUPLICATE) or possibly contradicting (POSSIBLE_CONTRADICTION) a carried trait.
 */
export function levelUpWarnings(activeTraits: readonly Trait[], plan: CleanPlan, knobs: Pick<Knobs, 'consolidationThreshold' | 'redundancyThreshold' | 'similarity'>): LevelUpWarning[] {
  const byId = new Map(activeTraits.map((t) => [t.id, t]));
  const warnings: LevelUpWarning[] = [];
  plan.consolidations.forEach((group, i) => {
    if (group.sourceTraitIds.length < 2) return;
    const mean = meanPairwise(knobs.similarity, group.sourceTraitIds.map((id) => byId.get(id)!.principle));
    if (mean < knobs.consolidationThreshold) {
      warnings.push({
        kind: 'WEAK_CONSOLIDATION',
        message: `consolidation ${i + 1} groups traits with mean similarity ${mean.toFixed(2)} (${similarityMeasure(knobs.similarity)}), below ${knobs.consolidationThreshold}`,
        traitIds: [...group.sourceTraitIds],
      });
    }
  });
  for (const id of plan.promotedTraitIds) {
    const redundancy = textSimilarity(knobs.similarity, byId.get(id)!.principle, plan.newEssence);
    if (redundancy < knobs.redundancyThreshold) {
      warnings.push({
        kind: 'PREMATURE_PROMOTION',
        message: `trait ${id} is promoted but the new essence barely echoes it (similarity ${redundancy.toFixed(2)}, below ${knobs.redundancyThreshold})`,
        traitIds: [id],
      });
    }
  }
  const carried = plan.carriedTraitIds.map((id) => byId.get(id)!);
  plan.consolidations.forEach((group, i) => warnings.push(...principleHints(`consolidation ${i + 1}`, group.mergedPrinciple, carried, knobs)));
  return warnings;
}

/** The soul's render inputs, and the counter-citations among its active traits (what a consolidation could merge). */
async function planContext(db: SoulsDb, soulId: number) {
  const input = (await renderInputs(db, [soulId])).get(soulId);
  if (!input) throw new NotFoundError('Soul', soulId);
  if (input.soul.deletedAt !== null) throw new InvalidStateError(`soul ${soulId} is dormant: awaken it first`);
  const active = input.traits.map((t) => t.id);
  return { ...input, counterCitations: await db.store.counterCitations(active, active) };
}

export type LevelUpResult = { soul: Soul; event: LevelEvent; warnings: LevelUpWarning[] };

/** Consolidates, promotes and carries traits, rewrites the essence and raises the level, all at once. */
export async function levelUp(db: SoulsDb, soulId: number, plan: LevelUpPlan): Promise<LevelUpResult> {
  const { soul, traits, counterCitations } = await planContext(db, soulId);
  const checked = checkLevelUpPlan(soul, traits, plan, db.settings, counterCitations);
  if (checked instanceof LevelUpPlanError) throw checked;
  const warnings = levelUpWarnings(traits, checked, db.settings);
  const event = await db.store.applyLevelUp(soulId, { ...checked, activeTraitIds: traits.map((t) => t.id) }, db.clock.now());
  return { soul: (await db.store.getSouls([soulId])).get(soulId)!, event, warnings };
}

/**
 * Undoes the latest level-up that is not yet reverted; never blocked by the trait limit. With `levelEventId`
 * it is retry-safe (SPEC §12): that event only, only while it is the latest unreverted one, so a second call
 * is an InvalidStateError ("already reverted"). Without it a retried call reverts the level-up before too.
 * Shards it un-fades count again, so `readySoulIds` lists the souls that made ready.
 */
export async function revertLevelUp(db: SoulsDb, soulId: number, levelEventId: number | null = null): Promise<{ soul: Soul; event: LevelEvent; readySoulIds: number[] }> {
  const now = db.clock.now();
  const { event, gate } = await db.store.revertLevelUp(soulId, now, db.settings.shardFadeCitations, expiryCutoff(db, now), levelEventId);
  return { soul: (await db.store.getSouls([soulId])).get(soulId)!, event, readySoulIds: await readyEdges(db, gate) };
}

export async function getLevelHistory(db: SoulsDb, soulId: number): Promise<LevelEvent[]> {
  return await db.store.levelHistory([soulId]);
}

export type LevelUpPreview = { valid: boolean; error: LevelUpPlanError | null; warnings: LevelUpWarning[]; before: string; after: string | null };

/** Validation, warnings and the rendered block before and after the plan, as if applied now; writes nothing. */
export async function previewLevelUp(db: SoulsDb, soulId: number, plan: LevelUpPlan, options: { includeProvenance?: boolean } = {}): Promise<LevelUpPreview> {
  const { soul, traits, citationCounts, counterCitations } = await planContext(db, soulId);
  const before = renderBlock(soul, traits, citationCounts, options);
  const checked = checkLevelUpPlan(soul, traits, plan, db.settings, counterCitations);
  if (checked instanceof LevelUpPlanError) return { valid: false, error: checked, warnings: [], before, after: null };
  const now = db.clock.now();
  const byId = new Map(traits.map((t) => [t.id, t]));
  const carried = checked.carriedTraitIds.map((id) => ({ ...byId.get(id)!, generation: soul.level + 1, updatedAt: now }));
  const merged: Trait[] = checked.consolidations.map((group, i) => ({
    id: Number.MAX_SAFE_INTEGER - checked.consolidations.length + i,
    soulId,
    principle: group.mergedPrinciple,
    provenance: group.mergedProvenance,
    generation: soul.level + 1,
    status: 'active',
    mergedInto: null,
    createdAt: now,
    updatedAt: now,
  }));
  // A merged trait carries the union of its sources' citations, and ranks by it.
  const counts = new Map(citationCounts);
  const sourceCitations = Map.groupBy(await db.store.citationsOfTraits(checked.consolidations.flatMap((g) => g.sourceTraitIds)), (c) => c.traitId);
  checked.consolidations.forEach((group, i) => {
    counts.set(merged[i].id, new Set(group.sourceTraitIds.flatMap((id) => (sourceCitations.get(id) ?? []).map((c) => c.shardId))).size);
  });
  const after = renderBlock({ ...soul, essence: checked.newEssence, orderedAt: now }, [...carried, ...merged], counts, options);
  return { valid: true, error: null, warnings: levelUpWarnings(traits, checked, db.settings), before, after };
}
