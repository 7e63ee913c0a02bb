import { DAY_MS } from './clock.ts';
import type { Knobs } from './settings.ts';
import type { GateStats, ShardAggregate } from '../store/store.ts';
import type { Shard } from './model.ts';
import { clusterTexts } from './similarity.ts';
import { expiryCutoff, type SoulsDb } from './souls-db.ts';

export const crystallizationConditions = ['MIN_SHARDS', 'MIN_CLUSTERS', 'SOURCE_DIVERSITY', 'AGE_SPREAD', 'RECENCY', 'DORMANT'] as const;
export type CrystallizationCondition = (typeof crystallizationConditions)[number];

/** Fixed invariants, deliberately not knobs (SPEC §4). */
export const MIN_DISTINCT_SOURCES = 2;
export const MIN_AGE_SPREAD_MS = DAY_MS;
export const MIN_CLUSTERS = 2;

export type Crystallization = {
  soulId: number;
  ready: boolean;
  priority: number;
  pendingCount: number;
  distinctSources: number;
  ageSpreadDays: number;
  newSinceAttuned: boolean;
  /** null when the cheap pre-check failed and clustering was skipped. */
  clusterCount: number | null;
  unmet: CrystallizationCondition[];
};

export type GateSubject = { dormant: boolean; lastAttunedAt: number | null };

/** Conditions 1, 3, 4 and 5 (and dormancy): everything one indexed query can decide. */
export function cheapUnmet(agg: ShardAggregate, subject: GateSubject, knobs: Pick<Knobs, 'crystallizationThreshold'>): CrystallizationCondition[] {
  const unmet: CrystallizationCondition[] = [];
  if (subject.dormant) unmet.push('DORMANT');
  if (agg.count < knobs.crystallizationThreshold) unmet.push('MIN_SHARDS');
  if (agg.distinctSources < MIN_DISTINCT_SOURCES) unmet.push('SOURCE_DIVERSITY');
  if (ageSpreadMs(agg) <= MIN_AGE_SPREAD_MS) unmet.push('AGE_SPREAD');
  if (!newSinceAttuned(agg, subject.lastAttunedAt)) unmet.push('RECENCY');
  return unmet;
}

function ageSpreadMs(agg: ShardAggregate): number {
  return agg.oldest === null || agg.newest === null ? 0 : agg.newest - agg.oldest;
}

function newSinceAttuned(agg: ShardAggregate, lastAttunedAt: number | null): boolean {
  if (agg.newest === null) return false;
  return lastAttunedAt === null || agg.newest > lastAttunedAt;
}

/** priority = pendingCount × distinctSources × ageSpreadDays × recencyFactor, the seed's formula taken literally. */
export function crystallizationPriority(agg: ShardAggregate, lastAttunedAt: number | null, now: number): number {
  const recencyFactor = lastAttunedAt === null ? 1 : 1 / Math.max(1, (now - lastAttunedAt) / DAY_MS);
  return agg.count * agg.distinctSources * (ageSpreadMs(agg) / DAY_MS) * recencyFactor;
}

/** The full verdict; `clusterCount` is null when the cheap conditions failed and clustering was skipped. */
export function assessCrystallization(
  soulId: number,
  agg: ShardAggregate,
  subject: GateSubject,
  clusterCount: number | null,
  knobs: Pick<Knobs, 'crystallizationThreshold'>,
  now: number,
): Crystallization {
  const unmet = cheapUnmet(agg, subject, knobs);
  if (clusterCount !== null && clusterCount < MIN_CLUSTERS) unmet.push('MIN_CLUSTERS');
  return {
    soulId,
    ready: unmet.length === 0 && clusterCount !== null,
    priority: crystallizationPriority(agg, subject.lastAttunedAt, now),
    pendingCount: agg.count,
    distinctSources: agg.distinctSources,
    ageSpreadDays: ageSpreadMs(agg) / DAY_MS,
    newSinceAttuned: newSinceAttuned(agg, subject.lastAttunedAt),
    clusterCount,
    unmet,
  };
}

export function passesCheapGate(stats: GateStats, which: 'before' | 'after', knobs: Pick<Knobs, 'crystallizationThreshold'>): boolean {
  return cheapUnmet(stats[which], stats, knobs).length === 0;
}

// Reads over the store.

function consideredBySoul(db: SoulsDb, soulIds: readonly number[], cutoff: number): Map<number, Shard[]> {
  const bySoul = new Map<number, Shard[]>(soulIds.map((id) => [id, []]));
  if (soulIds.length === 0) return bySoul;
  for (const shard of db.store.consideredShards(soulIds, cutoff)) {
    for (const soulId of shard.soulIds) bySoul.get(soulId)?.push(shard);
  }
  return bySoul;
}

function countClusters(db: SoulsDb, shards: readonly Shard[]): number {
  return clusterTexts(shards.map((s) => s.content), db.settings.clusteringThreshold).length;
}

/**
 * The souls a write moved from not-ready to ready (an edge, not a level).
 * Only souls whose cheap conditions pass after the write load and cluster
 * their shards; a soul that was already ready costs one clustering.
 */
export function readyEdges(db: SoulsDb, gate: readonly GateStats[], newShardIds: readonly number[], now: number): number[] {
  const candidates = gate.filter((g) => passesCheapGate(g, 'after', db.settings));
  if (candidates.length === 0) return [];
  const fresh = new Set(newShardIds);
  const shardsBySoul = consideredBySoul(db, candidates.map((g) => g.soulId), expiryCutoff(db, now));
  return candidates
    .filter((g) => {
      const shards = shardsBySoul.get(g.soulId)!;
      const wasReady = passesCheapGate(g, 'before', db.settings) && countClusters(db, shards.filter((s) => !fresh.has(s.id))) >= MIN_CLUSTERS;
      return !wasReady && countClusters(db, shards) >= MIN_CLUSTERS;
    })
    .map((g) => g.soulId);
}

/** The crystallization verdict of each soul, at now: one indexed query, then clustering only where the cheap gate passes. */
export async function getCrystallization(db: SoulsDb, soulIds: readonly number[]): Promise<Map<number, Crystallization>> {
  const now = db.clock.now();
  const cutoff = expiryCutoff(db, now);
  const stats = db.store.gateStats(soulIds, cutoff);
  return assessAll(db, [...stats.values()], cutoff, now);
}

function assessAll(db: SoulsDb, stats: readonly GateStats[], cutoff: number, now: number): Map<number, Crystallization> {
  const passing = stats.filter((g) => passesCheapGate(g, 'after', db.settings)).map((g) => g.soulId);
  const shardsBySoul = consideredBySoul(db, passing, cutoff);
  return new Map(
    stats.map((g) => {
      const shards = shardsBySoul.get(g.soulId);
      return [g.soulId, assessCrystallization(g.soulId, g.after, g, shards ? countClusters(db, shards) : null, db.settings, now)];
    }),
  );
}

export type ReadySoul = { soulId: number; priority: number; crystallization: Crystallization };

/** Non-dormant souls ready for refinement, most urgent first (priority descending, then id). */
export async function crystallizationReadiness(db: SoulsDb): Promise<ReadySoul[]> {
  const now = db.clock.now();
  const cutoff = expiryCutoff(db, now);
  const stats = db.store.gateStats('awake', cutoff);
  return [...assessAll(db, [...stats.values()], cutoff, now).values()]
    .filter((c) => c.ready)
    .sort((a, b) => b.priority - a.priority || a.soulId - b.soulId)
    .map((c) => ({ soulId: c.soulId, priority: c.priority, crystallization: c }));
}
