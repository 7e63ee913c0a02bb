import { clusterVectorsSteps, dot, meetsCosine, PoolWeighing, squareLinkageSteps, textTerms, ThresholdComponents, vectorsOfTerms, type Linkage, type SparseVector, type TextTerms } from './lexical.ts';
import { clusterCompleteMixedSteps, decodeEmbedding, fallbackScale, mixedSquareSteps, mixSimilarity, VectorPairs, VECTOR_WEIGHT } from './provided.ts';
import { clusteringLinkages, type SimilarityMode } from './settings.ts';
import { clusterSteps } from './similarity-modes.ts';
import { meetsThreshold, normalizeForSimilarity } from './similarity.ts';
import type { Awaitable } from '../store/store.ts';
import { runSteps, runStepsSliced, timedSteps, yieldToEventLoop, type Steps } from './slices.ts';

/** From this many shards, a soul seen for the first time is clustered all at once rather than shard by shard. */
const BULK_BUILD = 24;

/** Texts loaded per statement when a read warms the memo in slices. */
const LOAD_CHUNK = 50;

/** Stored embeddings of shards, by id (only those that have one). */
export type EmbeddingLoader = (ids: number[]) => Awaitable<Map<number, Uint8Array>>;

/** Texts of shards, by id: the store's answer, at once (SQLite) or awaited (PostgreSQL). */
export type TextLoader = (ids: number[]) => Awaitable<ReadonlyMap<number, string>>;

/** Told of each clustering computed (not one answered from memory): how long it took and over how many shards. */
export type ClusteringReport = (ms: number, shards: number) => void;

/** The shards clustering would read and place, and the pairs of them it would compare. */
export type ClusteringWork = { shards: number; pairs: number };

const NO_TEXTS: ReadonlyMap<number, string> = new Map();
const NO_VECTORS: ReadonlyMap<number, Uint8Array> = new Map();
const decodedOrNull = (bytes: Uint8Array | undefined) => (bytes === undefined ? null : decodeEmbedding(bytes));

/** Stands for "text cached" in the lexical and provided modes, which keep no gram sets. */
const NO_GRAMS = new Int32Array(0);

/** What a cached shard costs beside its gram ids, text and vector: its Map entry, slot and string header. */
const ENTRY_BYTES = 100;

/** An eviction pass frees down to this share of the budget, so that passes (linear in what is cached) are rare. */
const EVICT_TO = 0.9;

/** Whether a mode compares shards by stored vectors (mixed with lexical); such modes keep their vectors' cosines per soul. */
export function usesVectors(mode: SimilarityMode): boolean {
  return mode !== 'trigram' && mode !== 'lexical';
}

/**
 * Keeps, per soul, the partition of the last shard set it was asked about.
 * Trigram (single linkage) updates it incrementally: a shard added is
 * compared with the members (one pass), a shard removed re-splits only its
 * own cluster. Connectivity does not depend on the order of additions, so the
 * result is always exactly the partition of the set asked about; the memo
 * only saves work. Lexical similarity weighs terms by their rarity in the
 * whole set (IDF), so any change of the set can change every pair: the
 * partition is recomputed whenever the set differs, and reused while it does
 * not; so is provided's, which mixes lexical in. What does not depend on the
 * set is kept: each shard's terms (ids of this memo's dictionary, renumbered
 * per pool so sums run in the same order as from scratch), and per soul the
 * cosines of its shards' vectors, so a shard added costs n vector cosines,
 * not n²/2. Shard contents and embeddings never change, so texts (gram sets,
 * terms, vectors) are cached by shard id. The partition is always exactly
 * clusterBy's for the set asked about.
 */
export class ClusterMemo {
  private readonly threshold: number;
  /** Bytes of shard data (gram ids, texts, vectors) to keep; the least recently clustered souls' partitions go beyond it. */
  private readonly budget: number;
  /** Bytes of the cached vectors; the shards' texts and gram ids are the store's. */
  private vectorBytes = 0;
  private readonly mode: SimilarityMode;
  private readonly dictionary = new GramDictionary();
  private readonly shards = new ShardStore();
  private readonly souls = new Map<number, Partition>();
  /** Trigram: per soul, the last set it was asked about and a side of it no other of its shards is similar to. */
  private readonly separations = new Map<number, Separation>();
  /** Complete linkage: per soul, two of its shards found less similar than the threshold. */
  private readonly pairsApart = new Map<number, [number, number]>();
  /** pairApart's map from dictionary ids to a set's own (every entry −1 between calls): see PoolWeighing. */
  private poolScratch = new Int32Array(0);
  private readonly vectors = new Map<number, Float32Array | null>();
  private readonly loadVectors: EmbeddingLoader;
  private readonly lexicalDictionary = new Map<string, number>();
  private readonly terms = new Map<number, TextTerms>();
  /** Per soul, its shards' vector cosines, in least recently used order, bounded by the same budget. */
  private readonly pairs = new Map<number, VectorPairs>();
  private readonly clustered: ClusteringReport;
  private scratch = new Int32Array(1024);

  constructor(threshold: number, budgetBytes = 64 * 2 ** 20, mode: SimilarityMode = 'trigram', loadVectors: EmbeddingLoader = () => new Map(), clustered: ClusteringReport = () => {}) {
    this.threshold = threshold;
    this.budget = budgetBytes;
    this.mode = mode;
    this.loadVectors = loadVectors;
    this.clustered = clustered;
  }

  /**
   * The number of clusters `shardIds` form (ascending ids), remembering the
   * partition for this soul. `contents` supplies texts of shards not cached yet.
   */
  clusterCount(soulId: number, shardIds: readonly number[], contents: TextLoader): Awaitable<number> {
    const partition = this.sync(soulId, shardIds, contents);
    return partition instanceof Promise ? partition.then((held) => this.count(soulId, shardIds, held)) : this.count(soulId, shardIds, partition);
  }

  private count(soulId: number, shardIds: readonly number[], partition: Partition): number {
    if (this.mode === 'trigram' && partition.clusterCount() >= 2) this.separations.set(soulId, { members: shardIds, side: new Set(partition.smallestCluster()) });
    else this.separations.delete(soulId);
    return partition.clusterCount();
  }

  /**
   * Whether `shardIds` (ascending) form two clusters or more, when that is cheap to know; false means not known,
   * never "fewer": count then. Saves clustering the soul on a write (the partition catches up when a count or the
   * clusters are asked for). Single linkage (trigram): by the side its last count left; complete linkage: by a pair.
   */
  stillSeparated(soulId: number, shardIds: readonly number[], contents: TextLoader): Awaitable<boolean> {
    const separated = this.separatedNow(soulId, shardIds);
    if (typeof separated === 'boolean') return separated;
    const loading = this.load(separated, contents);
    if (loading) return loading.then(() => this.stillSeparated(soulId, shardIds, contents));
    return this.separatedNow(soulId, shardIds) === true;
  }

  /** stillSeparated with what is held, or the shards whose texts (or vectors) it needs first. */
  private separatedNow(soulId: number, shardIds: readonly number[]): boolean | number[] {
    if (this.mode === 'trigram') return this.sideStillApart(soulId, shardIds);
    if (clusteringLinkages[this.mode] !== 'complete' || shardIds.length < 2) return false;
    const missing = this.lacking(shardIds);
    return missing.length > 0 ? missing : this.pairApart(soulId, shardIds);
  }

  /**
   * Single linkage: whether the side (the smallest cluster) the last count of this soul left is still apart. A
   * shard added that is similar to no member of the side joins the other clusters, and one removed cannot join
   * anything, so the side stays apart as long as it and the rest keep a member. Or the shards whose texts it needs.
   */
  private sideStillApart(soulId: number, shardIds: readonly number[]): boolean | number[] {
    const separation = this.separations.get(soulId);
    const partition = this.souls.get(soulId);
    if (separation === undefined || partition === undefined) return false;
    const { added, removed } = sortedDifference(separation.members, shardIds);
    // Called on every write past the gate, mostly with one shard added and none removed: nothing copied then.
    let side = separation.side;
    if (removed.length > 0) {
      const kept = new Set(side);
      for (const id of removed) kept.delete(id);
      side = kept;
    }
    if (side.size === 0 || side.size === shardIds.length) return false;
    const missing: number[] = [];
    for (const id of added) if (!this.shards.has(id)) missing.push(id);
    for (const id of side) if (!this.shards.has(id)) missing.push(id);
    if (missing.length > 0) return missing;
    for (const id of added) {
      const slot = this.shards.slot(id);
      for (const member of side) if (this.similar(slot, this.shards.slot(member))) return false;
    }
    this.separations.set(soulId, { members: shardIds, side });
    this.keep(soulId, partition);
    return true;
  }

  /**
   * Complete linkage: whether two of `shardIds` (ascending) are less similar than the threshold. Every merge's
   * link is the minimum of its members' pairs, so no cluster can hold both: two clusters or more. (With every
   * pair meeting it, all merge into one.) The pair found last for the soul is tried first, then the newest
   * shards, each with every older one; each pair weighed by the IDF of the whole set and mixed as clustering
   * mixes it, the same bits, so the answer is the one clustering would give. Linear in the set's terms (the
   * IDF), where clustering is quadratic; the search is bounded (PAIR_TRIES), so a set whose pairs all meet the
   * threshold, or nearly all, is left to clustering.
   */
  private pairApart(soulId: number, shardIds: readonly number[]): boolean {
    const pool = shardIds.map((id) => this.termsOf(id, this.shards.text(id)!));
    if (this.poolScratch.length < this.lexicalDictionary.size) this.poolScratch = new Int32Array(2 * this.lexicalDictionary.size).fill(-1);
    const weighing = new PoolWeighing(pool, this.lexicalDictionary.size, undefined, this.poolScratch);
    let apartPair: [number, number] | undefined;
    try {
      apartPair = this.findPairApart(soulId, shardIds, pool, weighing);
    } finally {
      weighing.release();
    }
    if (apartPair === undefined) this.pairsApart.delete(soulId);
    else this.pairsApart.set(soulId, apartPair);
    this.evict(soulId);
    return apartPair !== undefined;
  }

  /** pairApart's search: two shard ids of the set less similar than the threshold, or undefined. */
  private findPairApart(soulId: number, shardIds: readonly number[], pool: readonly TextTerms[], weighing: PoolWeighing): [number, number] | undefined {
    const n = shardIds.length;
    const lexical: (SparseVector | undefined)[] = new Array(n);
    const vectorOf = (i: number) => (lexical[i] ??= weighing.vector(pool[i]));
    const scale = usesVectors(this.mode) ? fallbackScale(this.mode === 'semantic' ? 'semantic' : 'provided') : 1;
    const apart = (i: number, j: number): boolean => {
      const cosine = dot(vectorOf(i), vectorOf(j));
      if (!usesVectors(this.mode)) return !meetsCosine(cosine, this.threshold);
      const [a, b] = this.vectorsOf([shardIds[i], shardIds[j]]);
      return !meetsCosine(mixSimilarity(cosine, a, b, VECTOR_WEIGHT, scale), this.threshold);
    };
    const last = this.pairsApart.get(soulId);
    if (last !== undefined) {
      const i = sortedIndexOf(shardIds, last[0]);
      const j = sortedIndexOf(shardIds, last[1]);
      if (i >= 0 && j >= 0 && apart(i, j)) return last;
    }
    let tries = PAIR_TRIES * n;
    for (let j = n - 1; j > 0 && tries > 0; j--) {
      for (let i = j - 1; i >= 0 && tries > 0; i--, tries--) if (apart(i, j)) return [shardIds[i], shardIds[j]];
    }
    return undefined;
  }

  /** The clusters `shardIds` (ascending) form, as lists of shard ids, each ascending, ordered by their smallest id. */
  partition(soulId: number, shardIds: readonly number[], contents: TextLoader): Awaitable<number[][]> {
    const partition = this.sync(soulId, shardIds, contents);
    return partition instanceof Promise ? partition.then((held) => held.clusterIds()) : partition.clusterIds();
  }

  /**
   * Loads (awaiting the store when it answers with promises) what clustering `shardIds` needs, then clusters with no
   * await in between, so that nothing another call does meanwhile (evicting, updating this soul) is seen halfway. A
   * store that answers at once (SQLite) is never awaited: the gate runs on every write, and each await costs.
   */
  private sync(soulId: number, shardIds: readonly number[], contents: TextLoader): Awaitable<Partition> {
    const remembered = this.souls.get(soulId);
    const needed = this.rebuilds(remembered, shardIds) ? shardIds : shardIds.filter((id) => !remembered?.has(id));
    const missing = this.lacking(needed);
    if (missing.length === 0) return this.syncHeld(soulId, shardIds);
    const loading = this.load(missing, contents);
    // Loaded at once, nothing else ran meanwhile: all is held now.
    return loading ? loading.then(() => this.sync(soulId, shardIds, contents)) : this.syncHeld(soulId, shardIds);
  }

  private syncHeld(soulId: number, shardIds: readonly number[]): Partition {
    const remembered = this.souls.get(soulId);
    if (this.rebuilds(remembered, shardIds)) {
      const partition = this.buildAll(soulId, shardIds);
      this.keep(soulId, partition);
      return partition;
    }
    const partition = remembered ?? new Partition();
    const wanted = new Set(shardIds);
    const removed = partition.memberIds().filter((id) => !wanted.has(id));
    const added = shardIds.filter((id) => !partition.has(id));
    const start = performance.now();
    for (const id of removed) partition.remove(id, (a, b) => this.similar(this.shards.slot(a), this.shards.slot(b)));
    for (const id of added) {
      const slot = this.shards.slot(id);
      partition.add(id, (other) => this.similar(slot, this.shards.slot(other)));
    }
    if (removed.length + added.length > 0) this.clustered(performance.now() - start, shardIds.length);
    this.keep(soulId, partition);
    return partition;
  }

  /** Remembers the soul's partition as the most recently used, then keeps the cache within its budget. */
  private keep(soulId: number, partition: Partition): void {
    this.souls.delete(soulId);
    this.souls.set(soulId, partition);
    this.evict(soulId);
  }

  /**
   * For reads: when clustering `shardIds` would be a bulk build (the soul is not remembered, or most
   * of them are new), does it in slices that hand the event loop back, loading texts in chunks, and
   * remembers the partition. The synchronous calls after it then only apply differences.
   */
  prepare(soulId: number, shardIds: readonly number[], contents: TextLoader): void | Promise<void> {
    if (this.rebuilds(this.souls.get(soulId), shardIds)) return this.build(soulId, shardIds, contents);
  }

  private async build(soulId: number, shardIds: readonly number[], contents: TextLoader): Promise<void> {
    const missing = this.lacking(shardIds);
    for (let start = 0; start < missing.length; start += LOAD_CHUNK) {
      await this.load(missing.slice(start, start + LOAD_CHUNK), contents);
      await yieldToEventLoop();
    }
    // Other calls may have evicted some meanwhile: those are read again, and taken from this answer, not the cache.
    const textless = shardIds.filter((id) => !this.shards.has(id));
    const vectorless = usesVectors(this.mode) ? shardIds.filter((id) => !this.vectors.has(id)) : [];
    const [fetched, fetchedVectors] = await Promise.all([textless.length > 0 ? contents(textless) : NO_TEXTS, vectorless.length > 0 ? this.loadVectors(vectorless) : NO_VECTORS]);
    // Held here: eviction during the slices below may forget some, which are then cached again from these.
    const texts = shardIds.map((id) => this.shards.text(id) ?? fetched.get(id)!);
    const vectors = usesVectors(this.mode) ? shardIds.map((id) => this.vectors.get(id) ?? decodedOrNull(fetchedVectors.get(id))) : [];
    const clusters = await runStepsSliced(timedSteps(this.poolSteps(soulId, shardIds, texts, vectors), (ms) => this.clustered(ms, shardIds.length)));
    // A partition remembered meanwhile is as exact for its own set as this one is for this set.
    const partition = new Partition();
    for (const cluster of clusters) partition.place(cluster.map((i) => shardIds[i]));
    for (const [i, id] of shardIds.entries()) {
      if (!this.shards.touch(id)) this.cache(id, texts[i]);
      if (usesVectors(this.mode)) this.cacheVector(id, vectors[i]);
    }
    this.keep(soulId, partition);
  }

  /**
   * Whether `shardIds` are clustered from scratch rather than by updating the remembered partition: for
   * lexical, whenever the set changed; for trigram, when most of a large set is new (then cheaper).
   */
  private rebuilds(remembered: Partition | undefined, shardIds: readonly number[]): boolean {
    if (this.mode !== 'trigram') return !remembered || !remembered.holdsExactly(shardIds);
    return shardIds.length >= BULK_BUILD && (!remembered || this.mostlyNew(remembered, shardIds));
  }

  /** Whether most of `shardIds` are not in the partition yet: clustering them all at once is then cheaper than one by one. */
  private mostlyNew(partition: Partition, shardIds: readonly number[]): boolean {
    let added = 0;
    for (const id of shardIds) if (!partition.has(id)) added++;
    return added * 2 > shardIds.length;
  }

  /** Whether a partition of the soul is remembered: clustering its shards again only adds and removes the changes. */
  remembers(soulId: number): boolean {
    return this.souls.has(soulId);
  }

  /**
   * What clustering `shardIds` would do now: nothing when the remembered partition holds exactly them; every shard and
   * every pair for a build from scratch; else each shard added or removed, against the rest. What a read is priced by.
   */
  clusteringWork(soulId: number, shardIds: readonly number[]): ClusteringWork {
    const remembered = this.souls.get(soulId);
    const n = shardIds.length;
    if (this.rebuilds(remembered, shardIds)) return { shards: n, pairs: (n * (n - 1)) / 2 };
    let changed = 0;
    const wanted = new Set(shardIds);
    for (const id of shardIds) if (!remembered?.has(id)) changed++;
    for (const id of remembered?.memberIds() ?? []) if (!wanted.has(id)) changed++;
    return { shards: changed, pairs: changed * n };
  }

  /** The shards among the lists' ids whose texts are not cached: load them in one go and hand them to `remember`. */
  uncached(lists: Iterable<readonly number[]>): number[] {
    // Most are cached: only the few missing are gathered (distinct, in first-seen order).
    const missing = new Set<number>();
    for (const ids of lists) for (const id of ids) if (!this.shards.has(id)) missing.add(id);
    return [...missing];
  }

  remember(texts: ReadonlyMap<number, string>): void | Promise<void> {
    return this.load([...texts.keys()], () => texts);
  }

  /** Of `ids`, those whose text (or, in vector modes, vector) is not held. */
  private lacking(ids: readonly number[]): number[] {
    const vectors = usesVectors(this.mode);
    return ids.filter((id) => !this.shards.has(id) || (vectors && !this.vectors.has(id)));
  }

  /** Holds the texts (and vectors) of `ids` not held: at once when the store answers at once, else once both arrive. */
  private load(ids: readonly number[], contents: TextLoader): void | Promise<void> {
    const textless = ids.filter((id) => !this.shards.has(id));
    const texts = textless.length > 0 ? contents(textless) : NO_TEXTS;
    const vectorless = usesVectors(this.mode) ? ids.filter((id) => !this.vectors.has(id)) : [];
    const vectors = vectorless.length > 0 ? this.loadVectors(vectorless) : NO_VECTORS;
    if (texts instanceof Promise || vectors instanceof Promise) return Promise.all([texts, vectors]).then(([t, v]) => this.hold(t, vectorless, v));
    this.hold(texts, vectorless, vectors);
  }

  private hold(texts: ReadonlyMap<number, string>, vectorless: readonly number[], vectors: ReadonlyMap<number, Uint8Array>): void {
    for (const [id, text] of texts) this.cache(id, text);
    for (const id of vectorless) this.cacheVector(id, decodedOrNull(vectors.get(id)));
  }

  /** A cold start: the fast all-at-once clustering, then the partition remembered for incremental updates. */
  private buildAll(soulId: number, shardIds: readonly number[]): Partition {
    const partition = new Partition();
    const texts = shardIds.map((id) => this.shards.text(id)!);
    const steps = timedSteps(this.poolSteps(soulId, shardIds, texts, this.vectorsOf(shardIds)), (ms) => this.clustered(ms, shardIds.length));
    for (const cluster of runSteps(steps)) partition.place(cluster.map((i) => shardIds[i]));
    return partition;
  }

  /**
   * clusterSteps(mode, texts, threshold, vectors) for a soul's shards, from what is kept: trigram clusters the
   * texts; lexical builds the pool's vectors from each shard's cached terms; vector modes also reuse the
   * soul's vector cosines. The same partition, bit for bit the same similarities, as computing it afresh.
   */
  private *poolSteps(soulId: number, shardIds: readonly number[], texts: readonly string[], vectors: (Float32Array | null)[]): Steps<number[][]> {
    if (this.mode === 'trigram') return yield* clusterSteps(this.mode, texts, this.threshold);
    if (shardIds.length === 0) return [];
    const linkage = clusteringLinkages[this.mode] as Linkage;
    const lexical = vectorsOfTerms(
      shardIds.map((id, i) => this.termsOf(id, texts[i])),
      this.lexicalDictionary.size,
    );
    if (!usesVectors(this.mode)) return yield* clusterVectorsSteps(lexical, this.threshold, linkage);
    const pairs = this.pairsOf(soulId);
    const position = new Map(shardIds.map((id, i) => [id, i]));
    pairs.sync(shardIds, (id) => vectors[position.get(id)!] ?? null);
    const slots = shardIds.map((id) => pairs.slot(id));
    const scale = fallbackScale(this.mode === 'semantic' ? 'semantic' : 'provided');
    if (linkage === 'complete') return yield* clusterCompleteMixedSteps(lexical, vectors, this.threshold, VECTOR_WEIGHT, scale, pairs.table(Int32Array.from(slots)));
    const components = new ThresholdComponents(shardIds.length, this.threshold);
    const square = yield* mixedSquareSteps(lexical, vectors, VECTOR_WEIGHT, (i, j) => pairs.cosine(slots[i], slots[j]), scale, components);
    return yield* squareLinkageSteps(shardIds.length, square, this.threshold, linkage, components);
  }

  private termsOf(id: number, text: string): TextTerms {
    let terms = this.terms.get(id);
    if (terms === undefined) {
      terms = textTerms(text, this.lexicalDictionary);
      this.terms.set(id, terms);
    }
    return terms;
  }

  /** The soul's vector cosines, made the most recently used; others are dropped, oldest first, beyond the budget. */
  private pairsOf(soulId: number): VectorPairs {
    const pairs = this.pairs.get(soulId) ?? new VectorPairs();
    this.pairs.delete(soulId);
    let total = pairs.bytes;
    for (const [id, other] of [...this.pairs].reverse()) {
      total += other.bytes;
      if (total > this.budget) this.pairs.delete(id);
    }
    this.pairs.set(soulId, pairs);
    return pairs;
  }

  /** The shards' stored vectors changed (semantic vectors landed): their cached vectors and cosines, and every partition holding them, are dropped. */
  forgetVectors(shardIds: readonly number[]): void {
    const changed = new Set(shardIds);
    for (const id of shardIds) this.cacheVector(id, undefined);
    for (const pairs of this.pairs.values()) pairs.release(shardIds);
    for (const [soulId, partition] of this.souls) if (partition.memberIds().some((id) => changed.has(id))) this.forget(soulId);
  }

  /** Drops what is remembered for a soul (its partition and vector cosines), e.g. when it is no longer of interest. */
  forget(soulId: number): void {
    this.souls.delete(soulId);
    this.separations.delete(soulId);
    this.pairsApart.delete(soulId);
    this.pairs.delete(soulId);
  }

  /** Whether the gram sets in two of the store's slots meet the threshold. */
  private similar(a: number, b: number): boolean {
    const { ids, starts, lengths } = this.shards;
    const aLength = lengths[a];
    const bLength = lengths[b];
    const aFirst = aLength <= bLength;
    const small = aFirst ? starts[a] : starts[b];
    const large = aFirst ? starts[b] : starts[a];
    const smallLength = aFirst ? aLength : bLength;
    const largeLength = aFirst ? bLength : aLength;
    // Jaccard ≥ t needs |small| ≥ t·|large|, and an overlap of at least t/(1+t)·(|a|+|b|).
    if (smallLength < this.threshold * largeLength * (1 - 1e-9)) return false;
    const needed = Math.ceil((this.threshold / (1 + this.threshold)) * (aLength + bLength) * (1 - 1e-9) - 1e-7);
    const smallEnd = small + smallLength;
    const largeEnd = large + largeLength;
    let i = small;
    let j = large;
    let common = 0;
    while (i < smallEnd && j < largeEnd) {
      if (common + Math.min(smallEnd - i, largeEnd - j) < needed) return false;
      if (ids[i] === ids[j]) {
        common++;
        i++;
        j++;
      } else if (ids[i] < ids[j]) i++;
      else j++;
    }
    return meetsThreshold(common, aLength, bLength, this.threshold);
  }

  private cache(id: number, text: string): void {
    this.uncache(id);
    const grams = this.gramsOf(text);
    this.shards.set(id, text, grams, this.dictionary.size() > 65_536);
  }

  /** Sets (or with undefined, forgets) the shard's cached vector, counting its bytes. */
  private cacheVector(id: number, vector: Float32Array | null | undefined): void {
    this.vectorBytes -= this.vectors.get(id)?.byteLength ?? 0;
    if (vector === undefined) this.vectors.delete(id);
    else {
      this.vectors.set(id, vector);
      this.vectorBytes += vector?.byteLength ?? 0;
    }
  }

  private uncache(id: number): void {
    this.shards.delete(id);
    this.terms.delete(id);
    this.cacheVector(id, undefined);
  }

  private cachedBytes(): number {
    return this.shards.bytes() + this.vectorBytes;
  }

  /** The shards' vectors in order (vector modes; empty otherwise), loading those not cached. */
  private vectorsOf(shardIds: readonly number[]): (Float32Array | null)[] {
    if (!usesVectors(this.mode)) return [];
    return shardIds.map((id) => this.vectors.get(id) ?? null);
  }

  /** The text's gram ids, ascending, in a scratch buffer the next call reuses (none outside trigram mode). */
  private gramsOf(text: string): Int32Array {
    return this.mode === 'trigram' ? this.gramIds(text) : NO_GRAMS;
  }

  /** The text's trigram set (as trigramSet defines it) as sorted ids of this memo's dictionary. */
  private gramIds(text: string): Int32Array {
    const normalized = normalizeForSimilarity(text);
    const codes = /[\uD800-\uDFFF]/.test(normalized) ? Array.from(normalized, (c) => c.codePointAt(0)!) : null;
    const length = codes ? codes.length : normalized.length;
    if (length < 3) {
      this.scratch[0] = this.dictionary.idOfText(`short:${normalized}`);
      return this.scratch.subarray(0, 1);
    }
    if (this.scratch.length < length - 2) this.scratch = new Int32Array(Math.max(length - 2, 2 * this.scratch.length));
    const ids = this.scratch.subarray(0, length - 2);
    let a = codes ? codes[0] : normalized.charCodeAt(0);
    let b = codes ? codes[1] : normalized.charCodeAt(1);
    for (let i = 0; i < ids.length; i++) {
      const c = codes ? codes[i + 2] : normalized.charCodeAt(i + 2);
      // Three code points below 2^10 pack into one number, looked up without a string.
      ids[i] = a < 1024 && b < 1024 && c < 1024 ? this.dictionary.idOfPacked((a << 20) | (b << 10) | c) : this.dictionary.idOfText(String.fromCodePoint(a, b, c));
      a = b;
      b = c;
    }
    return this.dictionary.sortedSet(ids);
  }

  /**
   * Past the budget: forgets the oldest cached shards no partition holds, then the partitions of the least
   * recently clustered souls (never `current`'s) with the shards only they held. A forgotten partition is
   * rebuilt from the store when its soul is clustered again; nothing but the work differs.
   */
  private evict(current: number): void {
    if (this.cachedBytes() <= this.budget) return;
    const target = this.budget * EVICT_TO;
    const holders = new Map<number, number>();
    for (const partition of this.souls.values()) for (const id of partition.memberIds()) holders.set(id, (holders.get(id) ?? 0) + 1);
    for (const id of [...this.shards.shardIds()]) {
      if (this.cachedBytes() <= target) return;
      if (!holders.has(id)) this.uncache(id);
    }
    for (const [soulId, partition] of [...this.souls]) {
      if (this.cachedBytes() <= target) return;
      if (soulId === current) continue;
      this.forget(soulId);
      for (const id of partition.memberIds()) {
        const left = holders.get(id)! - 1;
        if (left > 0) holders.set(id, left);
        else this.uncache(id);
      }
    }
  }
}

/**
 * Trigrams to dense ids (0, 1, 2 … in order of first sight). Packed trigrams (three code points below 2^10, one
 * number) live in an open-addressing table of two typed arrays, compact and without a Map entry each; any other
 * key in a Map. A text's ids come out as an ascending set through a bitmap over the ids, cheaper than sorting them.
 */
class GramDictionary {
  private keys = new Int32Array(1024).fill(EMPTY_KEY);
  private values = new Int32Array(1024);
  /** 32 minus log2 of the table's length: the hash's top bits pick the slot. */
  private shift = 22;
  private packedCount = 0;
  private readonly texts = new Map<string, number>();
  private bits = new Int32Array(64);

  size(): number {
    return this.packedCount + this.texts.size;
  }

  idOfPacked(key: number): number {
    const mask = this.keys.length - 1;
    for (let at = hashSlot(key, this.shift); ; at = (at + 1) & mask) {
      const found = this.keys[at];
      if (found === key) return this.values[at];
      if (found === EMPTY_KEY) {
        const id = this.size();
        this.keys[at] = key;
        this.values[at] = id;
        if (++this.packedCount * 2 > this.keys.length) this.grow();
        return id;
      }
    }
  }

  idOfText(key: string): number {
    let id = this.texts.get(key);
    if (id === undefined) {
      id = this.size();
      this.texts.set(key, id);
    }
    return id;
  }

  /** The distinct ids of `ids`, ascending, written over its start; a bitmap when their span is a few words per id, else a sort. */
  sortedSet(ids: Int32Array): Int32Array {
    let min = ids[0];
    let max = ids[0];
    for (let i = 1; i < ids.length; i++) {
      if (ids[i] < min) min = ids[i];
      else if (ids[i] > max) max = ids[i];
    }
    const first = min >> 5;
    const last = max >> 5;
    if (last - first > 16 * ids.length + 256) {
      ids.sort();
      let unique = 0;
      for (let i = 0; i < ids.length; i++) if (i === 0 || ids[i] !== ids[i - 1]) ids[unique++] = ids[i];
      return ids.subarray(0, unique);
    }
    if (this.bits.length <= last) this.bits = new Int32Array(Math.max(last + 1, 2 * this.bits.length));
    const bits = this.bits;
    for (let i = 0; i < ids.length; i++) bits[ids[i] >> 5] |= 1 << (ids[i] & 31);
    let count = 0;
    for (let word = first; word <= last; word++) {
      let set = bits[word];
      if (set === 0) continue;
      bits[word] = 0;
      while (set !== 0) {
        const lowest = set & -set;
        ids[count++] = (word << 5) | (31 - Math.clz32(lowest));
        set ^= lowest;
      }
    }
    return ids.subarray(0, count);
  }

  private grow(): void {
    const { keys, values } = this;
    this.keys = new Int32Array(keys.length * 2).fill(EMPTY_KEY);
    this.values = new Int32Array(keys.length * 2);
    this.shift--;
    const mask = this.keys.length - 1;
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] === EMPTY_KEY) continue;
      let at = hashSlot(keys[i], this.shift);
      while (this.keys[at] !== EMPTY_KEY) at = (at + 1) & mask;
      this.keys[at] = keys[i];
      this.values[at] = values[i];
    }
  }
}

/** Packed trigrams are below 2^30: never this. */
const EMPTY_KEY = -1;

/** Fibonacci hashing: the top bits of the key times 2^32 / φ (low bits would follow the last code point alone). */
const hashSlot = (key: number, shift: number): number => Math.imul(key, 0x9e3779b1) >>> shift;

/** Pairs tried per shard of a set, on average, for one less similar than the threshold before clustering decides. */
const PAIR_TRIES = 4;

/** The position of `id` in ascending `ids`, or −1. */
function sortedIndexOf(ids: readonly number[], id: number): number {
  let lo = 0;
  let hi = ids.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid] === id) return mid;
    if (ids[mid] < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** A soul's last asked-about shards (ascending) and a side of them no other of them is similar to. */
type Separation = { members: readonly number[]; side: ReadonlySet<number> };

/** What `to` adds to and removes from `from`, both ascending. */
function sortedDifference(from: readonly number[], to: readonly number[]): { added: number[]; removed: number[] } {
  const added: number[] = [];
  const removed: number[] = [];
  let i = 0;
  let j = 0;
  while (i < from.length || j < to.length) {
    if (j === to.length || (i < from.length && from[i] < to[j])) removed.push(from[i++]);
    else if (i === from.length || to[j] < from[i]) added.push(to[j++]);
    else {
      i++;
      j++;
    }
  }
  return { added, removed };
}

/** The cluster id of a member alone in its cluster. */
const ALONE = -1;

/**
 * Members grouped into clusters, by id. At the usual thresholds most members are alone in their cluster: those
 * are only marked so, and clusters of two or more are plain lists (the memo holds every member's gram ids).
 */
class Partition {
  private readonly clusterOf = new Map<number, number>();
  private readonly clusters = new Map<number, number[]>();
  private alone = 0;
  private nextCluster = 0;

  has(id: number): boolean {
    return this.clusterOf.has(id);
  }

  memberIds(): number[] {
    return [...this.clusterOf.keys()];
  }

  /** Whether the members are exactly `ids` (distinct ids). */
  holdsExactly(ids: readonly number[]): boolean {
    return ids.length === this.clusterOf.size && ids.every((id) => this.clusterOf.has(id));
  }

  clusterCount(): number {
    return this.clusters.size + this.alone;
  }

  /** The members of a smallest cluster. */
  smallestCluster(): number[] {
    if (this.alone > 0) {
      for (const [id, clusterId] of this.clusterOf) if (clusterId === ALONE) return [id];
    }
    let smallest: number[] | undefined;
    for (const members of this.clusters.values()) if (smallest === undefined || members.length < smallest.length) smallest = members;
    return smallest === undefined ? [] : [...smallest];
  }

  clusterIds(): number[][] {
    const clusters = [...this.clusters.values()].map((members) => [...members].sort((a, b) => a - b));
    for (const [id, clusterId] of this.clusterOf) if (clusterId === ALONE) clusters.push([id]);
    return clusters.sort((a, b) => a[0] - b[0]);
  }

  /** Joins the new member with every cluster holding a member similar to it. */
  add(id: number, similarTo: (other: number) => boolean): void {
    const joined = [id];
    for (const [clusterId, members] of this.clusters) {
      if (!members.some(similarTo)) continue;
      for (const member of members) joined.push(member);
      this.clusters.delete(clusterId);
    }
    if (this.alone > 0) {
      for (const [member, clusterId] of this.clusterOf) {
        if (clusterId !== ALONE || !similarTo(member)) continue;
        joined.push(member);
        this.alone--;
      }
    }
    this.place(joined);
  }

  /** Removes a member; its cluster's remaining members are regrouped by connectivity. */
  remove(id: number, similar: (a: number, b: number) => boolean): void {
    const clusterId = this.clusterOf.get(id)!;
    this.clusterOf.delete(id);
    if (clusterId === ALONE) {
      this.alone--;
      return;
    }
    const pending = new Set(this.clusters.get(clusterId)!);
    this.clusters.delete(clusterId);
    pending.delete(id);
    for (const seed of pending) {
      pending.delete(seed);
      const component = [seed];
      for (let next = 0; next < component.length; next++) {
        const current = component[next];
        for (const other of pending) {
          if (!similar(current, other)) continue;
          pending.delete(other);
          component.push(other);
        }
      }
      this.place(component);
    }
  }

  place(members: number[]): void {
    if (members.length === 1) {
      this.clusterOf.set(members[0], ALONE);
      this.alone++;
      return;
    }
    const clusterId = this.nextCluster++;
    this.clusters.set(clusterId, members);
    for (const memberId of members) this.clusterOf.set(memberId, clusterId);
  }
}

/**
 * The memo's cached shards: each one's text and sorted gram ids, by shard id. Every shard's ids lie in one shared
 * array (16 bits each while the dictionary has at most 65,536 ids, then 32), a slice per shard found by its slot:
 * a typed array per shard cost some 200 bytes of object headers and native bookkeeping beside its ~240 bytes of
 * ids. Slots stay put while cached; the slices move when the array is compacted or widened, never during a
 * comparison (only `set` moves them).
 */
class ShardStore {
  ids: Uint16Array | Int32Array = new Uint16Array(4096);
  starts: Int32Array = new Int32Array(256);
  lengths: Int32Array = new Int32Array(256);
  private readonly slots = new Map<number, number>();
  private texts: string[] = [];
  private readonly freeSlots: number[] = [];
  private nextSlot = 0;
  /** The end of the ids written so far, and how many of those belong to no cached shard any more. */
  private end = 0;
  private holes = 0;
  private liveIds = 0;
  private textChars = 0;

  has(id: number): boolean {
    return this.slots.has(id);
  }

  /** The shard's slot; it must be cached. */
  slot(id: number): number {
    return this.slots.get(id)!;
  }

  text(id: number): string | undefined {
    const slot = this.slots.get(id);
    return slot === undefined ? undefined : this.texts[slot];
  }

  /** Cached shard ids, the least recently cached (or touched) first. */
  shardIds(): IterableIterator<number> {
    return this.slots.keys();
  }

  /** Makes a cached shard the most recently cached; false if it is not cached. */
  touch(id: number): boolean {
    const slot = this.slots.get(id);
    if (slot === undefined) return false;
    this.slots.delete(id);
    this.slots.set(id, slot);
    return true;
  }

  /** What the cached shards weigh: their ids at the array's width, their texts, and a slot and a Map entry each. */
  bytes(): number {
    return this.liveIds * this.ids.BYTES_PER_ELEMENT + 2 * this.textChars + this.slots.size * ENTRY_BYTES;
  }

  /** Caches a shard (not cached now) with its gram ids, copied; `wide`: some id may not fit 16 bits. */
  set(id: number, text: string, grams: Int32Array, wide: boolean): void {
    if (wide && this.ids instanceof Uint16Array) this.ids = Int32Array.from(this.ids);
    this.reserve(grams.length);
    const slot = this.freeSlots.pop() ?? this.newSlot();
    this.ids.set(grams, this.end);
    this.starts[slot] = this.end;
    this.lengths[slot] = grams.length;
    this.end += grams.length;
    this.liveIds += grams.length;
    this.texts[slot] = text;
    this.textChars += text.length;
    this.slots.set(id, slot);
  }

  delete(id: number): void {
    const slot = this.slots.get(id);
    if (slot === undefined) return;
    this.slots.delete(id);
    this.holes += this.lengths[slot];
    this.liveIds -= this.lengths[slot];
    this.textChars -= this.texts[slot].length;
    this.texts[slot] = '';
    this.lengths[slot] = 0;
    this.freeSlots.push(slot);
  }

  private newSlot(): number {
    const slot = this.nextSlot++;
    if (slot === this.starts.length) {
      this.starts = grown(this.starts, 2 * slot);
      this.lengths = grown(this.lengths, 2 * slot);
    }
    return slot;
  }

  /** Room for `count` more ids at the end: the cached shards' ids, holes left out, into an array of at least twice what they then need. */
  private reserve(count: number): void {
    if (this.end + count <= this.ids.length) return;
    const live = this.end - this.holes;
    const size = Math.max(this.ids.length, 2 * (live + count));
    const ids = this.ids instanceof Uint16Array ? new Uint16Array(size) : new Int32Array(size);
    let end = 0;
    for (const slot of this.slots.values()) {
      const start = this.starts[slot];
      const length = this.lengths[slot];
      ids.set(this.ids.subarray(start, start + length), end);
      this.starts[slot] = end;
      end += length;
    }
    this.ids = ids;
    this.end = end;
    this.holes = 0;
  }
}

function grown(array: Int32Array, size: number): Int32Array {
  const larger = new Int32Array(size);
  larger.set(array);
  return larger;
}
