import { listShards, type Page, type Shard as ShardRecord, type SoulsDb } from '../src/engine/index.ts';
import { loadPresent } from '../resolvers/loaders.ts';
import { builder, readBeyondId } from './builder.ts';
import { Soul } from './soul.ts';
import { Trait } from './trait.ts';
import { connectionOf, connectionType, pageArgs, pageIds, pageText, type Connection } from './paging.ts';
import { LIST_PAGE, SHARD_PAGE } from '../src/server/price-list.ts';

export const ShardStatus = builder.enumType('ShardStatus', {
  values: { PENDING: { value: 'pending' }, FADED: { value: 'faded' } } as const,
});

export const Shard = builder.objectRef<ShardRecord>('Shard');

Shard.implement({
  description: 'One behavioural observation, attributed to one or more souls.',
  ...readBeyondId,
  fields: (t) => ({
    id: t.exposeID('id', { skipTypeScopes: true }),
    content: t.exposeString('content'),
    source: t.exposeString('source', { description: 'the evidence channel it came through' }),
    status: t.field({ type: ShardStatus, resolve: (shard) => shard.status }),
    sealed: t.exposeBoolean('sealed', { description: 'hidden from crystallization and reports until revealed' }),
    tags: t.exposeStringList('tags', { description: 'at most maxTagsPerShard (a setting, default 32)' }),
    createdAt: t.field({ type: 'DateTime', description: 'when it was observed: the write, or the earlier time a historical import gave', resolve: (shard) => shard.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (shard) => shard.updatedAt }),
    recordedAt: t.field({
      type: 'DateTime',
      description: 'when it was written to Souls, whatever its createdAt: a shard recorded after the last attunement is new evidence (crystallization recency)',
      resolve: (shard) => shard.recordedAt,
    }),
    revealedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'when a sealed shard was revealed; it counts as new evidence from then (crystallization recency)',
      resolve: (shard) => shard.revealedAt,
    }),
    souls: t.field({
      type: [Soul],
      description: `the souls it is attributed to, ascending id: ${pageText(LIST_PAGE)}`,
      args: pageArgs(LIST_PAGE),
      resolve: (shard, args, ctx) => loadPresent(ctx.loaders.soul, pageIds(shard.soulIds, args, LIST_PAGE)),
    }),
    citedBy: t.field({
      type: [Trait],
      description: `traits that cite this shard as evidence, in citation order: ${pageText(LIST_PAGE)}`,
      args: pageArgs(LIST_PAGE),
      resolve: async (shard, args, ctx) => {
        const citations = await ctx.loaders.citationsByShard.load(shard.id);
        return loadPresent(ctx.loaders.trait, pageIds(citations.map((c) => c.traitId), args, LIST_PAGE));
      },
    }),
  }),
});

export const ShardConnection = connectionType('Shard', Shard, SHARD_PAGE, { connection: 'Shards newest first; pass pageInfo.endCursor as `after` for the next page.' });

export const ShardSearchMatch = builder.enumType('ShardSearchMatch', {
  description: 'How the words of a shard search combine.',
  values: {
    ALL: { value: 'all', description: 'shards holding every word (the default)' },
    ANY: { value: 'any', description: 'shards holding at least one of the words' },
  } as const,
});

export const ShardHit = builder.objectRef<{ shard: ShardRecord; score: number }>('ShardHit').implement({
  fields: (t) => ({
    shard: t.field({ type: Shard, resolve: (hit) => hit.shard }),
    score: t.exposeFloat('score', { description: 'relevance (negated bm25): higher is better' }),
  }),
});

export const DropShardInput = builder.inputType('DropShardInput', {
  fields: (t) => ({
    content: t.string({ required: true }),
    source: t.string({ required: true, description: 'the evidence channel, e.g. delegation, manual_review, reader_feedback' }),
    soulIds: t.idList({ required: true }),
    tags: t.stringList(),
    sealed: t.boolean({ defaultValue: false }),
    createdAt: t.field({ type: 'DateTime', description: 'historical import; may not be in the future' }),
    embedding: t.floatList({
      description:
        'your embedding of the content, for similarity PROVIDED: finite numbers, not all zeros, at most maxEmbeddingDimension (4096) of them; the first one stored fixes the dimension of this database. Stored L2-normalized.',
    }),
  }),
});

/** The filters and paging shared by Query.shards and Soul.shards. */
export const shardListArgs = builder.args((t) => ({
  source: t.string(),
  tags: t.stringList({ description: 'shards carrying any of these tags' }),
  status: t.field({ type: ShardStatus, defaultValue: 'pending' }),
  sealed: t.boolean({ description: 'true: only sealed, false: only unsealed, null: both' }),
  includeExpired: t.boolean({ defaultValue: false, description: 'also pending shards past shardExpiryDays' }),
  first: t.int({ defaultValue: 50 }),
  after: t.string(),
}));

type ShardListArgs = {
  source?: string | null;
  tags?: readonly string[] | null;
  status?: 'pending' | 'faded' | null;
  sealed?: boolean | null;
  includeExpired?: boolean | null;
  first?: number | null;
  after?: string | null;
};

export async function shardPage(db: SoulsDb, soulId: number | null, args: ShardListArgs): Promise<Connection<ShardRecord>> {
  const page = await listShards(db, {
    soulId,
    source: args.source,
    tags: args.tags,
    status: args.status,
    sealed: args.sealed,
    includeExpired: args.includeExpired ?? false,
    first: args.first ?? 50,
    after: args.after,
  });
  return connectionOf(page, args.after);
}
