import { systemClock, type Clock } from './clock.ts';
import { resolveSettings, type Settings } from './settings.ts';
import type { SoulsStore } from '../store/store.ts';
import { openSqliteStore } from '../store/sqlite.ts';
import type { OpenMode } from '../store/sqlite-file.ts';
import { ClusterMemo } from './cluster-memo.ts';
import { EvidenceCache } from './evidence-cache.ts';
import { SemanticEmbeddings } from './semantic.ts';

/** The handle every engine function takes first: where souls are stored, the knobs, and the clock. */
export type SoulsDb = {
  readonly store: SoulsStore;
  readonly settings: Settings;
  readonly clock: Clock;
  /** Remembered cluster partitions, so the gate re-clusters only what changed. */
  readonly clusters: ClusterMemo;
  /** Shard rows, scoped partitions and representatives evidence reports reuse, keyed by the shards they came from. */
  readonly evidence: EvidenceCache;
  /** Similarity `semantic`: the shards waiting for their sentence-encoder vector (embedded off the request path); null in other modes. */
  readonly semantic: SemanticEmbeddings | null;
};

export type OpenOptions = {
  /** SQLite file path; ':memory:' (the default) keeps everything in memory. */
  path?: string;
  /** 'create' (the default) creates or migrates the file; 'read-only' needs an existing file and never writes to it. */
  mode?: OpenMode;
  /** A store to use instead of opening SQLite. */
  store?: SoulsStore;
  clock?: Clock;
  /** Knob and bound overrides, validated: a bad value throws a ValidationError naming the knob. */
  settings?: Partial<Record<keyof Settings, unknown>>;
};

export function openSoulsDb(options: OpenOptions = {}): SoulsDb {
  const settings = resolveSettings(options.settings);
  const store = options.store ?? openSqliteStore({ path: options.path, mode: options.mode });
  const cacheBytes = settings.maxCacheMegabytes * 2 ** 20;
  const db: SoulsDb = {
    store,
    settings,
    clock: options.clock ?? systemClock,
    // The clustering memo gets three quarters of the cache budget: the gate needs it on every write past the cheap gate.
    clusters: new ClusterMemo(settings.clusteringThreshold, cacheBytes * 0.75, settings.similarity, (ids) => store.shardEmbeddings(ids)),
    evidence: new EvidenceCache(settings.clusteringThreshold, settings.similarity, (ids) => store.shardEmbeddings(ids), cacheBytes * 0.25),
    semantic: settings.similarity === 'semantic' ? new SemanticEmbeddings(() => db) : null,
  };
  return db;
}

/** Checkpoints and closes; `checkpointDeferred` says why the WAL was left for the next open (a full disk), or is null. */
export function closeSoulsDb(db: SoulsDb): { checkpointDeferred: string | null } {
  // Vectors still being computed are not stored: those shards stay lexical until `souls reindex`.
  db.semantic?.close();
  return db.store.close();
}

/** Shards created at or before this moment are past `shardExpiryDays` and left out of every read (never deleted). */
export function expiryCutoff(db: SoulsDb, now: number): number {
  return now - db.settings.shardExpiryDays * 86_400_000;
}
