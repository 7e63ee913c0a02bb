import {
  LevelUpPlanError,
  crystallizationReadiness,
  getSoulByName,
  listDormantSouls,
  listSouls,
  pageSouls,
  sortSouls,
  type CrystallizationWork,
  type Soul as SoulRecord,
  type SoulOrder as SoulOrderName,
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
import { ReadySoul, Soul, SoulConnection, SoulOrder, SoulShardCount, TagCount } from '../schema/soul.ts';
import { connectionOf, firstArg, firstItems, pageText } from '../schema/paging.ts';
import { LIST_PAGE, ROSTER_PAGE, SCAN_ROW_PRICE, SEARCH_PAGE, SOUL_CONNECTION_PAGE, verdictPrice } from '../src/server/price-list.ts';
import type { Context } from '../src/server/context.ts';
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
      description: `non-dormant souls: ${pageText(ROSTER_PAGE, false)}; soulsConnection pages through more`,
      args: { orderBy: t.arg({ type: SoulOrder, defaultValue: 'READINESS' }), ...firstArg(ROSTER_PAGE) },
      resolve: async (_, args, ctx) => {
        const orderBy = args.orderBy ?? 'READINESS';
        const souls = await rosterOf(ctx);
        const verdicts = await verdictsFor(ctx, souls, orderBy);
        return firstItems(sortSouls(souls, orderBy, verdicts), args, ROSTER_PAGE);
      },
    }),
    soulsConnection: t.field({
      type: SoulConnection,
      description:
        'non-dormant souls, a page at a time: pass pageInfo.endCursor as `after` for the next. A cursor is the last soul’s place in the order ' +
        '(READINESS: ready, priority, name, id, as judged when its page was read): the next page starts after that place as the souls stand then, ' +
        'so no soul is repeated or skipped unless its readiness changed between pages',
      args: {
        first: t.arg.int({ defaultValue: SOUL_CONNECTION_PAGE.default, description: `at most ${SOUL_CONNECTION_PAGE.max}` }),
        after: t.arg.string(),
        orderBy: t.arg({ type: SoulOrder, defaultValue: 'READINESS' }),
      },
      resolve: async (_, args, ctx) => {
        const orderBy = args.orderBy ?? 'READINESS';
        const souls = await rosterOf(ctx);
        const page = pageSouls(souls, orderBy, { first: args.first ?? SOUL_CONNECTION_PAGE.default, after: args.after }, await verdictsFor(ctx, souls, orderBy));
        return connectionOf(page, args.after);
      },
    }),
    dormantSouls: t.field({
      type: [Soul],
      description: `retired souls: ${pageText(ROSTER_PAGE, false)}`,
      args: firstArg(ROSTER_PAGE),
      resolve: async (_, args, ctx) => firstItems(await listDormantSouls(ctx.db), args, ROSTER_PAGE),
    }),
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
      resolve: async (_, args, ctx) => {
        const soulId = args.soulId === null || args.soulId === undefined ? null : rowId('soulId', args.soulId);
        const page = await shardPage(ctx.db, soulId, args);
        // Without a soul the count was priced before running by the shards there are; a soul's, once known.
        if (soulId !== null) ctx.cost.charge(SCAN_ROW_PRICE * page.totalCount, `counting the shards of soul ${soulId}`);
        return page;
      },
    }),
    searchShards: t.field({
      type: [ShardHit],
      description:
        'full-text search (bm25) over pending, unsealed, unexpired shards; any string is safe. Words are stemmed, and each also ' +
        'matches its other British/American spelling (apologise/apologize, colour/color); match: ALL (the default) needs every word, ANY one. ' +
        `Best first, ${pageText(SEARCH_PAGE, false)}; priced by the rows it may read: every shard, per word`,
      args: {
        query: t.arg.string({ required: true }),
        soulId: t.arg.id(),
        first: t.arg.int({ defaultValue: SEARCH_PAGE.default, description: `at most ${SEARCH_PAGE.max}` }),
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
      description: `souls ready for refinement, most urgent first: ${pageText(ROSTER_PAGE, false)}`,
      args: firstArg(ROSTER_PAGE),
      resolve: async (_, args, ctx) => {
        const price = (work: CrystallizationWork) => ctx.cost.charge(verdictPrice(work), `${work.souls} crystallization verdict(s)`);
        return firstItems(await crystallizationReadiness(ctx.db, { price }), args, ROSTER_PAGE);
      },
    }),
    shardCountsPerSoul: t.field({
      type: [SoulShardCount],
      description: `pending shards per awake soul, most first: ${pageText(ROSTER_PAGE, false)}`,
      args: firstArg(ROSTER_PAGE),
      resolve: async (_, args, ctx) => firstItems(await shardCountsPerSoul(ctx.db), args, ROSTER_PAGE),
    }),
    shardCountsByTag: t.field({
      type: [TagCount],
      description: `pending shards per tag, most first: ${pageText(LIST_PAGE, false)}`,
      args: { soulId: t.arg.id(), ...firstArg(LIST_PAGE) },
      resolve: async (_, args, ctx) => {
        const soulId = args.soulId === null || args.soulId === undefined ? null : rowId('soulId', args.soulId);
        const counts = await shardCountsByTag(ctx.db, soulId);
        if (soulId !== null) ctx.cost.charge(SCAN_ROW_PRICE * counts.reduce((sum, c) => sum + c.count, 0), `counting the tags of soul ${soulId}`);
        return firstItems(counts, args, LIST_PAGE);
      },
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

/** Every awake soul, primed in the request's loader. */
async function rosterOf(ctx: Context): Promise<SoulRecord[]> {
  const souls = await listSouls(ctx.db);
  for (const soul of souls) ctx.loaders.soul.prime(soul.id, soul);
  return souls;
}

/** For the READINESS order, every soul's verdict, through the loader so that the souls' crystallization fields reuse them. */
async function verdictsFor(ctx: Context, souls: readonly SoulRecord[], orderBy: SoulOrderName) {
  if (orderBy !== 'READINESS') return undefined;
  const verdicts = await ctx.loaders.crystallization.loadMany(souls.map((s) => s.id));
  // A refusal (the verdicts over the cost limit) is the field's answer, not a soul to leave out.
  const refused = verdicts.find((v) => v instanceof Error);
  if (refused) throw refused;
  return new Map(verdicts.flatMap((v) => (v === null || v instanceof Error ? [] : [[v.soulId, v] as const])));
}
