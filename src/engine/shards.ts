import { clusteredBy, readyEdges } from './crystallization.ts';
import { ValidationError } from './errors.ts';
import type { Page, Shard, ShardStatus, SourceCount, TagCount } from './model.ts';
import { shardStatuses } from './model.ts';
import { decodeEmbedding, encodeEmbedding } from './provided.ts';
import { cleanText, exceedsCodePoints, exceedsUtf8Bytes, normalizeContent, normalizeTag, normalizeTags, requireIds } from './normalize.ts';
import { expiryCutoff } from './settings.ts';
import type { SoulsDb } from './souls-db.ts';
import { yieldToEventLoop } from './slices.ts';
import { spellings } from './spelling.ts';
import type { NewShard, ShardWrite, TextQuery } from '../store/store.ts';

export type ShardOptions = {
  tags?: readonly string[] | null;
  sealed?: boolean | null;
  createdAt?: number | null;
  /** The caller's embedding of the content (similarity `provided`): finite, not all zeros, the database's dimension. */
  embedding?: readonly number[] | null;
};
export type ShardInput = ShardOptions & { content: string; source: string; soulIds: readonly number[] };

/**
 * The embedding dimension a write must match: the database's, or the first of the batch while it has none.
 * Read from the store (before validating) only when a shard carries a vector (undefined: not read), so plain writes skip it.
 */
type Dimension = { value: number | null | undefined };

const carriesVector = (input: unknown) => typeof input === 'object' && input !== null && (input as ShardInput).embedding != null;

async function dimensionFor(db: SoulsDb, inputs: readonly unknown[]): Promise<Dimension> {
  return { value: inputs.some(carriesVector) ? await db.store.embeddingDimension() : undefined };
}

/** Validates and normalizes one shard; errors name the field relative to the shard. */
function validShard(db: SoulsDb, input: ShardInput, now: number, dimension: Dimension): NewShard {
  const { settings } = db;
  if (typeof input !== 'object' || input === null) throw new ValidationError('content', 'a shard must be an object with content, source and soulIds');
  if (typeof input.content !== 'string') throw new ValidationError('content', 'must be a string');
  if (exceedsUtf8Bytes(input.content, settings.maxShardContentBytes * 4)) throw new ValidationError('content', `must be at most ${settings.maxShardContentBytes} bytes`);
  const content = normalizeContent(input.content);
  if (content === '') throw new ValidationError('content', 'must not be empty once whitespace and punctuation noise are removed');
  if (exceedsUtf8Bytes(content, settings.maxShardContentBytes)) throw new ValidationError('content', `must be at most ${settings.maxShardContentBytes} bytes`);
  if (typeof input.source !== 'string') throw new ValidationError('source', 'must be a string');
  const source = cleanText(input.source).trim();
  if (source === '') throw new ValidationError('source', 'must not be empty');
  if (exceedsCodePoints(source, settings.maxSourceLength)) throw new ValidationError('source', `must be at most ${settings.maxSourceLength} characters`);
  const soulIds = [...new Set(requireIds('soulIds', input.soulIds))];
  if (soulIds.length === 0) throw new ValidationError('soulIds', 'must name at least one soul');
  if (input.tags !== undefined && input.tags !== null && !Array.isArray(input.tags)) throw new ValidationError('tags', 'must be a list of strings');
  (input.tags ?? []).forEach((tag, i) => {
    if (typeof tag !== 'string') throw new ValidationError(`tags[${i}]`, 'must be a string');
    // Bounded as stored: lowercasing can lengthen a tag ("İ" becomes two characters).
    const stored = normalizeTag(tag);
    if (exceedsCodePoints(stored, settings.maxTagLength)) throw new ValidationError(`tags[${i}]`, `must be at most ${settings.maxTagLength} characters`);
  });
  const tags = normalizeTags(input.tags ?? []);
  if (tags.length > settings.maxTagsPerShard) throw new ValidationError('tags', `at most ${settings.maxTagsPerShard} tags per shard`);
  const createdAt = input.createdAt ?? now;
  if (!Number.isSafeInteger(createdAt) || createdAt < 0) throw new ValidationError('createdAt', 'must be a time in epoch milliseconds');
  if (createdAt > now) throw new ValidationError('createdAt', 'may not lie in the future');
  if (settings.similarity === 'semantic' && input.embedding !== undefined && input.embedding !== null) {
    // Another model's vector compared with the encoder's would mean nothing.
    throw new ValidationError('embedding', 'similarity semantic computes every shard\'s vector itself: send none (a vector of your own model needs similarity provided)');
  }
  const embedding = input.embedding === undefined || input.embedding === null ? null : encodeEmbedding('embedding', input.embedding, settings.maxEmbeddingDimension);
  if (embedding !== null) {
    const length = embedding.byteLength / 4;
    if (dimension.value != null && length !== dimension.value) {
      throw new ValidationError('embedding', `must have ${dimension.value} numbers, the dimension of this database's embeddings, got ${length}`);
    }
    dimension.value = length;
  }
  return { content, source, soulIds, tags, sealed: input.sealed === true, createdAt, embedding };
}

/** Shards validated between two hand-backs of the event loop. */
const VALIDATION_CHUNK = 500;

export type DropShardResult = { shardId: number; shard: Shard; readySoulIds: number[] };
export type DropShardsResult = { shardIds: number[]; readySoulIds: number[] };
export type WrittenShardsResult = DropShardsResult & { shards: Shard[] };

/** UTF-8 byte order, which both stores read tags in (SQLite's BINARY collation, PostgreSQL's "C"). */
const byStoredBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * The shard as the store now holds it, from what the write bound, so that a write's answer needs no read back: text
 * as the database keeps it (a lone surrogate becomes U+FFFD), tags and souls deduplicated and in the order a read gives.
 */
function writtenShard(id: number, shard: NewShard, now: number): Shard {
  const tags = [...new Set(shard.tags.map((tag) => tag.toWellFormed()))];
  return {
    id,
    content: shard.content.toWellFormed(),
    source: shard.source.toWellFormed(),
    status: 'pending',
    sealed: shard.sealed,
    tags: tags.length > 1 ? tags.sort(byStoredBytes) : tags,
    soulIds: [...new Set(shard.soulIds)].sort((a, b) => a - b),
    createdAt: shard.createdAt,
    updatedAt: now,
    recordedAt: now,
    revealedAt: null,
  };
}

/** Deposits one observation; returns its id and the souls this write made ready for refinement. */
export async function dropShard(db: SoulsDb, content: string, source: string, soulIds: readonly number[], options: ShardOptions = {}): Promise<DropShardResult> {
  const now = db.clock.now();
  const input = { ...options, content, source, soulIds };
  const shard = validShard(db, input, now, options.embedding == null ? { value: undefined } : await dimensionFor(db, [input]));
  const write = await db.store.insertShards([shard], now, expiryCutoff(db, now), clusteredBy(db));
  if (shard.embedding === null) db.semantic?.enqueue(write.shardIds);
  const shardId = write.shardIds[0];
  return { shardId, shard: writtenShard(shardId, shard, now), readySoulIds: await readyEdges(db, write.gate, new Map([[shardId, shard.content]])) };
}

/**
 * Deposits a batch in one transaction: the whole batch is validated first
 * (fail fast, nothing written; errors name the item, `shards[2].content`, or
 * under `options.field`), then one crystallization pass.
 */
export async function dropShards(db: SoulsDb, inputs: readonly ShardInput[], options: { field?: string } = {}): Promise<WrittenShardsResult> {
  const field = options.field ?? 'shards';
  if (!Array.isArray(inputs)) throw new ValidationError(field, 'must be a list');
  if (inputs.length > db.settings.maxBatchSize) throw new ValidationError(field, `at most ${db.settings.maxBatchSize} shards per batch`);
  const now = db.clock.now();
  const shards: NewShard[] = [];
  const dimension = await dimensionFor(db, inputs);
  for (const [i, input] of inputs.entries()) {
    // A full batch is megabytes of text to normalize: other requests are served between chunks.
    if (i > 0 && i % VALIDATION_CHUNK === 0) await yieldToEventLoop();
    try {
      shards.push(validShard(db, input, now, dimension));
    } catch (error) {
      throw error instanceof ValidationError ? error.within(`${field}[${i}]`) : error;
    }
  }
  if (shards.length === 0) return { shardIds: [], shards: [], readySoulIds: [] };
  let write: ShardWrite;
  try {
    write = await db.store.insertShards(shards, now, expiryCutoff(db, now), clusteredBy(db));
  } catch (error) {
    // The store refuses a dimension another writer fixed meanwhile: name the batch's first vector.
    if (!(error instanceof ValidationError) || error.field !== 'embedding') throw error;
    throw error.within(`${field}[${shards.findIndex((s) => s.embedding !== null)}]`);
  }
  db.semantic?.enqueue(write.shardIds.filter((_, i) => shards[i].embedding === null));
  const texts = new Map(write.shardIds.map((id, i) => [id, shards[i].content]));
  return { shardIds: write.shardIds, shards: write.shardIds.map((id, i) => writtenShard(id, shards[i], now)), readySoulIds: await readyEdges(db, write.gate, texts) };
}

/** Unseals deferred observations (they stay pending); may make souls ready. */
export async function revealShards(db: SoulsDb, shardIds: readonly number[]): Promise<DropShardsResult> {
  const ids = requireIds('ids', shardIds);
  const now = db.clock.now();
  const write = await db.store.revealShards(ids, now, expiryCutoff(db, now), clusteredBy(db));
  return { shardIds: [...new Set(ids)], readySoulIds: await readyEdges(db, write.gate) };
}

export type FadeResult = { fadedCount: number; readySoulIds: number[] };

/**
 * The one maintenance operation: shards cited by `shardFadeCitations` distinct traits fade. A
 * shard that fades can split a chained cluster, so the souls this made ready are reported too.
 * Also refreshes planner statistics.
 */
export async function fadeExhaustedShards(db: SoulsDb): Promise<FadeResult> {
  const now = db.clock.now();
  const { fadedCount, gate } = await db.store.fadeExhaustedShards(db.settings.shardFadeCitations, now, expiryCutoff(db, now));
  await db.store.optimize();
  return { fadedCount, readySoulIds: await readyEdges(db, gate) };
}

export async function getShard(db: SoulsDb, id: number): Promise<Shard | null> {
  return (await db.store.getShards([id])).get(id) ?? null;
}

export async function getShards(db: SoulsDb, ids: readonly number[]): Promise<Map<number, Shard>> {
  return await db.store.getShards(ids);
}

/** The stored embeddings (L2-normalized, as Float32) of those of the shards that have one. */
export async function getShardEmbeddings(db: SoulsDb, ids: readonly number[]): Promise<Map<number, Float32Array>> {
  return new Map([...await db.store.shardEmbeddings(requireIds('ids', ids))].map(([id, bytes]) => [id, decodeEmbedding(bytes)]));
}

/** The embedding dimension of this database (fixed by the first stored vector), or null while none is stored. */
export async function getEmbeddingDimension(db: SoulsDb): Promise<number | null> {
  return await db.store.embeddingDimension();
}

export type ListShardsOptions = {
  soulId?: number | null;
  source?: string | null;
  tags?: readonly string[] | null;
  status?: ShardStatus | null;
  /** true: only sealed, false: only unsealed, null: both. */
  sealed?: boolean | null;
  /** Pending shards past shardExpiryDays are left out unless this is true. */
  includeExpired?: boolean;
  first?: number;
  after?: string | null;
};

export const MAX_PAGE_SIZE = 500;

/** Shards newest first, with cursor paging. */
export async function listShards(db: SoulsDb, options: ListShardsOptions = {}): Promise<Page<Shard>> {
  const status = options.status ?? 'pending';
  if (!shardStatuses.includes(status)) throw new ValidationError('status', `unknown shard status "${status}"`);
  const first = options.first ?? 50;
  if (!Number.isInteger(first) || first < 0 || first > MAX_PAGE_SIZE) throw new ValidationError('first', `must be a whole number from 0 to ${MAX_PAGE_SIZE}`);
  const tags = options.tags ? normalizeTags(options.tags) : undefined;
  const now = db.clock.now();
  return await db.store.listShards(
    {
      soulId: options.soulId ?? undefined,
      source: options.source === undefined || options.source === null ? undefined : cleanText(options.source).trim(),
      tags,
      status,
      sealed: options.sealed ?? undefined,
      cutoff: status === 'pending' && !options.includeExpired ? expiryCutoff(db, now) : null,
    },
    { first, after: options.after ?? null },
  );
}

const MAX_SEARCH_TERMS = 32;

/** How a search's words combine: `all` (the default) finds shards holding every word, `any` those holding one or more. */
export type SearchMatch = TextQuery['match'];
export const searchMatches: readonly SearchMatch[] = ['all', 'any'];

/**
 * The plain words of a user's query (those with a letter or digit), each with its other regional spelling
 * (apologise/apologize, colour/color): any string is safe, none is FTS syntax.
 */
export function textQuery(query: string, match: SearchMatch = 'all'): TextQuery {
  const words = cleanText(query)
    .split(/\s+/u)
    .filter((t) => /[\p{L}\p{N}]/u.test(t))
    .slice(0, MAX_SEARCH_TERMS);
  return { words: words.map(spellings), match };
}

export type ShardHit = { shard: Shard; score: number };

/** Full-text search (FTS5, bm25) over pending, unsealed, unexpired shards; best first. */
export async function searchShards(db: SoulsDb, query: string, options: { soulId?: number | null; first?: number; match?: SearchMatch | null } = {}): Promise<ShardHit[]> {
  if (typeof query !== 'string') throw new ValidationError('query', 'must be a string');
  const first = options.first ?? 20;
  if (!Number.isInteger(first) || first < 0 || first > MAX_PAGE_SIZE) throw new ValidationError('first', `must be a whole number from 0 to ${MAX_PAGE_SIZE}`);
  const match = options.match ?? 'all';
  if (!searchMatches.includes(match)) throw new ValidationError('match', `must be one of ${searchMatches.join(', ')}`);
  const now = db.clock.now();
  const hits = await db.store.searchShards(textQuery(query, match), { soulId: options.soulId ?? undefined, cutoff: expiryCutoff(db, now), limit: first });
  const shards = await db.store.getShards(hits.map((h) => h.shardId));
  return hits.map((h) => ({ shard: shards.get(h.shardId)!, score: h.score }));
}

/** At least the shard rows a search or an unfiltered count may read: what they are priced by before they run. */
export async function shardRowBound(db: SoulsDb): Promise<number> {
  return await db.store.shardRowBound();
}

/** Considered (pending, unsealed, unexpired) shards attributed to the soul. */
export async function pendingShardCount(db: SoulsDb, soulId: number): Promise<number> {
  return (await pendingShardCounts(db, [soulId])).get(soulId) ?? 0;
}

export async function pendingShardCounts(db: SoulsDb, soulIds: readonly number[]): Promise<Map<number, number>> {
  return await db.store.pendingCounts(soulIds, expiryCutoff(db, db.clock.now()));
}

/** Pending counts for every non-dormant soul, most first. */
export async function shardCountsPerSoul(db: SoulsDb): Promise<Array<{ soulId: number; pending: number }>> {
  const counts = await db.store.pendingCounts('awake', expiryCutoff(db, db.clock.now()));
  return [...counts].map(([soulId, pending]) => ({ soulId, pending })).sort((a, b) => b.pending - a.pending || a.soulId - b.soulId);
}

export async function shardCountsByTag(db: SoulsDb, soulId: number | null = null): Promise<TagCount[]> {
  return await db.store.countsByTag(soulId, expiryCutoff(db, db.clock.now()));
}

export async function shardCountsByTagOfSouls(db: SoulsDb, soulIds: readonly number[]): Promise<Map<number, TagCount[]>> {
  return await db.store.countsByTagPerSoul(soulIds, expiryCutoff(db, db.clock.now()));
}

export async function shardCountsBySource(db: SoulsDb, soulIds: readonly number[]): Promise<Map<number, SourceCount[]>> {
  return await db.store.countsBySource(soulIds, expiryCutoff(db, db.clock.now()));
}
