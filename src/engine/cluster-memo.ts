import { clusterTexts, meetsThreshold, normalizeForSimilarity } from './similarity.ts';

/** From this many shards, a soul seen for the first time is clustered all at once rather than shard by shard. */
const BULK_BUILD = 24;

/**
 * Keeps, per soul, the single-linkage partition of the last shard set it was
 * asked about, and updates it incrementally: a shard added is compared with
 * the members (one pass), a shard removed re-splits only its own cluster.
 * Connectivity does not depend on the order of additions, so the result is
 * always exactly the partition of the set asked about; the memo only saves
 * work. Shard contents never change, so gram sets are cached by shard id.
 */
export class ClusterMemo {
  private readonly threshold: number;
  private readonly gramCapacity: number;
  private readonly dictionary = new Map<number | string, number>();
  private readonly grams = new Map<number, Int32Array>();
  private readonly texts = new Map<number, string>();
  private readonly souls = new Map<number, Partition>();

  constructor(threshold: number, gramCapacity = 100_000) {
    this.threshold = threshold;
    this.gramCapacity = gramCapacity;
  }

  /**
   * The number of clusters `shardIds` form (ascending ids), remembering the
   * partition for this soul. `contents` supplies texts of shards not cached yet.
   */
  clusterCount(soulId: number, shardIds: readonly number[], contents: (ids: number[]) => Map<number, string>): number {
    return this.sync(soulId, shardIds, contents).clusterCount();
  }

  /** The clusters `shardIds` (ascending) form, as lists of shard ids, each ascending, ordered by their smallest id. */
  partition(soulId: number, shardIds: readonly number[], contents: (ids: number[]) => Map<number, string>): number[][] {
    return this.sync(soulId, shardIds, contents).clusterIds();
  }

  private sync(soulId: number, shardIds: readonly number[], contents: (ids: number[]) => Map<number, string>): Partition {
    const remembered = this.souls.get(soulId);
    if (!remembered && shardIds.length >= BULK_BUILD) {
      const partition = this.buildAll(shardIds, contents);
      this.souls.set(soulId, partition);
      return partition;
    }
    const partition = remembered ?? new Partition();
    const wanted = new Set(shardIds);
    const removed = partition.memberIds().filter((id) => !wanted.has(id));
    const added = shardIds.filter((id) => !partition.has(id));
    const missing = added.filter((id) => !this.grams.has(id));
    if (missing.length > 0) this.cacheGrams(contents(missing));
    for (const id of removed) partition.remove(id, (a, b) => this.similar(a, b));
    for (const id of added) partition.add(id, this.grams.get(id)!, (a, b) => this.similar(a, b));
    this.souls.set(soulId, partition);
    this.evict();
    return partition;
  }

  /** The shards among `ids` whose texts are not cached: load them in one go and hand them to `remember`. */
  uncached(ids: Iterable<number>): number[] {
    return [...new Set(ids)].filter((id) => !this.grams.has(id));
  }

  remember(texts: ReadonlyMap<number, string>): void {
    this.cacheGrams(texts);
  }

  /** A cold start: the fast all-at-once clustering, then the partition remembered for incremental updates. */
  private buildAll(shardIds: readonly number[], contents: (ids: number[]) => Map<number, string>): Partition {
    const missing = this.uncached(shardIds);
    if (missing.length > 0) this.cacheGrams(contents(missing));
    const partition = new Partition();
    for (const cluster of clusterTexts(shardIds.map((id) => this.texts.get(id)!), this.threshold)) {
      partition.place(new Map(cluster.map((i) => [shardIds[i], this.grams.get(shardIds[i])!])));
    }
    this.evict();
    return partition;
  }

  /** Drops what is remembered for a soul (its partition), e.g. when it is no longer of interest. */
  forget(soulId: number): void {
    this.souls.delete(soulId);
  }

  private similar(a: Int32Array, b: Int32Array): boolean {
    const [small, large] = a.length <= b.length ? [a, b] : [b, a];
    // Jaccard ≥ t needs |small| ≥ t·|large|, and an overlap of at least t/(1+t)·(|a|+|b|).
    if (small.length < this.threshold * large.length * (1 - 1e-9)) return false;
    const needed = Math.ceil((this.threshold / (1 + this.threshold)) * (a.length + b.length) * (1 - 1e-9) - 1e-7);
    let i = 0;
    let j = 0;
    let common = 0;
    while (i < small.length && j < large.length) {
      if (common + Math.min(small.length - i, large.length - j) < needed) return false;
      if (small[i] === large[j]) {
        common++;
        i++;
        j++;
      } else if (small[i] < large[j]) i++;
      else j++;
    }
    return meetsThreshold(common, a.length, b.length, this.threshold);
  }

  private cacheGrams(texts: ReadonlyMap<number, string>): void {
    for (const [id, text] of texts) {
      this.grams.set(id, this.gramIds(text));
      this.texts.set(id, text);
    }
  }

  /** The text's trigram set (as trigramSet defines it) as sorted ids of this memo's dictionary. */
  private gramIds(text: string): Int32Array {
    const normalized = normalizeForSimilarity(text);
    const codes = /[\uD800-\uDFFF]/.test(normalized) ? Array.from(normalized, (c) => c.codePointAt(0)!) : null;
    const length = codes ? codes.length : normalized.length;
    if (length < 3) return Int32Array.of(this.idOf(`short:${normalized}`));
    const ids = new Int32Array(length - 2);
    let a = codes ? codes[0] : normalized.charCodeAt(0);
    let b = codes ? codes[1] : normalized.charCodeAt(1);
    for (let i = 0; i < ids.length; i++) {
      const c = codes ? codes[i + 2] : normalized.charCodeAt(i + 2);
      // Three code points below 2^10 pack into one number; a Map of numbers is much faster than one of strings.
      ids[i] = a < 1024 && b < 1024 && c < 1024 ? this.idOf((a << 20) | (b << 10) | c) : this.idOf(String.fromCodePoint(a, b, c));
      a = b;
      b = c;
    }
    ids.sort();
    let unique = 0;
    for (let i = 0; i < ids.length; i++) if (i === 0 || ids[i] !== ids[i - 1]) ids[unique++] = ids[i];
    return ids.slice(0, unique);
  }

  private idOf(key: number | string): number {
    let id = this.dictionary.get(key);
    if (id === undefined) {
      id = this.dictionary.size;
      this.dictionary.set(key, id);
    }
    return id;
  }

  /** Forgets the oldest cached gram sets beyond capacity, never those a partition still holds. */
  private evict(): void {
    if (this.grams.size <= this.gramCapacity) return;
    const held = new Set([...this.souls.values()].flatMap((p) => p.memberIds()));
    for (const id of this.grams.keys()) {
      if (this.grams.size <= this.gramCapacity) break;
      if (held.has(id)) continue;
      this.grams.delete(id);
      this.texts.delete(id);
    }
  }
}

/** Members grouped into clusters; each member keeps its gram set. */
class Partition {
  private readonly clusterOf = new Map<number, number>();
  private readonly clusters = new Map<number, Map<number, Int32Array>>();
  private nextCluster = 0;

  has(id: number): boolean {
    return this.clusterOf.has(id);
  }

  memberIds(): number[] {
    return [...this.clusterOf.keys()];
  }

  clusterCount(): number {
    return this.clusters.size;
  }

  clusterIds(): number[][] {
    return [...this.clusters.values()].map((members) => [...members.keys()].sort((a, b) => a - b)).sort((a, b) => a[0] - b[0]);
  }

  /** Joins the new member with every cluster holding a member similar to it. */
  add(id: number, grams: Int32Array, similar: (a: Int32Array, b: Int32Array) => boolean): void {
    const joined = new Map<number, Int32Array>([[id, grams]]);
    for (const [clusterId, members] of this.clusters) {
      for (const memberGrams of members.values()) {
        if (!similar(grams, memberGrams)) continue;
        for (const [memberId, g] of members) joined.set(memberId, g);
        this.clusters.delete(clusterId);
        break;
      }
    }
    this.place(joined);
  }

  /** Removes a member; its cluster's remaining members are regrouped by connectivity. */
  remove(id: number, similar: (a: Int32Array, b: Int32Array) => boolean): void {
    const clusterId = this.clusterOf.get(id)!;
    const members = this.clusters.get(clusterId)!;
    this.clusters.delete(clusterId);
    this.clusterOf.delete(id);
    members.delete(id);
    const pending = new Map(members);
    while (pending.size > 0) {
      const [seedId, seedGrams] = pending.entries().next().value!;
      pending.delete(seedId);
      const component = new Map([[seedId, seedGrams]]);
      const frontier = [seedGrams];
      while (frontier.length > 0) {
        const current = frontier.pop()!;
        for (const [otherId, otherGrams] of pending) {
          if (!similar(current, otherGrams)) continue;
          pending.delete(otherId);
          component.set(otherId, otherGrams);
          frontier.push(otherGrams);
        }
      }
      this.place(component);
    }
  }

  place(members: Map<number, Int32Array>): void {
    const clusterId = this.nextCluster++;
    this.clusters.set(clusterId, members);
    for (const memberId of members.keys()) this.clusterOf.set(memberId, clusterId);
  }
}
