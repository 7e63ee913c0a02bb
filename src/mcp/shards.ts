// Tools over shards: find them (full text, tag, source, soul) and deposit or reveal them.
import { z } from 'zod';
import { dropShards, getShards, listShards, NotFoundError, revealShards, searchShards, type SearchMatch, type Shard } from '../engine/index.ts';
import { announceReady, annotations, defineTool, type ToolContext } from './context.ts';
import { clip, decodeCursor, encodeCursor, fitText, fitToBudget, ok, toolError, ToolRefusal } from './results.ts';
import { cursor, dateTime, id, idList, ids, iso, limit, paging, readySouls, shardView } from './schemas.ts';

const LISTED_CONTENT_MAX = 500;

function view(shard: Shard, max: number) {
  const content = clip(shard.content, max);
  return {
    id: shard.id,
    content: content.text,
    clipped: content.clipped,
    source: shard.source,
    tags: shard.tags,
    soulIds: shard.soulIds,
    status: shard.status,
    sealed: shard.sealed,
    createdAt: iso(shard.createdAt)!,
  };
}

export const shardSearch = defineTool({
  name: 'shard_search',
  title: 'Find shards',
  description:
    'Find shards. query: full-text, best first, over pending unsealed shards (of soulId); British/American spellings match; ' +
    'match ALL words (default) or ANY. Without query: newest first, by soulId, tags (any), source, status, sealed. ' +
    'ids: those shards. Content cut at 500 characters. Paged.',
  scope: 'read',
  annotations: annotations('read'),
  input: z.strictObject({
    ids: ids('shard', 20).optional().describe('no other filter applies'),
    query: z.string().max(1000).optional(),
    match: z.enum(['ALL', 'ANY']).optional(),
    soulId: id('soul').optional(),
    tags: z.array(z.string().max(64)).max(32).optional(),
    source: z.string().max(200).optional(),
    status: z.enum(['pending', 'faded']).default('pending'),
    sealed: z.boolean().optional().describe('leave out for both'),
    cursor,
    limit: limit(50, 20),
  }),
  output: z.object({ shards: z.array(shardView), ...paging, notFound: idList.optional() }),
  async run(args, ctx) {
    try {
      if (args.ids !== undefined) return ok(await byIds(ctx, args.ids));
      if (args.query !== undefined) {
        const mixed = (['tags', 'source', 'sealed'] as const).find((key) => args[key] !== undefined) ?? (args.status !== 'pending' ? 'status' : undefined);
        if (mixed) throw new ToolRefusal(mixed, 'cannot be combined with query (full-text search covers pending, unsealed shards)', 'Search with query alone, or list with the filters and no query');
        return ok(await search(ctx, args.query, args.match === 'ANY' ? 'any' : 'all', args.soulId, args.cursor, args.limit));
      }
      if (args.match !== undefined) throw new ToolRefusal('match', 'applies only with query', 'Give query with match, or leave match out');
      const { a: after } = decodeCursor(args.cursor);
      const page = await listShards(ctx.db, { soulId: args.soulId, tags: args.tags, source: args.source, status: args.status, sealed: args.sealed, first: args.limit, after });
      const items = page.items.map((s) => view(s, LISTED_CONTENT_MAX));
      const frame = (kept: typeof items) => {
        const more = kept.length < items.length || page.hasNextPage;
        return { shards: kept, totalCount: page.totalCount, nextCursor: more && kept.length > 0 ? encodeCursor({ a: page.cursors[kept.length - 1] }) : null };
      };
      return ok(frame(items.slice(0, fitToBudget(items, frame))));
    } catch (error) {
      return toolError(error);
    }
  },
});

async function byIds(ctx: ToolContext, wanted: readonly number[]) {
  const found = await getShards(ctx.db, wanted);
  const present = [...new Set(wanted)].filter((i) => found.has(i));
  const notFound = [...new Set(wanted)].filter((i) => !found.has(i));
  if (present.length === 0) throw new ToolRefusal('ids', `no shard has any of the ids ${notFound.join(', ')}`, 'Call shard_search with a query or filters to find shard ids');
  // Whole, as far as the budget allows: each shard cut at the same length when they do not all fit.
  const longest = Math.max(...present.map((i) => found.get(i)!.content.length));
  return fitText(
    (room) => ({ shards: present.map((i) => view(found.get(i)!, Math.max(1, room))), totalCount: present.length, nextCursor: null, ...(notFound.length > 0 ? { notFound } : {}) }),
    longest,
  );
}

async function search(ctx: ToolContext, query: string, match: SearchMatch, soulId: number | undefined, cursorValue: string | undefined, pageSize: number) {
  const { o: offset } = decodeCursor(cursorValue);
  // FTS ranks the whole match set: fetch up to the end of this page, plus one to know whether more follow.
  const hits = await searchShards(ctx.db, query, { soulId, match, first: Math.min(500, offset + pageSize + 1) });
  const items = hits.slice(offset, offset + pageSize).map((h) => view(h.shard, LISTED_CONTENT_MAX));
  const frame = (kept: typeof items) => {
    const end = offset + kept.length;
    return { shards: kept, totalCount: hits.length, nextCursor: end < hits.length && end < 500 ? encodeCursor({ o: end }) : null };
  };
  return frame(items.slice(0, fitToBudget(items, frame)));
}

/** The ceiling maxEmbeddingDimension may be set to: the engine applies the configured bound. */
const EMBEDDING_MAX = 16_384;

const shardInput = z.strictObject({
  content: z.string().max(40_000).describe('one idea per shard'),
  source: z.string().max(200).describe('e.g. chat, review, playtest'),
  soulIds: ids('soul', 100).min(1),
  tags: z.array(z.string().max(256)).max(64).optional(),
  sealed: z.boolean().optional().describe('held back until revealed'),
  createdAt: dateTime.optional().describe('when observed (ISO-8601); default now'),
  embedding: z.array(z.number()).max(EMBEDDING_MAX).optional().describe('your vector, for similarity provided'),
});

export const shardObserve = defineTool({
  name: 'shard_observe',
  title: 'Deposit or reveal shards',
  description:
    'Record shards (content, source, soulIds; optional tags, sealed, createdAt, embedding), all or none. ' +
    'Diverse sources make a soul ready. reveal unseals sealed shards. Answers the souls made ready.',
  scope: 'observe',
  annotations: annotations('additive'),
  input: z.strictObject({
    shards: z.array(shardInput).max(100).optional(),
    reveal: ids('shard', 100).optional(),
  }),
  output: z.object({ shardIds: idList, revealed: idList, readySouls }),
  async run(args, ctx) {
    try {
      const drops = args.shards ?? [];
      const reveal = [...new Set(args.reveal ?? [])];
      if (drops.length === 0 && reveal.length === 0) throw new ToolRefusal('shards', 'give at least one shard, or shard ids under reveal', null);
      if (reveal.length > 0) {
        const found = await getShards(ctx.db, reveal);
        const missing = reveal.filter((i) => !found.has(i));
        if (missing.length > 0) throw new ToolRefusal('reveal', `no shard has the ids ${missing.join(', ')}`, 'Call shard_search with sealed true to find sealed shards');
        const unsealed = reveal.filter((i) => !found.get(i)!.sealed);
        if (unsealed.length > 0) throw new ToolRefusal('reveal', `shards ${unsealed.join(', ')} are not sealed: revealing them would change nothing`, 'Call shard_search with sealed true to find sealed shards');
      }
      const ready = new Set<number>();
      let shardIds: number[] = [];
      if (drops.length > 0) {
        const written = await dropShards(ctx.db, drops.map((shard) => ({ ...shard, createdAt: shard.createdAt === undefined ? undefined : Date.parse(shard.createdAt) })), { field: 'shards' });
        shardIds = written.shardIds;
        written.readySoulIds.forEach((i) => ready.add(i));
        const at = ctx.db.clock.now();
        ctx.pubsub.publishAll('shardDropped', drops.map((shard, i) => ({ shardId: shardIds[i], soulIds: [...new Set(shard.soulIds)], at })));
      }
      if (reveal.length > 0) (await revealShards(ctx.db, reveal)).readySoulIds.forEach((i) => ready.add(i));
      return ok({ shardIds, revealed: reveal, readySouls: await announceReady(ctx, [...ready]) });
    } catch (error) {
      // The engine names the soul; the answer names the shard that asked for it.
      const index = error instanceof NotFoundError ? (args.shards ?? []).findIndex((s) => s.soulIds.includes(Number(error.id))) : -1;
      const field = index >= 0 ? `shards[${index}].soulIds` : 'shards';
      return toolError(error, { notFound: { Soul: { field, hint: 'Call soul_read to list the souls and their ids' } } });
    }
  },
});
