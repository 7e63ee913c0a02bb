import { DAY_MS } from './clock.ts';
import { expiryCutoff, type Knobs, type Settings } from './settings.ts';
import type { Awaitable, GateStats, ShardAggregate } from '../store/store.ts';
import type { SoulsDb } from './souls-db.ts';
import type { ClusteringWork } from './cluster-memo.ts';

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
  /** How many shards clustering covered: pendingCount, or maxClusteredShards when the soul has more; null when skipped. */
  clusteredShardCount: number | null;
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

/**
 * Recency counts arrival (SPEC §13): a shard recorded after the attunement is new evidence whatever its createdAt, and
 * so is one revealed after it (invisible when the soul was attuned). A soul never attuned has nothing to be new since.
 */
function newSinceAttuned(agg: ShardAggregate, lastAttunedAt: number | null): boolean {
  return lastAttunedAt === null || (agg.latest !== null && agg.latest > lastAttunedAt);
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
  knobs: Pick<Settings, 'crystallizationThreshold' | 'maxClusteredShards'>,
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
    clusteredShardCount: clusterCount === null ? null : Math.min(agg.count, knobs.maxClusteredShards),
    unmet,
  };
}

/** An unmet condition and, in words, what would meet it (SPEC §13): the report, the API, MCP, the CLI and the web app all show these. */
export type UnmetNeed = { condition: CrystallizationCondition; message: string };

/** "RECENCY needs a shard recorded …": a need with its condition's name, for a line a model or a script reads. */
export const unmetNeedLine = (need: UnmetNeed): string => `${need.condition} needs ${need.message}`;

const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * What would meet each of the verdict's unmet conditions, in its order: how many more shards, sources or clusters,
 * the spread the shards lack, and for RECENCY the attunement's time and that any shard recorded (or revealed) after it
 * counts, whatever its createdAt. `lastAttunedAt` is the soul's.
 */
export function unmetNeeds(c: Crystallization, lastAttunedAt: number | null, knobs: Pick<Knobs, 'crystallizationThreshold'>): UnmetNeed[] {
  return c.unmet.map((condition) => ({ condition, message: unmetNeed(condition, c, lastAttunedAt, knobs.crystallizationThreshold) }));
}

function unmetNeed(condition: CrystallizationCondition, c: Crystallization, lastAttunedAt: number | null, threshold: number): string {
  switch (condition) {
    case 'DORMANT':
      return 'awakening: a dormant soul is never ready';
    case 'MIN_SHARDS':
      return `${count(threshold - c.pendingCount, 'more shard', 'more shards')} (${c.pendingCount} of the ${threshold} needed)`;
    case 'SOURCE_DIVERSITY':
      return `shards from ${count(MIN_DISTINCT_SOURCES - c.distinctSources, 'more source', 'more sources')} (${c.distinctSources} of the ${MIN_DISTINCT_SOURCES} needed)`;
    case 'AGE_SPREAD':
      return `shards observed more than a day apart (${c.pendingCount < 2 ? 'one shard spans no time' : `the oldest and newest are ${c.ageSpreadDays.toFixed(2)} days apart`})`;
    case 'RECENCY':
      if (lastAttunedAt === null) return 'a shard (the soul was never attuned: any shard counts)';
      return `a shard recorded or revealed after the last attunement (${new Date(lastAttunedAt).toISOString()}): any shard recorded since counts, whatever its createdAt`;
    case 'MIN_CLUSTERS':
      return `shards on ${count(MIN_CLUSTERS - (c.clusterCount ?? 0), 'more distinct topic', 'more distinct topics')} (${c.clusterCount ?? 0} of the ${MIN_CLUSTERS} clusters needed; a judged theme counts as one)`;
  }
}

export function passesCheapGate(stats: GateStats, which: 'before' | 'after', knobs: Pick<Knobs, 'crystallizationThreshold'>): boolean {
  return cheapUnmet(stats[which], stats, knobs).length === 0;
}

/** Which souls of a write need their shard ids: those clustering will look at, the ones passing the cheap gate after it. */
export function clusteredBy(db: SoulsDb): (stats: GateStats) => boolean {
  return (stats) => passesCheapGate(stats, 'after', db.settings);
}

// Reads over the store.

/**
 * The shards clustering covers, of a soul's considered shards (ascending ids): all of them, or
 * the `max` most recently dropped. Exact single linkage degenerates to all pairs on low-variety
 * text, so this bounds its work; within the bound the clusters stay exact (SPEC §5).
 */
export function clusteredShards(shardIds: readonly number[], max: number): readonly number[] {
  return shardIds.length <= max ? shardIds : shardIds.slice(shardIds.length - max);
}

/**
 * A soul's shards as its judge left them (SPEC §12): how many themes they hold (each one cluster, whatever its
 * members' similarity) and the unjudged shards similarity clusters, of which the `maxClusteredShards` most recent.
 */
export type JudgedShards = { themeCount: number; unjudged: readonly number[] };

/** The souls' shard → theme assignments, for judgedShards: one statement for any number of souls (none for none). */
export function soulThemeMaps(db: SoulsDb, soulIds: readonly number[]): Awaitable<Map<number, ReadonlyMap<number, number>>> {
  return soulIds.length === 0 ? new Map() : db.store.shardThemesOfSouls(soulIds);
}

/**
 * `next` of the value, awaited only when it is a promise: the gate runs on every write, SQLite answers at once, and
 * each await costs the write a turn of the microtask queue.
 */
function then<T, U>(value: Awaitable<T>, next: (value: T) => Awaitable<U>): Awaitable<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

const contentsOf = (db: SoulsDb) => (ids: number[]) => db.store.shardContents(ids);

const none: ReadonlyMap<number, number> = new Map();

export function judgedShards(db: SoulsDb, themeOf: ReadonlyMap<number, number>, shardIds: readonly number[]): JudgedShards {
  if (themeOf.size === 0) return { themeCount: 0, unjudged: clusteredShards(shardIds, db.settings.maxClusteredShards) };
  const themes = new Set<number>();
  const unjudged: number[] = [];
  for (const id of shardIds) {
    const themeId = themeOf.get(id);
    if (themeId === undefined) unjudged.push(id);
    else themes.add(themeId);
  }
  return { themeCount: themes.size, unjudged: clusteredShards(unjudged, db.settings.maxClusteredShards) };
}

function clusterCount(db: SoulsDb, soulId: number, judged: JudgedShards): Awaitable<number> {
  return then(db.clusters.clusterCount(soulId, judged.unjudged, contentsOf(db)), (count) => judged.themeCount + count);
}

/**
 * The souls passing the cheap gate, with the texts they will cluster made ready: for a write, its own
 * new shards' texts (`known`; the memo loads any other it turns out to need), else one statement for
 * every text not cached.
 */
function passingCheapGate(db: SoulsDb, stats: readonly GateStats[], known?: ReadonlyMap<number, string>): Awaitable<GateStats[]> {
  const passing = stats.filter((g) => passesCheapGate(g, 'after', db.settings));
  if (known !== undefined) {
    const texts = new Map<number, string>();
    // A write's shards have the largest ids, so they end each soul's list.
    for (const g of passing) for (let i = g.shardIds.length - 1; i >= 0 && known.has(g.shardIds[i]); i--) texts.set(g.shardIds[i], known.get(g.shardIds[i])!);
    return texts.size > 0 ? then(db.clusters.remember(texts), () => passing) : passing;
  }
  // A superset of what clustering reads when some shards are judged: texts are cheap to hold and never change.
  const missing = db.clusters.uncached(passing.map((g) => clusteredShards(g.shardIds, db.settings.maxClusteredShards)));
  if (missing.length === 0) return passing;
  return then(db.store.shardContents(missing), (texts) => then(db.clusters.remember(texts), () => passing));
}

/**
 * The souls a write moved from not-ready to ready (an edge, not a level).
 * Only souls whose cheap conditions pass after the write cluster their
 * shards, and the remembered partitions make that incremental; a bulk build
 * (a large batch) runs in slices, after the write's transaction has committed.
 */
export async function readyEdges(db: SoulsDb, gate: readonly GateStats[], newTexts?: ReadonlyMap<number, string>): Promise<number[]> {
  const edges: number[] = [];
  const found = passingCheapGate(db, gate, newTexts);
  const passing = found instanceof Promise ? await found : found;
  for (let below = gate.length - passing.length; below > 0; below--) db.observer.gateChecked?.('below_cheap_gate');
  // Read only for souls that may have themes: a write past the cheap gate would otherwise pay a statement for none.
  const mapped = soulThemeMaps(db, passing.filter((g) => g.themed !== false).map((g) => g.soulId));
  const themes = mapped instanceof Promise ? await mapped : mapped;
  for (const g of passing) {
    const themeOf = themes.get(g.soulId) ?? none;
    const before = passesCheapGate(g, 'before', db.settings) && reachesMinClusters(db, g.soulId, judgedShards(db, themeOf, g.beforeShardIds));
    const wasReady = before instanceof Promise ? await before : before;
    const after = !wasReady && reachesMinClusters(db, g.soulId, judgedShards(db, themeOf, g.shardIds));
    const crossed = after instanceof Promise ? await after : after;
    if (crossed) edges.push(g.soulId);
    db.observer.gateChecked?.(wasReady ? 'already_ready' : crossed ? 'crossed' : 'not_ready');
  }
  return edges;
}

/**
 * Whether the shards form MIN_CLUSTERS clusters: from the memo's remembered separation when it still holds,
 * else counted, with a bulk build (a cold soul, a large batch) done first in slices that hand the event loop back.
 */
function reachesMinClusters(db: SoulsDb, soulId: number, judged: JudgedShards): Awaitable<boolean> {
  if (judged.themeCount >= MIN_CLUSTERS) return true;
  return then(db.clusters.stillSeparated(soulId, judged.unjudged, contentsOf(db)), (separated) =>
    separated || then(prepareBulk(db, soulId, judged.unjudged), () => then(clusterCount(db, soulId, judged), (count) => count >= MIN_CLUSTERS)),
  );
}

/** What verdicts are about to cost, told before any clustering: the souls judged and what clustering their shards does. */
export type CrystallizationWork = { souls: number; clustering: ClusteringWork };

/** `price` hears the work before any clustering, and may refuse it by throwing: nothing more is done. */
export type CrystallizationOptions = { price?: (work: CrystallizationWork) => void };

/** The crystallization verdict of each soul, at now: one indexed query, then clustering only where the cheap gate passes. */
export async function getCrystallization(db: SoulsDb, soulIds: readonly number[], options: CrystallizationOptions = {}): Promise<Map<number, Crystallization>> {
  const now = db.clock.now();
  const stats = await db.store.gateStats(soulIds, expiryCutoff(db, now));
  const judged = await prepareClusters(db, [...stats.values()], soulIds.length, options);
  return await assessAll(db, [...stats.values()], judged, now);
}

/** Reads cluster cold souls (after a restart, or a large batch) in slices, so other requests keep being served meanwhile. */
async function prepareClusters(db: SoulsDb, stats: readonly GateStats[], souls: number, options: CrystallizationOptions): Promise<Map<number, JudgedShards>> {
  const judged = new Map<number, JudgedShards>();
  const passing = stats.filter((g) => passesCheapGate(g, 'after', db.settings));
  const themes = await soulThemeMaps(db, passing.map((g) => g.soulId));
  for (const g of passing) judged.set(g.soulId, judgedShards(db, themes.get(g.soulId) ?? none, g.shardIds));
  options.price?.({ souls, clustering: clusteringOf(db, passing.map((g) => [g.soulId, judged.get(g.soulId)!.unjudged])) });
  for (const g of passing) await prepareBulk(db, g.soulId, judged.get(g.soulId)!.unjudged);
  return judged;
}

function clusteringOf(db: SoulsDb, souls: readonly (readonly [number, readonly number[]])[]): ClusteringWork {
  const total = { shards: 0, pairs: 0 };
  for (const [soulId, unjudged] of souls) {
    const work = db.clusters.clusteringWork(soulId, unjudged);
    total.shards += work.shards;
    total.pairs += work.pairs;
  }
  return total;
}

/** A bulk build (a cold soul, a large batch) in slices; nothing for a soul whose partition needs only a few changes. */
function prepareBulk(db: SoulsDb, soulId: number, unjudged: readonly number[]): void | Promise<void> {
  return db.clusters.prepare(soulId, unjudged, contentsOf(db));
}

async function assessAll(db: SoulsDb, stats: readonly GateStats[], judged: ReadonlyMap<number, JudgedShards>, now: number): Promise<Map<number, Crystallization>> {
  const passing = new Set(await passingCheapGate(db, stats));
  const assessed = new Map<number, Crystallization>();
  for (const g of stats) {
    const split = judged.get(g.soulId);
    const clusters = passing.has(g) && split !== undefined ? await clusterCount(db, g.soulId, split) : null;
    assessed.set(g.soulId, assessCrystallization(g.soulId, g.after, g, clusters, db.settings, now));
  }
  return assessed;
}

export type ReadySoul = { soulId: number; priority: number; crystallization: Crystallization };

/** Non-dormant souls ready for refinement, most urgent first (priority descending, then id). */
export async function crystallizationReadiness(db: SoulsDb, options: CrystallizationOptions = {}): Promise<ReadySoul[]> {
  const now = db.clock.now();
  const stats = await db.store.gateStats('awake', expiryCutoff(db, now));
  const judged = await prepareClusters(db, [...stats.values()], stats.size, options);
  return [...(await assessAll(db, [...stats.values()], judged, now)).values()]
    .filter((c) => c.ready)
    .sort((a, b) => b.priority - a.priority || a.soulId - b.soulId)
    .map((c) => ({ soulId: c.soulId, priority: c.priority, crystallization: c }));
}
