import { evidenceSince, unmetNeeds, type Crystallization as CrystallizationRecord, type Soul as SoulRecord, type UnmetNeed as UnmetNeedRecord } from '../src/engine/index.ts';
import { activeTraits, healthOf, pendingOf, renderedOf, verdictOf } from '../resolvers/loaders.ts';
import { builder, readBeyondId } from './builder.ts';
import { EvidenceReport } from './evidence.ts';
import { LevelEvent } from './level.ts';
import { ShardConnection, shardListArgs, shardPage } from './shard.ts';
import { TraitStatus, Trait } from './trait.ts';
import { connectionType, firstArg, firstItems, pageArgs, pageOf, pageText } from './paging.ts';
import { evidencePrice, LIST_PAGE, SCAN_ROW_PRICE, SOUL_CONNECTION_PAGE } from '../src/server/price-list.ts';

export const SoulOrder = builder.enumType('SoulOrder', {
  values: ['READINESS', 'NAME', 'LEVEL', 'UPDATED'] as const,
});

export const CrystallizationCondition = builder.enumType('CrystallizationCondition', {
  values: ['MIN_SHARDS', 'MIN_CLUSTERS', 'SOURCE_DIVERSITY', 'AGE_SPREAD', 'RECENCY', 'DORMANT'] as const,
});

const UnmetNeed = builder.objectRef<UnmetNeedRecord>('UnmetNeed').implement({
  description: 'An unmet crystallization condition and, in words, what would meet it.',
  fields: (t) => ({
    condition: t.field({ type: CrystallizationCondition, resolve: (n) => n.condition }),
    message: t.exposeString('message', { description: 'e.g. "2 more shards (1 of the 3 needed)"' }),
  }),
});

export const Crystallization = builder.objectRef<CrystallizationRecord>('Crystallization').implement({
  description: 'Whether the soul has enough diverse evidence to be refined, and why not.',
  fields: (t) => ({
    ready: t.exposeBoolean('ready'),
    priority: t.exposeFloat('priority', { description: 'pendingCount × distinctSources × ageSpreadDays × 1/max(1, days since attuned)' }),
    pendingCount: t.exposeInt('pendingCount'),
    distinctSources: t.exposeInt('distinctSources'),
    ageSpreadDays: t.exposeFloat('ageSpreadDays'),
    newSinceAttuned: t.exposeBoolean('newSinceAttuned'),
    clusterCount: t.exposeInt('clusterCount', { nullable: true, description: 'null when the cheap pre-check failed and clustering was skipped' }),
    clusteredShardCount: t.exposeInt('clusteredShardCount', {
      nullable: true,
      description: 'how many shards clustering covered: pendingCount, or maxClusteredShards (the most recently dropped) when there are more; null when skipped',
    }),
    unmet: t.field({ type: [CrystallizationCondition], description: 'the conditions not met: at most the six', resolve: (c) => c.unmet }),
    needs: t.field({
      type: [UnmetNeed],
      description: "what would meet each unmet condition (at most the six), in unmet's order, in words (RECENCY: the last attunement's time, and that any shard recorded after it counts, whatever its createdAt)",
      resolve: async (c, _, ctx) => unmetNeeds(c, (await ctx.loaders.soul.load(c.soulId))?.lastAttunedAt ?? null, ctx.db.settings),
    }),
  }),
});

export const SourceCount = builder.objectRef<{ source: string; count: number }>('SourceCount').implement({
  fields: (t) => ({ source: t.exposeString('source'), count: t.exposeInt('count') }),
});

export const TagCount = builder.objectRef<{ tag: string; count: number }>('TagCount').implement({
  fields: (t) => ({ tag: t.exposeString('tag'), count: t.exposeInt('count') }),
});

export const Soul = builder.objectRef<SoulRecord>('Soul');

Soul.implement({
  description: 'One cognitive identity: a narrative essence plus evidence-backed traits.',
  ...readBeyondId,
  fields: (t) => ({
    id: t.exposeID('id', { skipTypeScopes: true }),
    name: t.exposeString('name'),
    slug: t.exposeString('slug', { nullable: true }),
    essence: t.exposeString('essence'),
    description: t.exposeString('description'),
    level: t.exposeInt('level'),
    createdAt: t.field({ type: 'DateTime', resolve: (soul) => soul.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (soul) => soul.updatedAt }),
    deletedAt: t.field({ type: 'DateTime', nullable: true, resolve: (soul) => soul.deletedAt }),
    lastAttunedAt: t.field({ type: 'DateTime', nullable: true, resolve: (soul) => soul.lastAttunedAt }),
    dormant: t.boolean({ resolve: (soul) => soul.deletedAt !== null }),
    rendered: t.string({
      description: 'The identity block for a system prompt; with provenance for people.',
      args: { includeProvenance: t.arg.boolean({ defaultValue: false }) },
      resolve: (soul, args, ctx) => renderedOf(ctx.loaders, soul, args.includeProvenance ?? false),
    }),
    traits: t.field({
      type: [Trait],
      description: `oldest first: the active ones (the default) are at most traitLimit; of every status, ${pageText(LIST_PAGE)}`,
      args: {
        status: t.arg({ type: [TraitStatus], defaultValue: ['active'], description: 'null or [] for every status' }),
        generation: t.arg.int(),
        ...pageArgs(LIST_PAGE),
      },
      resolve: async (soul, args, ctx) => {
        const traits = await ctx.loaders.traits.load({
          soulId: soul.id,
          statuses: args.status && args.status.length > 0 ? args.status : null,
          generation: args.generation ?? null,
        });
        return pageOf(traits, (trait) => trait.id, args, LIST_PAGE);
      },
    }),
    activeTraitCount: t.int({ resolve: async (soul, _, ctx) => (await activeTraits(ctx.loaders, soul.id)).length }),
    traitLimit: t.int({ resolve: (_, __, ctx) => ctx.db.settings.traitLimit }),
    atCapacity: t.boolean({ resolve: async (soul, _, ctx) => (await activeTraits(ctx.loaders, soul.id)).length >= ctx.db.settings.traitLimit }),
    pendingShardCount: t.int({
      description: 'pending, unsealed, unexpired shards attributed to the soul',
      resolve: (soul, _, ctx) => pendingOf(ctx.loaders, soul.id),
    }),
    shardCountsBySource: t.field({
      type: [SourceCount],
      description: `pending shards per source, most first: ${pageText(LIST_PAGE, false)}`,
      args: firstArg(LIST_PAGE),
      resolve: async (soul, args, ctx) => firstItems(await ctx.loaders.shardCountsBySource.load(soul.id), args, LIST_PAGE),
    }),
    shardCountsByTag: t.field({
      type: [TagCount],
      description: `pending shards per tag, most first: ${pageText(LIST_PAGE, false)}`,
      args: firstArg(LIST_PAGE),
      resolve: async (soul, args, ctx) => firstItems(await ctx.loaders.shardCountsByTag.load(soul.id), args, LIST_PAGE),
    }),
    crystallization: t.field({ type: Crystallization, resolve: (soul, _, ctx) => verdictOf(ctx.loaders, soul.id) }),
    health: t.float({
      description: '(1 − stale fraction) × (1 − active/limit) × min(1, pending/threshold), 0..1',
      resolve: (soul, _, ctx) => healthOf(ctx.loaders, soul.id, ctx.db.settings),
    }),
    levelHistory: t.field({
      type: [LevelEvent],
      description: `oldest first: ${pageText(LIST_PAGE)}`,
      args: pageArgs(LIST_PAGE),
      resolve: async (soul, args, ctx) => pageOf(await ctx.loaders.levelHistory.load(soul.id), (event) => event.id, args, LIST_PAGE),
    }),
    shards: t.field({
      type: ShardConnection,
      args: shardListArgs,
      resolve: async (soul, args, ctx) => {
        const page = await shardPage(ctx.db, soul.id, args);
        // The count read every row of the soul that passed the filters: charged once known.
        ctx.cost.charge(SCAN_ROW_PRICE * page.totalCount, `counting the shards of soul ${soul.id}`);
        return page;
      },
    }),
    evidence: t.field({
      type: EvidenceReport,
      description: 'The pre-digested evidence report, optionally scoped to tags and/or a full-text query.',
      args: { tags: t.arg.stringList(), query: t.arg.string(), since: t.arg.string({ description: 'a revision a previous read returned: the markdown and changes then say only what changed since' }) },
      resolve: async (soul, args, ctx) => {
        const report = await ctx.evidence.load({
          soulId: soul.id,
          tags: args.tags ?? null,
          query: args.query ?? null,
          price: (work) => ctx.cost.charge(evidencePrice(work), `the evidence report of soul ${soul.id} (${work.shards} shards)`),
          // The soul's crystallization field and its report's agree, and the verdict is made once.
          crystallization: ctx.loaders.verdictMade(soul.id),
          reads: ctx.loaders.evidenceReads,
        });
        // Without since, the loader's report as it is (its markdown rendered only if asked for); `revision` remembers it.
        return args.since == null ? report : { ...report, read: evidenceSince(ctx.db, report, args.since, soul.name) };
      },
    }),
  }),
});

export const SoulShardCount = builder.objectRef<{ soulId: number; pending: number }>('SoulShardCount').implement({
  fields: (t) => ({
    soul: t.field({ type: Soul, resolve: async (row, _, ctx) => (await ctx.loaders.soul.load(row.soulId))! }),
    pending: t.exposeInt('pending'),
  }),
});

export const ReadySoul = builder.objectRef<{ soulId: number; priority: number }>('ReadySoul').implement({
  fields: (t) => ({
    soul: t.field({ type: Soul, resolve: async (row, _, ctx) => (await ctx.loaders.soul.load(row.soulId))! }),
    priority: t.exposeFloat('priority'),
  }),
});


export const SoulConnection = connectionType('Soul', Soul, SOUL_CONNECTION_PAGE, {
  connection: 'Non-dormant souls in the order asked; pass pageInfo.endCursor as `after` for the next page.',
  totalCount: 'every non-dormant soul',
});
