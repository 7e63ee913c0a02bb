import { systemClock, type Clock } from './clock.ts';
import { resolveSettings, type Settings } from './settings.ts';
import type { SoulsStore } from '../store/store.ts';
import { openSqliteStore } from '../store/sqlite.ts';
import { ClusterMemo } from './cluster-memo.ts';

/** The handle every engine function takes first: where souls are stored, the knobs, and the clock. */
export type SoulsDb = {
  readonly store: SoulsStore;
  readonly settings: Settings;
  readonly clock: Clock;
  /** Remembered cluster partitions, so the gate re-clusters only what changed. */
  readonly clusters: ClusterMemo;
};

export type OpenOptions = {
  /** SQLite file path; ':memory:' (the default) keeps everything in memory. */
  path?: string;
  /** A store to use instead of opening SQLite. */
  store?: SoulsStore;
  clock?: Clock;
  /** Knob and bound overrides, validated: a bad value throws a ValidationError naming the knob. */
  settings?: Partial<Record<keyof Settings, unknown>>;
};

export function openSoulsDb(options: OpenOptions = {}): SoulsDb {
  const settings = resolveSettings(options.settings);
  const store = options.store ?? openSqliteStore({ path: options.path });
  return { store, settings, clock: options.clock ?? systemClock, clusters: new ClusterMemo(settings.clusteringThreshold) };
}

export function closeSoulsDb(db: SoulsDb): void {
  db.store.close();
}

/** Shards created at or before this moment are past `shardExpiryDays` and left out of every read (never deleted). */
export function expiryCutoff(db: SoulsDb, now: number): number {
  return now - db.settings.shardExpiryDays * 86_400_000;
}
