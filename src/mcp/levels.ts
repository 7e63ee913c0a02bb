// Level-up tools: apply (or dry-run) a plan that consolidates, promotes and carries every active trait; roll the latest one back.
import { z } from 'zod';
import { levelUp, LevelUpPlanError, listTraits, previewLevelUp, revertLevelUp, type LevelUpPlan, type Soul } from '../engine/index.ts';
import { mayReadSouls } from '../server/auth.ts';
import { announceReady, annotations, defineTool, levelChanged, soulChanged, type ToolContext } from './context.ts';
import { recordOutcome } from './refiner.ts';
import { clip, fitText, ok, toolError, ToolRefusal } from './results.ts';
import { soulNamed } from './souls.ts';
import { id, ids, readySouls } from './schemas.ts';

const warning = z.object({ kind: z.string(), message: z.string(), traitIds: z.array(z.number().int()) });

/** The plan error as a model can fix it: every missing trait with its principle, every duplicate and unknown id, every bad text. */
async function planRefusal(ctx: ToolContext, soul: Soul, error: LevelUpPlanError): Promise<ToolRefusal> {
  // Without read the refusal names ids only, as GraphQL's LevelUpPlanError does.
  const readable = mayReadSouls(ctx.caller);
  const active = readable ? await listTraits(ctx.db, soul.id, { status: 'active' }) : [];
  const principle = new Map(active.map((t) => [t.id, clip(t.principle, 160).text]));
  const parts: string[] = [];
  if (error.missing.length > 0) {
    parts.push(`the plan leaves out active traits ${error.missing.map((i) => (readable ? `#${i} "${principle.get(i)}"` : `#${i}`)).join('; ')}: list each of them once, under consolidations[].sourceTraitIds, promotedTraitIds or carriedTraitIds`);
  }
  if (error.duplicated.length > 0) parts.push(`traits listed more than once: ${error.duplicated.join(', ')} (each active trait goes in exactly one place)`);
  if (error.notActive.length > 0) {
    parts.push(`not active traits of soul ${soul.id}: ${error.notActive.join(', ')}${readable ? `; its active traits are ${active.map((t) => t.id).join(', ') || 'none'}` : ''}`);
  }
  for (const p of error.problems) parts.push(`${p.field}: ${p.message}`);
  return new ToolRefusal('plan', parts.join('. '), `Fix the plan and call levelup again${readable ? ' (dryRun true to check it without writing)' : ''}`);
}

export const levelup = defineTool({
  name: 'levelup',
  title: 'Level up a soul',
  description:
    'Raise a soul one level by a plan placing every active trait once: consolidations (merged into one principle with provenance, ' +
    'keeping citations), promotedTraitIds (stated by newEssence), carriedTraitIds; it must change something. ' +
    'dryRun first: validates, warns, shows the block before and after. levelup_revert undoes it.',
  scope: 'refine',
  annotations: annotations('destructive'),
  input: z.strictObject({
    soulId: id('soul'),
    newEssence: z.string().max(70_000),
    consolidations: z
      .array(
        z.strictObject({
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
    'Undo the latest level-up exactly (essence, traits, citations); later traits stay. ' +
    'Pass levelEventId (levelup answers it) for a safe retry: without it each call reverts one more.',
  scope: 'refine',
  annotations: annotations('destructive'),
  input: z.strictObject({
    soulId: id('soul'),
    levelEventId: id('level event').optional().describe('must be the latest not yet reverted'),
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
        notFound: { LevelEvent: { field: 'levelEventId', hint: 'soul_read with sections ["levels"] shows the level-up ids' } },
        invalidState: 'Nothing to roll back (or not that level-up): soul_read with sections ["levels"] shows its history',
      });
    }
  },
});
