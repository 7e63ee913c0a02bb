import type { ClusteringReport, EmbeddingLoader } from './cluster-memo.ts';
import type { Shard } from './model.ts';
import { decodeEmbedding } from './provided.ts';
import type { SimilarityMode } from './settings.ts';
import { clusterSteps } from './similarity-modes.ts';
import { runStepsSliced, timedSteps, yieldToEventLoop } from './slices.ts';

/** Rows loaded per statement when a report reads shards it has not seen. */
const LOAD_CHUNK = 200;

/** A Map that forgets its least recently used entries once their total weight passes `capacity`. */
class Lru<K, V> {
  private readonly entries = new Map<K, V>();
  private readonly capacity: number;
  private readonly weigh: (key: K, value: V) => number;
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

  set(key: K, value: V): void {
    this.delete(key);
    this.entries.set(key, value);
    this.weight += this.weigh(key, value);
    while (this.weight > this.capacity && this.entries.size > 1) this.delete(this.entries.keys().next().value!);
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
  /** At most 32 MiB of shard text (UTF-16), whatever the shards' sizes. */
  private readonly rows = new Lru<number, Shard>(16 * 2 ** 20, (_, shard) => shard.content.length + 64);
  private readonly partitions = new Lru<string, number[][]>(32);
  /** Representative shard of a cluster, by its member ids: at most 4 Mi characters of keys. */
  readonly representatives = new Lru<string, number>(4 * 2 ** 20, (key) => key.length + 16);
  private readonly threshold: number;
  private readonly mode: SimilarityMode;
  private readonly loadVectors: EmbeddingLoader;
  private readonly clustered: ClusteringReport;

  constructor(threshold: number, mode: SimilarityMode = 'trigram', loadVectors: EmbeddingLoader = () => new Map(), clustered: ClusteringReport = () => {}) {
    this.threshold = threshold;
    this.mode = mode;
    this.loadVectors = loadVectors;
    this.clustered = clustered;
  }

  /** The shards' stored vectors in order (null: none), for the provided mode; empty for the others. */
  vectors(shardIds: readonly number[]): (Float32Array | null)[] {
    if (this.mode !== 'provided' && this.mode !== 'semantic') return [];
    const loaded = this.loadVectors([...shardIds]);
    return shardIds.map((id) => {
      const bytes = loaded.get(id);
      return bytes === undefined ? null : decodeEmbedding(bytes);
    });
  }

  /** Partitions depend on stored vectors too, which semantic mode adds after a write: they are dropped when vectors land. */
  forgetPartitions(): void {
    this.partitions.clear();
  }

  /** The shards of `ids` (in that order), loading those not seen yet in chunks that hand the event loop back between them. */
  async shards(ids: readonly number[], load: (ids: number[]) => Map<number, Shard>): Promise<Shard[]> {
    const missing = ids.filter((id) => this.rows.get(id) === undefined);
    const loaded = new Map<number, Shard>();
    for (let start = 0; start < missing.length; start += LOAD_CHUNK) {
      if (start > 0) await yieldToEventLoop();
      for (const [id, shard] of load(missing.slice(start, start + LOAD_CHUNK))) loaded.set(id, shard);
    }
    for (const [id, shard] of loaded) this.rows.set(id, shard);
    return ids.map((id) => loaded.get(id) ?? this.rows.get(id)!).filter((s) => s !== undefined);
  }

  /** The partition (the similarity mode's) of these shards (ascending ids) as lists of shard ids, clustered in slices the first time. */
  async partition(shards: readonly Shard[]): Promise<number[][]> {
    const key = shards.map((s) => s.id).join(',');
    const known = this.partitions.get(key);
    if (known) return known;
    const texts = shards.map((s) => s.content);
    const steps = clusterSteps(this.mode, texts, this.threshold, this.vectors(shards.map((s) => s.id)));
    const clusters = await runStepsSliced(timedSteps(steps, (ms) => this.clustered(ms, shards.length)));
    const partition = clusters.map((members) => members.map((i) => shards[i].id));
    this.partitions.set(key, partition);
    return partition;
  }
}
