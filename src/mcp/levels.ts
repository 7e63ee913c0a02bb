// Level-up tools: apply (or dry-run) a plan that consolidates, promotes and carries every active trait; roll the latest one back.
import { z } from 'zod';
import { levelUp, LevelUpPlanError, listTraits, previewLevelUp, revertLevelUp, type LevelUpPlan, type Soul } from '../engine/index.ts';
import { announceReady, annotations, defineTool, levelChanged, soulChanged, type ToolContext } from './context.ts';
import { recordOutcome } from './refiner.ts';
import { clip, fitText, ok, toolError, ToolRefusal } from './results.ts';
import { soulNamed } from './souls.ts';
import { id, ids, readySouls } from './schemas.ts';

const warning = z.object({ kind: z.string(), message: z.string(), traitIds: z.array(z.number().int()) });

/** The plan error as a model can fix it: every missing trait with its principle, every duplicate and unknown id, every bad text. */
async function planRefusal(ctx: ToolContext, soul: Soul, error: LevelUpPlanError): Promise<ToolRefusal> {
  const active = await listTraits(ctx.db, soul.id, { status: 'active' });
  const principle = new Map(active.map((t) => [t.id, clip(t.principle, 160).text]));
  const parts: string[] = [];
  if (error.missing.length > 0) {
    parts.push(`the plan leaves out active traits ${error.missing.map((i) => `#${i} "${principle.get(i)}"`).join('; ')}: list each of them once, under consolidations[].sourceTraitIds, promotedTraitIds or carriedTraitIds`);
  }
  if (error.duplicated.length > 0) parts.push(`traits listed more than once: ${error.duplicated.join(', ')} (each active trait goes in exactly one place)`);
  if (error.notActive.length > 0) {
    parts.push(`not active traits of soul ${soul.id}: ${error.notActive.join(', ')}; its active traits are ${active.map((t) => t.id).join(', ') || 'none'}`);
  }
  for (const p of error.problems) parts.push(`${p.field}: ${p.message}`);
  return new ToolRefusal('plan', parts.join('. '), 'Fix the plan and call levelup again (dryRun true to check it without writing)');
}

export const levelup = defineTool({
  name: 'levelup',
  title: 'Level up a soul',
  description:
    'Raise a soul one level by a plan that places every active trait exactly once: consolidations (groups of similar traits merged into one new ' +
    'principle with provenance), promotedTraitIds (traits the new essence now states), carriedTraitIds (kept as they are), plus newEssence. ' +
    'A plan must change something (a consolidation, a promotion or a new essence); a merged trait keeps its sources\' citations. ' +
    'Use it when soul_evidence shows the soul at capacity or consolidation/promotion candidates. Always call with dryRun true first: it validates, ' +
    'returns warnings (weak consolidation, premature promotion) and the block before and after, and writes nothing. levelup_revert undoes it.',
  scope: 'refine',
  annotations: annotations('destructive'),
  input: z.object({
    soulId: id('soul'),
    newEssence: z.string().max(70_000).describe('the rewritten essence, stating any promoted traits'),
    consolidations: z
      .array(
        z.object({
          sourceTraitIds: ids('trait', 1000).min(1),
          mergedPrinciple: z.string().max(10_000),
          mergedProvenance: z.string().max(70_000),
        }),
      )
      .max(1000)
      .default([]),
    promotedTraitIds: ids('trait', 1000).default([]),
    carriedTraitIds: ids('trait', 1000).default([]),
    dryRun: z.boolean().default(false),
  }),
  output: z.object({
    soul: z.object({ id: z.number().int(), name: z.string(), level: z.number().int() }),
    applied: z.boolean(),
    levelEventId: z.number().int().optional(),
    mergedTraitIds: z.array(z.number().int()).optional(),
    warnings: z.array(warning),
    preview: z.object({ before: z.string(), after: z.string() }).optional(),
  }),
  async run(args, ctx) {
    try {
      const soul = await soulNamed(ctx, args.soulId);
      const plan: LevelUpPlan = {
        newEssence: args.newEssence,
        consolidations: args.consolidations,
        promotedTraitIds: args.promotedTraitIds,
        carriedTraitIds: args.carriedTraitIds,
      };
      if (args.dryRun) {
        const preview = await previewLevelUp(ctx.db, soul.id, plan);
        if (preview.error) throw await planRefusal(ctx, soul, preview.error);
        const after = preview.after ?? '';
        return ok(
          fitText(
            (room) => ({
              soul: { id: soul.id, name: soul.name, level: soul.level },
              applied: false,
              warnings: preview.warnings.map((w) => ({ ...w })),
              preview: { before: clip(preview.before, room).text, after: clip(after, room).text },
            }),
            Math.max(preview.before.length, after.length),
          ),
        );
      }
      const result = await levelUp(ctx.db, soul.id, plan).catch(async (error: unknown) => {
        throw error instanceof LevelUpPlanError ? await planRefusal(ctx, soul, error) : error;
      });
      soulChanged(ctx, soul.id, 'LEVEL_UP');
      levelChanged(ctx, soul.id, result.event.id, 'LEVEL_UP');
      await recordOutcome(ctx, {
        soul,
        action: 'levelup',
        levelEventId: result.event.id,
        summary:
          `Levelled up ${soul.name} (soul #${soul.id}) to level ${result.soul.level}: ${plan.consolidations.length} consolidation(s), ` +
          `${plan.promotedTraitIds.length} promoted, ${plan.carriedTraitIds.length} carried.`,
      });
      return ok({
        soul: { id: result.soul.id, name: result.soul.name, level: result.soul.level },
        applied: true,
        levelEventId: result.event.id,
        mergedTraitIds: result.event.merged,
        warnings: result.warnings.map((w) => ({ ...w })),
      });
    } catch (error) {
      return toolError(error, { invalidState: 'Awaken the soul with soul_manage (action "awaken") first' });
    }
  },
});

export const levelupRevert = defineTool({
  name: 'levelup_revert',
  title: 'Roll back the latest level-up',
  description:
    'Undo the latest level-up of a soul exactly: essence, traits, generations and citations as before it. Use it when a level-up turned out wrong ' +
    '(soul_read with sections ["levels"] shows the history). Never blocked by the trait limit. Traits added after the level-up stay. Pass ' +
    'levelEventId (from levelup or the history) so a retry is safe: that level-up only, and a second call is refused as already reverted; ' +
    'without it every call reverts one more level-up.',
  scope: 'refine',
  annotations: annotations('destructive'),
  input: z.object({
    soulId: id('soul'),
    levelEventId: id('level event').optional().describe('the level-up to roll back; refused unless it is the latest one not yet reverted'),
  }),
  output: z.object({
    soul: z.object({ id: z.number().int(), name: z.string(), level: z.number().int() }),
    revertedLevelEventId: z.number().int(),
    readySouls,
  }),
  async run(args, ctx) {
    try {
      const soul = await soulNamed(ctx, args.soulId);
      const { soul: after, event, readySoulIds } = await revertLevelUp(ctx.db, soul.id, args.levelEventId ?? null);
      soulChanged(ctx, soul.id, 'LEVEL_UP_REVERTED');
      levelChanged(ctx, soul.id, event.id, 'REVERT');
      await recordOutcome(ctx, { soul, action: 'levelup_revert', levelEventId: event.id, summary: `Rolled back the level-up of ${soul.name} (soul #${soul.id}) to level ${event.level}.` });
      return ok({ soul: { id: after.id, name: after.name, level: after.level }, revertedLevelEventId: event.id, readySouls: await announceReady(ctx, readySoulIds) });
    } catch (error) {
      return toolError(error, {
        notFound: { LevelEvent: 'soul_read with sections ["levels"] shows the level-up ids' },
        invalidState: 'Nothing to roll back (or not that level-up): soul_read with sections ["levels"] shows its history',
      });
    }
  },
});
