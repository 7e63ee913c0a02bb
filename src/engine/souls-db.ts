import { systemClock, type Clock } from './clock.ts';
import { clusteringThresholdSource, resolveSettings, type ClusteringThresholdSource, type Settings, type SimilarityMode } from './settings.ts';
import { storedThreshold, withStoredThreshold } from './calibrate.ts';
import type { Awaitable, SoulsStore } from '../store/store.ts';
import { openStore, openStoreAsync } from '../store/open.ts';
import type { StoreObserver } from '../store/sqlite.ts';
import type { OpenMode } from '../store/sqlite-file.ts';
import { ClusterMemo } from './cluster-memo.ts';
import { EvidenceCache } from './evidence-cache.ts';
import { builtinEncoder, checkEmbeddingModel, SemanticEmbeddings, type Embedder, type EmbedderObserver } from './semantic.ts';
import { ValidationError } from './errors.ts';

/** What a write's crystallization gate found for one soul it touched: below the cheap gate, ready before the write, still not ready, or made ready (an edge). */
export type GateOutcome = 'below_cheap_gate' | 'already_ready' | 'not_ready' | 'crossed';

/** What was clustered: a soul's considered shards (remembered; the gate and unscoped evidence reports) or an evidence report scoped to tags or a query. */
export type ClusteringPurpose = 'soul' | 'scoped_report';

/**
 * What the engine tells an observer as it works (a server's metrics): every hook optional, called synchronously,
 * never with user text. The object is the handle's own, so hooks can be set after the database is opened.
 */
export type EngineObserver = StoreObserver & EmbedderObserver & {
  gateChecked?(outcome: GateOutcome): void;
  /** One clustering computed (not one answered from memory); `ms` counts computing only, not the turns a sliced build hands back. */
  clustered?(work: { mode: SimilarityMode; purpose: ClusteringPurpose; shards: number; ms: number }): void;
};

/** The handle every engine function takes first: where souls are stored, the knobs, and the clock. */
export type SoulsDb = {
  readonly store: SoulsStore;
  readonly settings: Settings;
  /** Where settings.clusteringThreshold came from: set, the mode's default, or the database's calibration (`souls calibrate`). */
  readonly clusteringThresholdSource: ClusteringThresholdSource;
  readonly clock: Clock;
  /** Remembered cluster partitions, so the gate re-clusters only what changed. */
  readonly clusters: ClusterMemo;
  /** Shard rows, scoped partitions and representatives evidence reports reuse, keyed by the shards they came from. */
  readonly evidence: EvidenceCache;
  /** Similarity `semantic`: the shards waiting for their vector from the embedder (off the request path); null in other modes. */
  readonly semantic: SemanticEmbeddings | null;
  readonly observer: EngineObserver;
};

export type OpenOptions = {
  /** SQLite file path, or a postgres:// URL (openSoulsDbAsync only); ':memory:' (the default) keeps everything in memory. */
  path?: string;
  /** PostgreSQL only: how long one store call may take before it fails with STORAGE_UNAVAILABLE. */
  timeoutMs?: number;
  /** PostgreSQL only: how long a new connection may take to answer (see PostgresOptions.connectTimeoutMs). */
  connectTimeoutMs?: number;
  /** PostgreSQL only: how many connections the pool opens at most. */
  poolSize?: number;
  /** 'create' (the default) creates or migrates the file; 'read-only' needs an existing file and never writes to it. */
  mode?: OpenMode;
  /** A store to use instead of opening SQLite. */
  store?: SoulsStore;
  clock?: Clock;
  /**
   * Knob and bound overrides, validated: a bad value throws a ValidationError naming the knob. Without a
   * clusteringThreshold, the threshold `souls calibrate` stored for the mode (and vector dimension) applies, else the mode's default.
   */
  settings?: Partial<Record<keyof Settings, unknown>>;
  /**
   * The threshold calibrated for this database, already read (storedThreshold): a store that answers with promises
   * needs it, since opening is synchronous; undefined reads it here. Applies only where no clusteringThreshold is set.
   */
  calibratedThreshold?: number | null;
  /** Hooks told what the engine does (also settable later on `db.observer`); none by default. */
  observer?: EngineObserver;
  /** Similarity `semantic` only: where vectors come from (default the built-in sentence encoder); src/embedder/endpoint.ts makes one for an OpenAI-compatible endpoint. */
  embedder?: Embedder;
  /** Semantic: the most shards waiting for a vector; more are left lexical (counted) until `souls reindex`. */
  maxEmbedQueue?: number;
  /**
   * false: open a database whose vectors come from another model than this handle's (only `souls reindex`, which
   * rebinds it). By default that is refused with a ValidationError `embedderModel`.
   */
  checkEmbeddingModel?: boolean;
};

/**
 * Opens any database: a PostgreSQL URL (a connection pool, opened asynchronously) or a SQLite file. What opening
 * reads from the store (the calibrated threshold, the embedding model) is awaited here.
 */
export async function openSoulsDbAsync(options: OpenOptions = {}): Promise<SoulsDb> {
  const store = options.store ?? (await openStoreAsync({ path: options.path, mode: options.mode, timeoutMs: options.timeoutMs, connectTimeoutMs: options.connectTimeoutMs, poolSize: options.poolSize, observer: options.observer }));
  try {
    const settings = resolveSettings(options.settings);
    const calibratedThreshold = options.calibratedThreshold !== undefined ? options.calibratedThreshold : await storedThreshold(store, settings);
    const mode = withStoredThreshold(settings, calibratedThreshold).similarity;
    const embedder = mode === 'semantic' ? (options.embedder ?? builtinEncoder) : null;
    if (options.checkEmbeddingModel !== false) await checkEmbeddingModel(store, mode, embedder?.model ?? null);
    return openSoulsDb({ ...options, store, calibratedThreshold, checkEmbeddingModel: false });
  } catch (error) {
    if (!options.store) await store.close();
    throw error;
  }
}

/** Opens a SQLite file (or ':memory:', or the `store` given) at once; PostgreSQL needs openSoulsDbAsync. */
export function openSoulsDb(options: OpenOptions = {}): SoulsDb {
  const resolved = resolveSettings(options.settings);
  const observer: EngineObserver = options.observer ?? {};
  const store = options.store ?? openStore({ path: options.path, mode: options.mode, observer });
  let settings: Settings;
  try {
    const stored = options.calibratedThreshold !== undefined ? options.calibratedThreshold : storedThreshold(store, resolved);
    if (stored instanceof Promise) {
      stored.catch(() => {});
      throw new Error('openSoulsDb: this store answers asynchronously; read storedThreshold(store, settings) first and pass it as calibratedThreshold');
    }
    settings = withStoredThreshold(resolved, stored);
  } catch (error) {
    if (!options.store) store.close();
    throw error;
  }
  const mode = settings.similarity;
  if (options.embedder && mode !== 'semantic') {
    if (!options.store) store.close();
    throw new ValidationError('embedder', `an embedder computes the vectors of similarity semantic, but similarity is ${mode}`);
  }
  const embedder = mode === 'semantic' ? (options.embedder ?? builtinEncoder) : null;
  if (options.checkEmbeddingModel !== false) {
    try {
      const checked = checkEmbeddingModel(store, mode, embedder?.model ?? null);
      if (checked instanceof Promise) {
        checked.catch(() => {});
        throw new Error('openSoulsDb: this store answers asynchronously; await checkEmbeddingModel(store, mode, model) first and pass checkEmbeddingModel: false');
      }
    } catch (error) {
      if (!options.store) store.close();
      throw error;
    }
  }
  const clustered = (purpose: ClusteringPurpose) => (ms: number, shards: number) => observer.clustered?.({ mode, purpose, shards, ms });
  const cacheBytes = settings.maxCacheMegabytes * 2 ** 20;
  const db: SoulsDb = {
    store,
    settings,
    clusteringThresholdSource: clusteringThresholdSource(settings),
    clock: options.clock ?? systemClock,
    // The clustering memo gets three fifths of the cache budget: the gate needs it on every write past the cheap gate.
    // The evidence cache's two fifths hold a 1,000-soul dashboard's rows and analyses (about 600 bytes a shard in the
    // memo, 530 in the rows, 150 an analysed cluster), so that a dashboard asked again finds them all.
    clusters: new ClusterMemo(settings.clusteringThreshold, cacheBytes * 0.6, mode, (ids) => store.shardEmbeddings(ids), clustered('soul')),
    evidence: new EvidenceCache(settings.clusteringThreshold, mode, (ids) => store.shardEmbeddings(ids), clustered('scoped_report'), cacheBytes * 0.4),
    semantic: embedder ? new SemanticEmbeddings(() => db, embedder, { maxQueue: options.maxEmbedQueue }) : null,
    observer,
  };
  return db;
}

/** Checkpoints and closes; `checkpointDeferred` says why the WAL was left for the next open (a full disk), or is null. */
export function closeSoulsDb(db: SoulsDb): Awaitable<{ checkpointDeferred: string | null }> {
  // Vectors still being computed are not stored: those shards stay lexical until `souls reindex`.
  db.semantic?.close();
  return db.store.close();
}

