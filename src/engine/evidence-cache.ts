import type { Awaitable, ShardVersion } from '../store/store.ts';
import type { ClusteringReport, EmbeddingLoader } from './cluster-memo.ts';
import type { EvidenceAnalysis } from './evidence.ts';
import type { Shard } from './model.ts';
import { decodeEmbedding } from './provided.ts';
import type { SimilarityMode } from './settings.ts';
import { clusterSteps } from './similarity-modes.ts';
import { runStepsSliced, timedSteps, yieldToEventLoop } from './slices.ts';

/** Rows loaded per statement when a report reads shards it has not seen. */
const LOAD_CHUNK = 200;

/** About what an analysis holds in memory: its clusters (their member ids and times, sources, souls shared with), pairs and hints. */
function analysisBytes(analysis: EvidenceAnalysis): number {
  let bytes = 200 + 64 * (analysis.tensions.length + analysis.consolidationCandidates.length);
  for (const c of analysis.clusters) bytes += 200 + 16 * c.memberIds.length + 8 * c.opposes.length + 40 * c.sources.length + 48 * c.sharedWith.length;
  for (const h of analysis.possibleCounterEvidence) bytes += 96 + 2 * h.reason.length;
  bytes += 96 * analysis.suggestions.size;
  return bytes;
}

/** A Map that forgets its least recently used entries once their total weight passes `capacity`. */
class Lru<K, V> {
  private readonly entries = new Map<K, V>();
  readonly capacity: number;
  readonly weigh: (key: K, value: V) => number;
  private weight = 0;

  constructor(capacity: number, weigh: (key: K, value: V) => number = () => 1) {
    this.capacity = capacity;
    this.weigh = weigh;
  }

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  /** An entry heavier than the whole capacity is not kept: it would evict everything else and still not fit. */
  set(key: K, value: V): void {
    this.delete(key);
    const weight = this.weigh(key, value);
    if (weight > this.capacity) return;
    this.entries.set(key, value);
    this.weight += weight;
    while (this.weight > this.capacity) this.delete(this.entries.keys().next().value!);
  }

  clear(): void {
    this.entries.clear();
    this.weight = 0;
  }

  private delete(key: K): void {
    const old = this.entries.get(key);
    if (old === undefined) return;
    this.entries.delete(key);
    this.weight -= this.weigh(key, old);
  }
}

/**
 * What evidence reports reuse between reads. Every entry is keyed by the exact
 * shard ids it was computed from, and what it holds depends only on those
 * shards' content, source, time, tags and souls, which no write ever changes:
 * a write that changes a soul's shards changes the key, so nothing is ever
 * stale and a report is the same with or without the cache. What depends on
 * the clock (freshness, weights, trend, trait signals) is recomputed each time.
 */
export class EvidenceCache {
  /** Shard rows, weighed by their text (UTF-16) and tags: 9/16 of the budget. */
  private readonly rows: Lru<number, Shard>;
  /**
   * Partitions by their shards' ids, weighed by key and ids: 1/16 (scoped reports only; about a kilobyte a soul). A count bound (it was 32) made a dashboard of more
   * souls than that cluster every soul afresh on every request, the least recently used always being the next asked.
   */
  private readonly partitions: Lru<string, number[][]>;
  /** Representative shard of a cluster, by its member ids (a key of up to 2,000 ids): 1/8. */
  readonly representatives: Lru<string, number>;
  /**
   * Reports' analyses (clusters, trait pairs, counter-evidence hints) by a digest of their inputs: a quarter. Most of
   * a report's work: a dashboard asking again finds them, and only what depends on the clock is computed again.
   */
  readonly analyses: Lru<string, EvidenceAnalysis>;
  private readonly threshold: number;
  private readonly mode: SimilarityMode;
  private readonly loadVectors: EmbeddingLoader;
  private readonly clustered: ClusteringReport;

  constructor(threshold: number, mode: SimilarityMode = 'trigram', loadVectors: EmbeddingLoader = () => new Map(), clustered: ClusteringReport = () => {}, budgetBytes = 32 * 2 ** 20) {
    this.rows = new Lru(budgetBytes * 0.5625, (_, shard) => 2 * shard.content.length + 32 * shard.tags.length + 200);
    this.partitions = new Lru(budgetBytes * 0.0625, (key, partition) => 2 * key.length + 16 * partition.length + 8 * partition.reduce((n, ids) => n + ids.length, 0));
    this.representatives = new Lru(budgetBytes * 0.125, (key) => 2 * key.length + 64);
    this.analyses = new Lru(budgetBytes * 0.25, (key, analysis) => 2 * key.length + analysisBytes(analysis));
    this.threshold = threshold;
    this.mode = mode;
    this.loadVectors = loadVectors;
    this.clustered = clustered;
  }

  /** The shards' stored vectors in order (null: none), for the provided mode; empty for the others. */
  async vectors(shardIds: readonly number[]): Promise<(Float32Array | null)[]> {
    if (this.mode !== 'provided' && this.mode !== 'semantic') return [];
    const loaded = await this.loadVectors([...shardIds]);
    return shardIds.map((id) => {
      const bytes = loaded.get(id);
      return bytes === undefined ? null : decodeEmbedding(bytes);
    });
  }

  /** Forgets every analysis: the next report of each soul makes its own again (bench/price-list.ts times that). */
  forgetAnalyses(): void {
    this.analyses.clear();
  }

  /** Partitions depend on stored vectors too, which semantic mode adds after a write: they are dropped when vectors land. */
  forgetPartitions(): void {
    this.partitions.clear();
  }

  /**
   * The shards of `versions` (in that order), loading those not cached, or cached with another updatedAt (faded and
   * restored since), in chunks that hand the event loop back between them: every row answered is the row as it
   * stands. The answer is made of what this call found and loaded, never read back from the cache, which other reads
   * (or this one's own inserts) may have evicted meanwhile. One report keeps at most the rows' budget cached: those it
   * found, then those it loaded, in order, while they fit. A report larger than the cache so keeps the same leading
   * part on every read, where inserting all of it would evict its own rows and every read would miss them all.
   */
  async shards(versions: readonly ShardVersion[], load: (ids: number[]) => Awaitable<Map<number, Shard>>): Promise<Shard[]> {
    const found: (Shard | undefined)[] = new Array(versions.length);
    const missing: number[] = [];
    let held = 0;
    for (let i = 0; i < versions.length; i++) {
      const { id, updatedAt } = versions[i];
      const shard = this.rows.get(id);
      if (shard === undefined || shard.updatedAt !== updatedAt) missing.push(id);
      else {
        found[i] = shard;
        held += this.rows.weigh(id, shard);
      }
    }
    if (missing.length === 0) return found as Shard[];
    const loaded = new Map<number, Shard>();
    for (let start = 0; start < missing.length; start += LOAD_CHUNK) {
      if (start > 0) await yieldToEventLoop();
      for (const [id, shard] of await load(missing.slice(start, start + LOAD_CHUNK))) loaded.set(id, shard);
    }
    for (const id of missing) {
      const shard = loaded.get(id);
      if (shard === undefined) continue;
      held += this.rows.weigh(id, shard);
      if (held > this.rows.capacity) break;
      this.rows.set(id, shard);
    }
    const shards: Shard[] = [];
    for (let i = 0; i < versions.length; i++) {
      const shard = found[i] ?? loaded.get(versions[i].id);
      if (shard !== undefined) shards.push(shard);
    }
    return shards;
  }

  /** Whether the partition of these shards (ascending ids) is held: a scoped report that finds it clusters nothing. */
  holdsPartition(shardIds: readonly number[]): boolean {
    return this.partitions.get(shardIds.join(',')) !== undefined;
  }

  /** The partition (the similarity mode's) of these shards (ascending ids) as lists of shard ids, clustered in slices the first time. */
  async partition(shards: readonly Shard[]): Promise<number[][]> {
    const key = shards.map((s) => s.id).join(',');
    const known = this.partitions.get(key);
    if (known) return known;
    const texts = shards.map((s) => s.content);
    const steps = clusterSteps(this.mode, texts, this.threshold, await this.vectors(shards.map((s) => s.id)));
    const clusters = await runStepsSliced(timedSteps(steps, (ms) => this.clustered(ms, shards.length)));
    const partition = clusters.map((members) => members.map((i) => shards[i].id));
    this.partitions.set(key, partition);
    return partition;
  }
}
