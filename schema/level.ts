import type { LevelEvent as LevelEventRecord, LevelUpPlanError, LevelUpWarning as LevelUpWarningRecord } from '../src/engine/index.ts';
import { LevelUpPlanError as LevelUpPlanErrorClass } from '../src/engine/index.ts';
import { loadPresent } from '../resolvers/loaders.ts';
import { builder, readBeyondId } from './builder.ts';
import { errorAsData } from './errors.ts';
import { Soul } from './soul.ts';
import { Trait } from './trait.ts';

/** A level-up names each active trait once. */
const PLAN_BOUND = 'At most the trait limit in force at that level-up.';

export const LevelEvent = builder.objectRef<LevelEventRecord>('LevelEvent').implement({
  description: 'One level-up with its before/after snapshot; a reverted one keeps its row with revertedAt.',
  ...readBeyondId,
  fields: (t) => ({
    id: t.exposeID('id', { skipTypeScopes: true }),
    soul: t.field({ type: Soul, resolve: async (event, _, ctx) => (await ctx.loaders.soul.load(event.soulId))! }),
    level: t.exposeInt('level'),
    essenceBefore: t.exposeString('essenceBefore'),
    essenceAfter: t.exposeString('essenceAfter'),
    consolidated: t.field({ type: [Trait], description: PLAN_BOUND, resolve: (event, _, ctx) => loadPresent(ctx.loaders.trait, event.consolidated) }),
    promoted: t.field({ type: [Trait], description: PLAN_BOUND, resolve: (event, _, ctx) => loadPresent(ctx.loaders.trait, event.promoted) }),
    carried: t.field({ type: [Trait], description: PLAN_BOUND, resolve: (event, _, ctx) => loadPresent(ctx.loaders.trait, event.carried.map((c) => c.id)) }),
    merged: t.field({
      type: [Trait],
      description: `traits created by consolidation; empty once reverted (they are deleted). ${PLAN_BOUND}`,
      resolve: (event, _, ctx) => (event.revertedAt === null ? loadPresent(ctx.loaders.trait, event.merged) : []),
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (event) => event.createdAt }),
    revertedAt: t.field({ type: 'DateTime', nullable: true, resolve: (event) => event.revertedAt }),
  }),
});

export const LevelUpWarning = builder.objectRef<LevelUpWarningRecord>('LevelUpWarning').implement({
  description:
    'Advisory, never blocking: WEAK_CONSOLIDATION, PREMATURE_PROMOTION, NEAR_DUPLICATE (a principle close to an active trait, named with its score) or POSSIBLE_CONTRADICTION (same topic as an active trait, flipped polarity).',
  fields: (t) => ({
    kind: t.exposeString('kind'),
    message: t.exposeString('message'),
    traitIds: t.idList({ description: 'the traits it is about: at most traitLimit', resolve: (w) => w.traitIds }),
  }),
});

export const RenderPreview = builder.objectRef<{ before: string; after: string; warnings?: LevelUpWarningRecord[] }>('RenderPreview').implement({
  fields: (t) => ({
    before: t.exposeString('before'),
    after: t.exposeString('after'),
    warnings: t.field({ type: [LevelUpWarning], description: 'advisory: NEAR_DUPLICATE and POSSIBLE_CONTRADICTION for new or revised principles, at most a few per change', resolve: (p) => p.warnings ?? [] }),
  }),
});

export const LevelUpPreview = builder
  .objectRef<{ valid: boolean; error: LevelUpPlanError | null; warnings: LevelUpWarningRecord[]; before: string; after: string | null }>('LevelUpPreview')
  .implement({
    fields: (t) => ({
      valid: t.exposeBoolean('valid'),
      error: t.field({ type: LevelUpPlanErrorClass, nullable: true, resolve: (p) => (p.error === null ? null : errorAsData(p.error)) }),
      warnings: t.field({ type: [LevelUpWarning], description: 'advisory: at most a few per trait the plan names', resolve: (p) => p.warnings }),
      before: t.exposeString('before'),
      after: t.exposeString('after', { nullable: true, description: 'the rendered block after the plan, or null when the plan is invalid' }),
    }),
  });
