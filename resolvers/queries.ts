import {
  LevelUpPlanError,
  crystallizationReadiness,
  getSoulByName,
  listDormantSouls,
  listSouls,
  sortSouls,
  previewLevelUp,
  previewTraitChanges,
  searchShards,
  shardCountsByTag,
  shardCountsPerSoul,
} from '../src/engine/index.ts';
import { builder } from '../schema/builder.ts';
import { CallerType } from '../schema/caller.ts';
import { lookupId, rowId, rowIds } from '../schema/ids.ts';
import { AddTraitInput, LevelUpPlanInput, TraitRevisionInput } from '../schema/inputs.ts';
import { LevelUpPreview, RenderPreview } from '../schema/level.ts';
import { Settings } from '../schema/settings.ts';
import { Shard, ShardConnection, ShardHit, ShardSearchMatch, shardListArgs, shardPage } from '../schema/shard.ts';
import { ReadySoul, Soul, SoulOrder, SoulShardCount, TagCount } from '../schema/soul.ts';
import { Trait } from '../schema/trait.ts';
import { loadPresent } from './loaders.ts';
import { levelUpPlan, underPlan } from './plans.ts';

builder.queryType({
  authScopes: { read: true },
  fields: (t) => ({
    caller: t.field({
      type: CallerType,
      description: 'who this request runs as and what it may do (any valid token may ask)',
      skipTypeScopes: true,
      resolve: (_, __, ctx) => ctx.caller,
    }),
    soul: t.field({
      type: Soul,
      nullable: true,
      args: { id: t.arg.id({ required: true }) },
      resolve: (_, args, ctx) => {
        const id = lookupId(args.id);
        return id === null ? null : ctx.loaders.soul.load(id);
      },
    }),
    soulByName: t.field({
      type: Soul,
      nullable: true,
      description: 'the awake soul with this name, else the most recently retired one',
      args: { name: t.arg.string({ required: true }) },
      resolve: (_, args, ctx) => getSoulByName(ctx.db, args.name),
    }),
    souls: t.field({
      type: [Soul],
      description: 'non-dormant souls',
      args: { orderBy: t.arg({ type: SoulOrder, defaultValue: 'READINESS' }) },
      resolve: async (_, args, ctx) => {
        const orderBy = args.orderBy ?? 'READINESS';
        const souls = await listSouls(ctx.db);
        for (const soul of souls) ctx.loaders.soul.prime(soul.id, soul);
        // The verdicts come through the loader, so the souls' crystallization fields reuse them.
        const verdicts = orderBy === 'READINESS' ? await loadPresent(ctx.loaders.crystallization, souls.map((s) => s.id)) : [];
        return sortSouls(souls, orderBy, new Map(verdicts.map((v) => [v.soulId, v])));
      },
    }),
    dormantSouls: t.field({ type: [Soul], resolve: (_, __, ctx) => listDormantSouls(ctx.db) }),
    trait: t.field({
      type: Trait,
      nullable: true,
      args: { id: t.arg.id({ required: true }) },
      resolve: (_, args, ctx) => {
        const id = lookupId(args.id);
        return id === null ? null : ctx.loaders.trait.load(id);
      },
    }),
    shard: t.field({
      type: Shard,
      nullable: true,
      args: { id: t.arg.id({ required: true }) },
      resolve: (_, args, ctx) => {
        const id = lookupId(args.id);
        return id === null ? null : ctx.loaders.shard.load(id);
      },
    }),
    shards: t.field({
      type: ShardConnection,
      args: { soulId: t.arg.id(), ...shardListArgs },
      resolve: (_, args, ctx) => shardPage(ctx.db, args.soulId === null || args.soulId === undefined ? null : rowId('soulId', args.soulId), args),
    }),
    searchShards: t.field({
      type: [ShardHit],
      description:
        'full-text search (bm25) over pending, unsealed, unexpired shards; any string is safe. Words are stemmed, and each also ' +
        'matches its other British/American spelling (apologise/apologize, colour/color); match: ALL (the default) needs every word, ANY one',
      args: {
        query: t.arg.string({ required: true }),
        soulId: t.arg.id(),
        first: t.arg.int({ defaultValue: 20 }),
        match: t.arg({ type: ShardSearchMatch, defaultValue: 'all', description: 'ALL (the default): shards holding every word; ANY: at least one' }),
      },
      resolve: (_, args, ctx) =>
        searchShards(ctx.db, args.query, {
          soulId: args.soulId === null || args.soulId === undefined ? null : rowId('soulId', args.soulId),
          first: args.first ?? 20,
          match: args.match ?? 'all',
        }),
    }),
    crystallizationReadiness: t.field({
      type: [ReadySoul],
      description: 'souls ready for refinement, most urgent first',
      resolve: (_, __, ctx) => crystallizationReadiness(ctx.db),
    }),
    shardCountsPerSoul: t.field({ type: [SoulShardCount], resolve: (_, __, ctx) => shardCountsPerSoul(ctx.db) }),
    shardCountsByTag: t.field({
      type: [TagCount],
      args: { soulId: t.arg.id() },
      resolve: (_, args, ctx) => shardCountsByTag(ctx.db, args.soulId === null || args.soulId === undefined ? null : rowId('soulId', args.soulId)),
    }),
    settings: t.field({ type: Settings, resolve: (_, __, ctx) => ({ ...ctx.db.settings, clusteringThresholdSource: ctx.db.clusteringThresholdSource }) }),
    previewTraitChanges: t.field({
      type: RenderPreview,
      description: 'before/after of the rendered block for proposed trait changes; writes nothing',
      args: {
        soulId: t.arg.id({ required: true }),
        add: t.arg({ type: [AddTraitInput] }),
        revise: t.arg({ type: [TraitRevisionInput] }),
        revert: t.arg.idList(),
        includeProvenance: t.arg.boolean({ defaultValue: false }),
      },
      resolve: (_, args, ctx) =>
        previewTraitChanges(
          ctx.db,
          rowId('soulId', args.soulId),
          {
            add: (args.add ?? []).map((a, i) => ({ ...a, citeShardIds: rowIds(`add[${i}].citeShardIds`, a.citeShardIds ?? []) })),
            revise: (args.revise ?? []).map((r, i) => ({ ...r, traitId: rowId(`revise[${i}].traitId`, r.traitId) })),
            revert: rowIds('revert', args.revert ?? []),
          },
          { includeProvenance: args.includeProvenance ?? false },
        ),
    }),
    previewLevelUp: t.field({
      type: LevelUpPreview,
      description: 'validation, warnings and before/after of a level-up plan; writes nothing',
      args: { soulId: t.arg.id({ required: true }), plan: t.arg({ type: LevelUpPlanInput, required: true }), includeProvenance: t.arg.boolean({ defaultValue: false }) },
      resolve: async (_, args, ctx) => {
        const soulId = rowId('soulId', args.soulId);
        const plan = levelUpPlan(args.plan);
        const options = { includeProvenance: args.includeProvenance ?? false };
        if (!(plan instanceof LevelUpPlanError)) {
          const preview = await previewLevelUp(ctx.db, soulId, plan, options);
          return preview.error === null ? preview : { ...preview, error: underPlan(preview.error) };
        }
        const { before } = await previewTraitChanges(ctx.db, soulId, {}, options);
        return { valid: false, error: plan, warnings: [], before, after: null };
      },
    }),
  }),
});
