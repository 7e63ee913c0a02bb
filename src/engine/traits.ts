import { CapacityError, InvalidStateError, NotFoundError, ValidationError } from './errors.ts';
import { traitStatuses, type Citation, type Shard, type Trait, type TraitStatus } from './model.ts';
import { requireIds, requireText } from './normalize.ts';
import { renderBlock, renderInputs } from './render.ts';
import { traitSignals, type TraitSignals } from './signals.ts';
import { expiryCutoff } from './settings.ts';
import type { SoulsDb } from './souls-db.ts';
import { readyEdges } from './crystallization.ts';
import { principleHints, similarityMeasure, type TraitHint } from './polarity.ts';
import { textSimilarity } from './similarity-modes.ts';

export type AddTraitInput = { principle: string; provenance: string; citeShardIds?: readonly number[] | null };
export type ReviseTraitInput = { principle?: string | null; provenance?: string | null };
export type TraitRevision = ReviseTraitInput & { traitId: number };

function validNewTrait(db: SoulsDb, input: AddTraitInput) {
  return {
    principle: requireText('principle', input.principle, db.settings.maxPrincipleBytes),
    provenance: requireText('provenance', input.provenance, db.settings.maxProvenanceBytes),
    citeShardIds: [...new Set(requireIds('citeShardIds', input.citeShardIds ?? []))],
  };
}

function validRevision(db: SoulsDb, input: ReviseTraitInput): { principle?: string; provenance?: string } {
  const patch: { principle?: string; provenance?: string } = {};
  if (input.principle !== undefined && input.principle !== null) patch.principle = requireText('principle', input.principle, db.settings.maxPrincipleBytes);
  if (input.provenance !== undefined && input.provenance !== null) patch.provenance = requireText('provenance', input.provenance, db.settings.maxProvenanceBytes);
  return patch;
}

/** "No provenance, no trait": both texts must be non-empty; refused at capacity. */
export async function addTrait(db: SoulsDb, soulId: number, input: AddTraitInput): Promise<Trait> {
  return await db.store.insertTrait(soulId, validNewTrait(db, input), db.clock.now(), db.settings.traitLimit);
}

export async function reviseTrait(db: SoulsDb, traitId: number, input: ReviseTraitInput): Promise<Trait> {
  return await db.store.updateTrait(traitId, validRevision(db, input), db.clock.now());
}

export async function revertTrait(db: SoulsDb, traitId: number): Promise<Trait> {
  return await db.store.setTraitStatus(traitId, 'reverted', db.clock.now(), db.settings.traitLimit);
}

/** Brings back a reverted, consolidated or promoted trait; respects the trait limit. */
export async function reactivateTrait(db: SoulsDb, traitId: number): Promise<Trait> {
  return await db.store.setTraitStatus(traitId, 'active', db.clock.now(), db.settings.traitLimit);
}

/** The store names the shards of a refused citation `shardIds`; callers know them by their own field. */
async function citing<T>(field: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof ValidationError && error.field === 'shardIds') throw new ValidationError(field, error.message);
    throw error;
  }
}

/**
 * Links a shard to the trait it informed; citing the same pair again changes nothing. The shard must be attributed to
 * the trait's soul, and may not be a member of a theme that opposes the trait (SPEC §13: a ValidationError `shardId`).
 */
export async function citeShard(db: SoulsDb, shardId: number, traitId: number): Promise<{ shard: Shard; trait: Trait }> {
  await citing('shardId', async () => db.store.citeShards(traitId, [shardId], db.clock.now()));
  return { shard: (await db.store.getShards([shardId])).get(shardId)!, trait: (await db.store.getTraits([traitId])).get(traitId)! };
}

export type CiteResult = { trait: Trait; cited: number[]; alreadyCited: number[] };

/**
 * Cites several shards from one trait at once (all or nothing). `cited` are the shards it did not cite before,
 * `alreadyCited` the ones it already cited (left as they were), both in the order given. A shard of a theme opposing
 * the trait is refused (ValidationError `citeShardIds`).
 */
export async function citeShards(db: SoulsDb, traitId: number, shardIds: readonly number[]): Promise<CiteResult> {
  const wanted = [...new Set(requireIds('citeShardIds', shardIds))];
  if (wanted.length === 0) throw new ValidationError('citeShardIds', 'must list at least one shard');
  const fresh = new Set(await citing('citeShardIds', async () => db.store.citeShards(traitId, wanted, db.clock.now())));
  return { trait: (await db.store.getTraits([traitId])).get(traitId)!, cited: wanted.filter((id) => fresh.has(id)), alreadyCited: wanted.filter((id) => !fresh.has(id)) };
}

export type TraitCites = { traitId: number; shardIds: readonly number[] };
export type TraitCitesResult = { traitId: number; cited: number[]; alreadyCited: number[] };

/**
 * citeShards for several traits at once, all or nothing (each entry checked as citeShards checks it; a refusal names
 * `cites[i]`). `dryRun` checks and answers the same, writing nothing.
 */
export async function citeShardsOfTraits(db: SoulsDb, cites: readonly TraitCites[], options: { dryRun?: boolean } = {}): Promise<TraitCitesResult[]> {
  if (cites.length === 0) throw new ValidationError('cites', 'must list at least one trait and its shards');
  const wanted = cites.map((c, i) => {
    const shardIds = [...new Set(requireIds(`cites[${i}].shardIds`, c.shardIds))];
    if (shardIds.length === 0) throw new ValidationError(`cites[${i}].shardIds`, 'must list at least one shard');
    return { traitId: requireIds(`cites[${i}].traitId`, [c.traitId])[0], shardIds };
  });
  const seen = new Set<number>();
  wanted.forEach((c, i) => {
    if (seen.has(c.traitId)) throw new ValidationError(`cites[${i}].traitId`, `lists trait ${c.traitId} twice: give each trait once, with all its shards`);
    seen.add(c.traitId);
  });
  const fresh = await citing('cites', async () => db.store.citeShardsOfTraits(wanted, db.clock.now(), options.dryRun === true));
  return wanted.map((c, i) => {
    const added = new Set(fresh[i]);
    return { traitId: c.traitId, cited: c.shardIds.filter((id) => added.has(id)), alreadyCited: c.shardIds.filter((id) => !added.has(id)) };
  });
}

/**
 * Takes a citation back (SPEC §12); refused when the trait does not cite the shard. A faded shard that falls below
 * the fade threshold returns to pending, so `readySoulIds` lists the souls that made ready.
 */
export async function unciteShard(db: SoulsDb, shardId: number, traitId: number): Promise<{ shard: Shard; trait: Trait; readySoulIds: number[] }> {
  const { trait, readySoulIds } = await unciteShards(db, traitId, [shardId]);
  return { shard: (await db.store.getShards([shardId])).get(shardId)!, trait, readySoulIds };
}

/** unciteShard for several shards of one trait at once: every one must be cited, or nothing is taken back. */
export async function unciteShards(db: SoulsDb, traitId: number, shardIds: readonly number[]): Promise<{ trait: Trait; uncited: number[]; readySoulIds: number[] }> {
  const wanted = [...new Set(requireIds('shardIds', shardIds))];
  if (wanted.length === 0) throw new ValidationError('shardIds', 'must list at least one shard');
  const now = db.clock.now();
  const { gate } = await db.store.unciteShards(traitId, wanted, now, db.settings.shardFadeCitations, expiryCutoff(db, now));
  return { trait: (await db.store.getTraits([traitId])).get(traitId)!, uncited: wanted, readySoulIds: await readyEdges(db, gate) };
}

/** The citations of these traits: which shards each cites, and since when. */
export async function getCitations(db: SoulsDb, traitIds: readonly number[]): Promise<Citation[]> {
  return await db.store.citationsOfTraits(traitIds);
}

/** The citations of these shards: which traits cite each, and since when. */
export async function getShardCitations(db: SoulsDb, shardIds: readonly number[]): Promise<Citation[]> {
  return await db.store.citationsOfShards(shardIds);
}

export async function getTrait(db: SoulsDb, traitId: number): Promise<Trait | null> {
  return (await db.store.getTraits([traitId])).get(traitId) ?? null;
}

export async function getTraits(db: SoulsDb, traitIds: readonly number[]): Promise<Map<number, Trait>> {
  return await db.store.getTraits(traitIds);
}

export type ListTraitsOptions = { status?: TraitStatus | readonly TraitStatus[] | null; generation?: number | null };

function statusFilter(status: ListTraitsOptions['status']): readonly TraitStatus[] | undefined {
  if (status === undefined || status === null) return undefined;
  const list = typeof status === 'string' ? [status] : status;
  for (const s of list) if (!traitStatuses.includes(s)) throw new ValidationError('status', `unknown trait status "${s}"`);
  return list;
}

/** Traits of a soul, oldest first; every status unless filtered. */
export async function listTraits(db: SoulsDb, soulId: number, options: ListTraitsOptions = {}): Promise<Trait[]> {
  return listTraitsOfSouls(db, [soulId], options);
}

export async function listTraitsOfSouls(db: SoulsDb, soulIds: readonly number[], options: ListTraitsOptions = {}): Promise<Trait[]> {
  return await db.store.listTraits(soulIds, { statuses: statusFilter(options.status), generation: options.generation ?? undefined });
}

export async function countActiveTraits(db: SoulsDb, soulId: number): Promise<number> {
  return (await db.store.countActiveTraits([soulId])).get(soulId) ?? 0;
}

export function getTraitLimit(db: SoulsDb): number {
  return db.settings.traitLimit;
}

/** Signals (SPEC §8) for any traits, at now, in a constant number of statements. */
export async function getTraitSignals(db: SoulsDb, traitIds: readonly number[]): Promise<Map<number, TraitSignals>> {
  const traits = [...(await db.store.getTraits(traitIds)).values()];
  const soulIds = [...new Set(traits.map((t) => t.soulId))];
  const souls = await db.store.getSouls(soulIds);
  const attunements = await db.store.attunements(soulIds);
  const citations = await db.store.citationsOfTraits(traits.map((t) => t.id));
  const byTrait = Map.groupBy(citations, (c) => c.traitId);
  const now = db.clock.now();
  return new Map(
    traits.map((t) => [
      t.id,
      traitSignals(t, { soul: souls.get(t.soulId)!, citations: byTrait.get(t.id) ?? [], attunedAt: attunements.get(t.soulId) ?? [] }, db.settings, now),
    ]),
  );
}

export type TraitChanges = { add?: readonly AddTraitInput[] | null; revise?: readonly TraitRevision[] | null; revert?: readonly number[] | null };

export type TraitChangesPreview = { before: string; after: string; warnings: TraitHint[] };

/**
 * The rendered block before and after the proposed changes, as if applied now; writes nothing. Warnings (advisory):
 * each new or revised principle close to another active trait (NEAR_DUPLICATE) or possibly contradicting one (POSSIBLE_CONTRADICTION).
 */
export async function previewTraitChanges(db: SoulsDb, soulId: number, changes: TraitChanges, options: { includeProvenance?: boolean } = {}): Promise<TraitChangesPreview> {
  const input = (await renderInputs(db, [soulId])).get(soulId);
  if (!input) throw new NotFoundError('Soul', soulId);
  if (input.soul.deletedAt !== null) throw new InvalidStateError(`soul ${soulId} is dormant: awaken it first`);
  const now = db.clock.now();
  const active = new Map(input.traits.map((t) => [t.id, t]));
  const counts = new Map(input.citationCounts);
  const revisions = changes.revise ?? [];
  for (const [i, revision] of revisions.entries()) {
    const trait = active.get(revision.traitId);
    if (!trait) throw await notActiveTrait(db, `revise[${i}].traitId`, revision.traitId);
    let patch;
    try {
      patch = validRevision(db, revision);
    } catch (error) {
      throw error instanceof ValidationError ? error.within(`revise[${i}]`) : error;
    }
    active.set(trait.id, { ...trait, ...patch, updatedAt: now });
  }
  for (const [i, traitId] of (changes.revert ?? []).entries()) {
    if (!active.delete(traitId)) throw await notActiveTrait(db, `revert[${i}]`, traitId);
  }
  revisions.forEach((revision, i) => {
    if (revision.principle === undefined || revision.principle === null) return;
    const principle = active.get(revision.traitId)?.principle;
    const holder = [...active.values()].find((t) => t.id !== revision.traitId && t.principle === principle);
    if (holder) throw new ValidationError(`revise[${i}].principle`, `active trait ${holder.id} already has this principle`);
  });
  // Texts first, then capacity, then cited shards: the order addTrait itself refuses in.
  const additions = (changes.add ?? []).map((addition, i) => {
    try {
      return validNewTrait(db, addition);
    } catch (error) {
      throw error instanceof ValidationError ? error.within(`add[${i}]`) : error;
    }
  });
  const activeAfter = active.size + additions.length;
  if (activeAfter > db.settings.traitLimit) throw new CapacityError(db.settings.traitLimit, active.size);
  const shards = await db.store.getShards(additions.flatMap((a) => a.citeShardIds));
  additions.forEach((trait, i) => {
    const holder = [...active.values()].find((t) => t.principle === trait.principle);
    if (holder) throw new ValidationError(`add[${i}].principle`, holder.id >= Number.MAX_SAFE_INTEGER - additions.length ? `repeats an earlier addition` : `active trait ${holder.id} already has this principle`);
    const missing = trait.citeShardIds.find((id) => !shards.has(id));
    if (missing !== undefined) throw new NotFoundError('Shard', missing);
    const foreign = trait.citeShardIds.find((id) => !shards.get(id)!.soulIds.includes(soulId));
    if (foreign !== undefined) throw new ValidationError(`add[${i}].citeShardIds`, `shard ${foreign} is not attributed to soul ${soulId}: a trait cites only its own soul's shards`);
    const id = Number.MAX_SAFE_INTEGER - additions.length + i;
    active.set(id, { id, soulId, principle: trait.principle, provenance: trait.provenance, generation: input.soul.level, status: 'active', mergedInto: null, createdAt: now, updatedAt: now });
    counts.set(id, trait.citeShardIds.length);
  });
  const warnings: TraitHint[] = [];
  const sharedThemes = await themeSharing(db, soulId, input.traits.filter((t) => active.has(t.id)).map((t) => t.id));
  for (const [i, revision] of revisions.entries()) {
    if (revision.principle === undefined || revision.principle === null) continue;
    const others = [...active.values()].filter((t) => t.id !== revision.traitId && t.id < Number.MAX_SAFE_INTEGER - additions.length);
    const principle = active.get(revision.traitId)!.principle;
    const hints = principleHints(`revise[${i}]`, principle, others, db.settings);
    warnings.push(...hints, ...(await sharedThemes(`revise[${i}]`, principle, (await db.store.citationsOfTraits([revision.traitId])).map((c) => c.shardId), others, hints)));
  }
  for (const [i, trait] of additions.entries()) {
    const others = [...active.values()].filter((t) => t.id < Number.MAX_SAFE_INTEGER - additions.length);
    const hints = principleHints(`add[${i}]`, trait.principle, others, db.settings);
    warnings.push(...hints, ...(await sharedThemes(`add[${i}]`, trait.principle, trait.citeShardIds, others, hints)));
  }
  const changed = revisions.length + (changes.revert?.length ?? 0) + additions.length > 0;
  const soulAfter = changed ? { ...input.soul, orderedAt: now } : input.soul;
  return {
    before: renderBlock(input.soul, input.traits, input.citationCounts, options),
    after: renderBlock(soulAfter, [...active.values()], counts, options),
    warnings,
  };
}

/**
 * A principle whose cited shards lie in a theme another active trait already draws on (cites a member of, without
 * the theme opposing it) repeats that trait, however differently it is worded: NEAR_DUPLICATE naming the most similar
 * such trait and the theme, unless the principle's own hints already name that trait or it already has a NEAR_DUPLICATE.
 */
async function themeSharing(db: SoulsDb, soulId: number, traitIds: readonly number[]) {
  const citations = await db.store.citationsOfTraits(traitIds);
  const themeOf = await db.store.themesOfShards(soulId, [...new Set(citations.map((c) => c.shardId))]);
  const themes = await db.store.getThemes([...new Set(themeOf.values())]);
  const drawing = new Map<number, Set<number>>();
  for (const c of citations) {
    const themeId = themeOf.get(c.shardId);
    if (themeId === undefined || themes.get(themeId)!.opposes.includes(c.traitId)) continue;
    drawing.set(c.traitId, (drawing.get(c.traitId) ?? new Set()).add(themeId));
  }
  return async (label: string, principle: string, cited: readonly number[], others: readonly Trait[], hints: readonly TraitHint[]): Promise<TraitHint[]> => {
    if (drawing.size === 0 || cited.length === 0 || hints.some((h) => h.kind === 'NEAR_DUPLICATE')) return [];
    const own = new Set((await db.store.themesOfShards(soulId, cited)).values());
    const named = new Set(hints.flatMap((h) => h.traitIds));
    let nearest: { trait: Trait; themeId: number; similarity: number } | null = null;
    for (const t of others) {
      if (named.has(t.id)) continue;
      const themeId = [...(drawing.get(t.id) ?? [])].filter((id) => own.has(id)).sort((a, b) => a - b)[0];
      if (themeId === undefined) continue;
      const similarity = textSimilarity(db.settings.similarity, principle, t.principle);
      if (nearest === null || similarity > nearest.similarity) nearest = { trait: t, themeId, similarity };
    }
    if (nearest === null) return [];
    const theme = themes.get(nearest.themeId)!;
    return [{
      kind: 'NEAR_DUPLICATE',
      message: `${label} cites shards of theme "${theme.name}" (#${theme.id}), which trait ${nearest.trait.id} already draws on (${similarityMeasure(db.settings.similarity)} ${nearest.similarity.toFixed(2)}): revise or cite that trait instead of keeping both`,
      traitIds: [nearest.trait.id],
    }];
  };
}

async function notActiveTrait(db: SoulsDb, field: string, traitId: number): Promise<Error> {
  const trait = (await db.store.getTraits([traitId])).get(traitId);
  if (!trait) return new NotFoundError('Trait', traitId);
  return new ValidationError(field, `trait ${traitId} is not an active trait of this soul`);
}

