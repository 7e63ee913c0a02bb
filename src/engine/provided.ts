/**
 * The `provided` similarity: the caller supplies an embedding per shard, and
 * two shards that both have one are compared by
 *   VECTOR_WEIGHT · max(0, cosine) + (1 − VECTOR_WEIGHT) · lexical.
 * A pair in which either shard has no vector (dropped before the mode was on,
 * or without one) is compared lexically, put on this mode's scale: it meets
 * the provided default threshold exactly when it meets lexical's own. Traits
 * have no vectors, so every comparison with a principle stays plain lexical.
 * Vectors are stored L2-normalized as little-endian Float32; every sum runs
 * in index order, so the same input gives the same bits.
 */
import { ValidationError } from './errors.ts';
import { chainLinkageSteps, cosineMatrixSteps, lexicalVectors, lowerCosineSteps, mirrorLower, squareLinkageSteps, ThresholdComponents, THRESHOLD_TOLERANCE, type Linkage, type SparseVector } from './lexical.ts';
import { defaultBounds, defaultClusteringThresholds } from './settings.ts';
import type { Steps } from './slices.ts';

/**
 * Share of a vector pair's similarity that comes from the vectors; chosen with the default threshold on
 * synthetic vectors over the paraphrase corpus (bench/provided.ts, docs/performance.md, "Similarity modes").
 */
export const VECTOR_WEIGHT = 0.8;

/**
 * A lexical similarity put on the provided scale: it meets provided's default threshold exactly when it meets
 * lexical's. Not capped at 1, so a pool without vectors is clustered exactly as lexical clusters it (average
 * linkage commutes with scaling); such values only ever feed clustering and the choice of representatives.
 */
export function fallbackScale(mode: 'provided' | 'semantic'): number {
  return defaultClusteringThresholds[mode] / defaultClusteringThresholds.lexical;
}

const FALLBACK_SCALE = fallbackScale('provided');

export function fallbackSimilarity(lexical: number, scale = FALLBACK_SCALE): number {
  return lexical * scale;
}

/**
 * Checks an embedding and returns it L2-normalized as stored bytes (Float32, little-endian).
 * Refuses a non-list, an empty or too long list (over maxEmbeddingDimension), a non-finite number and the all-zero vector.
 */
export function encodeEmbedding(field: string, values: unknown, maxDimension = defaultBounds.maxEmbeddingDimension): Uint8Array {
  if (!Array.isArray(values)) throw new ValidationError(field, 'must be a list of numbers');
  if (values.length === 0) throw new ValidationError(field, 'must not be empty');
  if (values.length > maxDimension) throw new ValidationError(field, `must have at most ${maxDimension} numbers (maxEmbeddingDimension), got ${values.length}`);
  let largest = 0;
  values.forEach((v, i) => {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new ValidationError(field, `must hold finite numbers only; position ${i} is ${JSON.stringify(v) ?? String(v)}`);
    largest = Math.max(largest, Math.abs(v));
  });
  if (largest === 0) throw new ValidationError(field, 'must not be all zeros (it has no direction)');
  // Scaled by the largest magnitude first, so squares neither overflow (1e200) nor vanish (1e-200).
  let sum = 0;
  for (const v of values as number[]) sum += (v / largest) * (v / largest);
  const norm = Math.sqrt(sum);
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  (values as number[]).forEach((v, i) => view.setFloat32(i * 4, v / largest / norm, true));
  return bytes;
}

export function decodeEmbedding(bytes: Uint8Array): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const vector = new Float32Array(bytes.byteLength / 4);
  for (let i = 0; i < vector.length; i++) vector[i] = view.getFloat32(i * 4, true);
  return vector;
}

/** Cosine of two stored (normalized) vectors, negatives as 0: in [0, 1], rounded to Float32 (so a cache of Float32 cosines is exact). */
export function vectorCosine(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new RangeError(`embeddings of different dimensions: ${a.length} and ${b.length}`);
  // Four running sums in a fixed order: faster than one, and the same bits on every run.
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const n = a.length;
  const end = n - (n % 4);
  for (let i = 0; i < end; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (let i = end; i < n; i++) s0 += a[i] * b[i];
  return Math.fround(Math.min(1, Math.max(0, s0 + s1 + (s2 + s3))));
}

/**
 * The provided similarity of two shards given their lexical cosine and vectors (null: none), as clustering mixes
 * it, the same bits. `weight` is for the bench's sweep; `scale` is the mode's fallback scale (fallbackScale).
 */
export function mixSimilarity(lexical: number, a: Float32Array | null, b: Float32Array | null, weight = VECTOR_WEIGHT, scale = FALLBACK_SCALE): number {
  if (a === null || b === null) return fallbackSimilarity(lexical, scale);
  return weight * vectorCosine(a, b) + (1 - weight) * Math.min(1, lexical);
}

/** Pairwise provided similarities of the texts (condensed upper-triangular, as cosineMatrixSteps): lexical cosines, then mixed in place. */
export function* providedMatrixSteps(texts: readonly string[], vectors: readonly (Float32Array | null)[], weight = VECTOR_WEIGHT): Steps<Float64Array> {
  const n = texts.length;
  const matrix = yield* cosineMatrixSteps(lexicalVectors(texts));
  let at = 0;
  for (let i = 0; i < n; i++) {
    yield;
    for (let j = i + 1; j < n; j++, at++) matrix[at] = mixSimilarity(matrix[at], vectors[i] ?? null, vectors[j] ?? null, weight);
  }
  return matrix;
}

/**
 * Pairwise provided similarities as a full symmetric n×n matrix (as cosineSquareSteps lays them out): lexical
 * cosines of `lexical`, mixed in place with the vectors' cosines, which `cosine(i, j)` supplies (a memo's cache)
 * or which are computed here. Every entry equals providedMatrixSteps's bit for bit. `components`, if given, are
 * joined row by row over the mixed similarities.
 */
export function* mixedSquareSteps(
  lexical: readonly SparseVector[],
  vectors: readonly (Float32Array | null)[],
  weight = VECTOR_WEIGHT,
  cosine: (i: number, j: number) => number = (i, j) => vectorCosine(vectors[i]!, vectors[j]!),
  scale = FALLBACK_SCALE,
  components?: ThresholdComponents,
): Steps<Float64Array> {
  const n = lexical.length;
  const square = yield* lowerCosineSteps(lexical);
  for (let j = 1; j < n; j++) {
    yield;
    const b = vectors[j] ?? null;
    const row = j * n;
    for (let i = 0; i < j; i++) {
      const a = vectors[i] ?? null;
      square[row + i] = a === null || b === null ? fallbackSimilarity(square[row + i], scale) : weight * cosine(i, j) + (1 - weight) * Math.min(1, square[row + i]);
    }
    components?.joinRow(square, n, j);
  }
  mirrorLower(square, n);
  return square;
}

/** Provided clustering: exact average or complete linkage (lexical's NN-chain) over the mixed similarities. */
export function* clusterProvidedSteps(
  texts: readonly string[],
  vectors: readonly (Float32Array | null)[],
  threshold: number,
  weight = VECTOR_WEIGHT,
  linkage: Linkage = 'average',
  scale = FALLBACK_SCALE,
): Steps<number[][]> {
  if (texts.length === 0) return [];
  if (linkage === 'complete' && sameDimension(vectors)) return yield* clusterCompleteMixedSteps(lexicalVectors(texts), vectors, threshold, weight, scale);
  const components = new ThresholdComponents(texts.length, threshold);
  const square = yield* mixedSquareSteps(lexicalVectors(texts), vectors, weight, undefined, scale, components);
  return yield* squareLinkageSteps(texts.length, square, threshold, linkage, components);
}

/** Whether the vectors present all have one dimension (else vectorCosine's RangeError is for the dense path to raise). */
function sameDimension(vectors: readonly (Float32Array | null)[]): boolean {
  let d = -1;
  for (const v of vectors) {
    if (!v) continue;
    if (d >= 0 && v.length !== d) return false;
    d = v.length;
  }
  return true;
}

/** The vectors' cosines kept by a memo: pair (i, j) of the pool is cosines[slots[i]·stride + slots[j]] (symmetric). */
export type CosineTable = { cosines: Float32Array; stride: number; slots: Int32Array };

/**
 * Complete linkage over the mixed similarities (mixedSquareSteps's values, bit for bit) without the n×n matrix:
 * rows are computed one at a time (lexical through postings into one reused row, vector cosines from `table`
 * or from the vectors packed in one Float32Array, summed as vectorCosine sums) and only the pairs meeting the
 * threshold are kept, joined into connected components. Complete linkage merges only along such pairs and a
 * link below the threshold stays below it (a minimum), so each component is clustered by the same NN-chain on
 * its own small matrix, with every pair below the threshold as −∞: the chain picks and merges exactly as over
 * the full matrix. Time stays n²/2 mixed pairs (each pair must be looked at once), memory is linear plus the
 * kept pairs; only a component's own matrix is quadratic, in its size.
 */
export function* clusterCompleteMixedSteps(
  lexical: readonly SparseVector[],
  vectors: readonly (Float32Array | null)[],
  threshold: number,
  weight = VECTOR_WEIGHT,
  scale = FALLBACK_SCALE,
  table?: CosineTable,
): Steps<number[][]> {
  const n = lexical.length;
  if (n === 0) return [];
  const rows = new MixedRows(lexical, vectors, threshold, weight, scale, table);
  for (let j = 1; j < n; j++) {
    yield;
    rows.row(j);
  }
  const groups = rows.components.groups();
  const position = new Int32Array(n);
  const groupOf = new Int32Array(n);
  groups.forEach((members, g) => members.forEach((i, p) => ((position[i] = p), (groupOf[i] = g))));
  const matrices = groups.map((members) => (members.length === 1 ? null : new Float64Array(members.length * members.length).fill(-Infinity)));
  for (let k = 0; k < rows.count; k++) {
    const a = rows.first[k];
    const b = rows.second[k];
    const m = groups[groupOf[a]].length;
    const sub = matrices[groupOf[a]]!;
    sub[position[a] * m + position[b]] = rows.values[k];
    sub[position[b] * m + position[a]] = rows.values[k];
  }
  const clusters: number[][] = [];
  for (const [g, members] of groups.entries()) {
    const sub = matrices[g];
    if (sub === null) clusters.push(members);
    else for (const cluster of yield* chainLinkageSteps(members.length, sub, threshold, 'complete')) clusters.push(cluster.map((p) => members[p]));
  }
  return clusters.sort((x, y) => x[0] - y[0]);
}

/** clusterCompleteMixedSteps's rows: each pair (i, j), i < j, mixed once; those meeting the threshold kept and joined. */
class MixedRows {
  readonly components: ThresholdComponents;
  first = new Int32Array(1024);
  second = new Int32Array(1024);
  values = new Float64Array(1024);
  count = 0;
  private readonly lexical: readonly SparseVector[];
  private readonly has: Uint8Array;
  /** Every shard has a vector: a pair's lexical cosine is then only needed when its vectors' cosine reaches `cut`. */
  private readonly allVectors: boolean;
  /**
   * A pair's mixed value is at most weight · cosine + (1 − weight) (lexical at most 1, and rounding is monotonic),
   * so only vector cosines from `cut` on can meet the bar (cut a little lower than exact, so no candidate is lost).
   */
  private readonly cut: number;
  /** One row's lexical weights by term id (0 elsewhere), when every shard has a vector. */
  private readonly dense: Float64Array;
  private readonly bar: number;
  private readonly weight: number;
  private readonly scale: number;
  private readonly table: CosineTable | undefined;
  /** The vectors packed in one Float32Array, a view per shard (an empty one for a shard without). */
  private readonly views: Float32Array[];
  private readonly dimension: number;
  private readonly lex: Float64Array;
  private readonly touched: Int32Array;
  /** Row j + 1 marks the pairs its lexical row touched, to clear only those. */
  private readonly touchedIn: Int32Array;
  private readonly postings: Array<{ docs: number[]; weights: number[] } | undefined> = [];

  constructor(lexical: readonly SparseVector[], vectors: readonly (Float32Array | null)[], threshold: number, weight: number, scale: number, table: CosineTable | undefined) {
    const n = lexical.length;
    this.lexical = lexical;
    this.components = new ThresholdComponents(n, threshold);
    this.bar = threshold * (1 - THRESHOLD_TOLERANCE);
    this.weight = weight;
    this.scale = scale;
    this.table = table;
    this.has = Uint8Array.from({ length: n }, (_, i) => (vectors[i] ? 1 : 0));
    this.allVectors = this.has.every((h) => h === 1);
    let terms = 0;
    for (const v of lexical) for (let k = 0; k < v.ids.length; k++) terms = Math.max(terms, v.ids[k] + 1);
    this.dense = new Float64Array(this.allVectors ? terms : 0);
    this.cut = (this.bar - (1 - weight)) / weight - 1e-7;
    this.dimension = vectors.find((v) => v)?.length ?? 0;
    const packed = new Float32Array(table === undefined ? n * this.dimension : 0);
    if (table === undefined) for (let i = 0; i < n; i++) if (vectors[i]) packed.set(vectors[i]!, i * this.dimension);
    this.views = Array.from({ length: table === undefined ? n : 0 }, (_, i) => packed.subarray(i * this.dimension, (i + 1) * this.dimension));
    this.lex = new Float64Array(n);
    this.touched = new Int32Array(n);
    this.touchedIn = new Int32Array(n);
  }

  row(j: number): void {
    if (this.allVectors) {
      if (this.table !== undefined) this.tableRowByDots(j, this.table);
      else this.vectorRowByDots(j);
      return;
    }
    const { has, lex, bar, scale } = this;
    const touchedCount = this.lexicalRow(j);
    if (has[j] === 0) {
      for (let i = 0; i < j; i++) if (lex[i] * scale >= bar) this.keep(i, j, lex[i] * scale);
    } else if (this.table !== undefined) this.tableRow(j, this.table, touchedCount);
    else this.vectorRow(j);
    for (let t = 0; t < touchedCount; t++) lex[this.touched[t]] = 0;
  }

  /** Pair (j, i) for every i < j summed over j's terms in ascending id order, as lowerCosineSteps sums it; returns how many entries it touched. */
  private lexicalRow(j: number): number {
    const { postings, lex, touched, touchedIn } = this;
    const previous = this.lexical[j - 1];
    for (let k = 0; k < previous.ids.length; k++) {
      const list = postings[previous.ids[k]];
      if (list === undefined) postings[previous.ids[k]] = { docs: [j - 1], weights: [previous.weights[k]] };
      else {
        list.docs.push(j - 1);
        list.weights.push(previous.weights[k]);
      }
    }
    let count = 0;
    const v = this.lexical[j];
    for (let k = 0; k < v.ids.length; k++) {
      const list = postings[v.ids[k]];
      if (list === undefined) continue;
      const w = v.weights[k];
      const { docs, weights } = list;
      for (let p = 0; p < docs.length; p++) {
        const i = docs[p];
        if (touchedIn[i] !== j + 1) {
          touchedIn[i] = j + 1;
          touched[count++] = i;
        }
        lex[i] += weights[p] * w;
      }
    }
    return count;
  }

  /**
   * Row j from `lex` (postings) and the table: pairs whose vectors' cosine reaches `cut` are mixed exactly; pairs
   * with no vector meet the bar only through lexical, hence only among touched ones.
   */
  private tableRow(j: number, table: CosineTable, touchedCount: number): void {
    const { has, lex, bar, scale, weight, touched, cut } = this;
    const rest = 1 - weight;
    const { cosines, stride, slots } = table;
    const row = slots[j] * stride;
    for (let i = 0; i < j; i++) {
      const c = cosines[row + slots[i]];
      if (c < cut || has[i] === 0) continue;
      const value = weight * c + rest * Math.min(1, lex[i]);
      if (value >= bar) this.keep(i, j, value);
    }
    // A bar of 0 or below is met by every pair, touched or not.
    if (bar <= 0) {
      for (let i = 0; i < j; i++) if (has[i] === 0 && lex[i] * scale >= bar) this.keep(i, j, lex[i] * scale);
      return;
    }
    for (let t = 0; t < touchedCount; t++) {
      const i = touched[t];
      if (has[i] === 0 && lex[i] * scale >= bar) this.keep(i, j, lex[i] * scale);
    }
  }

  /** Row j when every shard has a vector, from the table: a pair's lexical cosine is computed only for candidates. */
  private tableRowByDots(j: number, table: CosineTable): void {
    const { bar, weight, cut } = this;
    const rest = 1 - weight;
    const { cosines, stride, slots } = table;
    const row = slots[j] * stride;
    this.spread(j);
    for (let i = 0; i < j; i++) {
      const c = cosines[row + slots[i]];
      if (c < cut) continue;
      const value = weight * c + rest * Math.min(1, this.spreadDot(i));
      if (value >= bar) this.keep(i, j, value);
    }
    this.unspread(j);
  }

  /** Puts row j's lexical weights in `dense`, by term id. */
  private spread(j: number): void {
    const { ids, weights } = this.lexical[j];
    for (let k = 0; k < ids.length; k++) this.dense[ids[k]] = weights[k];
  }

  private unspread(j: number): void {
    const { ids } = this.lexical[j];
    for (let k = 0; k < ids.length; k++) this.dense[ids[k]] = 0;
  }

  /**
   * dot(lexical[i], lexical[j]) with j spread: i's terms in ascending id order, a term j lacks adding an exact 0
   * (weights are positive), so the same products in the same order, the same bits.
   */
  private spreadDot(i: number): number {
    const { ids, weights } = this.lexical[i];
    const dense = this.dense;
    let sum = 0;
    for (let k = 0; k < ids.length; k++) sum += weights[k] * dense[ids[k]];
    return sum;
  }

  /** tableRowByDots with the vectors' cosines computed here. */
  private vectorRowByDots(j: number): void {
    const { bar, weight, cut, views } = this;
    const rest = 1 - weight;
    const b = views[j];
    this.spread(j);
    for (let i = 0; i < j; i++) {
      const c = vectorCosine(views[i], b);
      if (c < cut) continue;
      const value = weight * c + rest * Math.min(1, this.spreadDot(i));
      if (value >= bar) this.keep(i, j, value);
    }
    this.unspread(j);
  }

  /** Vector cosines summed exactly as vectorCosine sums them (four running sums, index order). */
  private vectorRow(j: number): void {
    const { has, lex, bar, scale, weight, views } = this;
    const rest = 1 - weight;
    const b = views[j];
    for (let i = 0; i < j; i++) {
      if (has[i] === 0) {
        if (lex[i] * scale >= bar) this.keep(i, j, lex[i] * scale);
        continue;
      }
      const value = weight * vectorCosine(views[i], b) + rest * Math.min(1, lex[i]);
      if (value >= bar) this.keep(i, j, value);
    }
  }

  private keep(a: number, b: number, value: number): void {
    if (this.count === this.first.length) {
      const first = new Int32Array(this.count * 2);
      const second = new Int32Array(this.count * 2);
      const values = new Float64Array(this.count * 2);
      first.set(this.first);
      second.set(this.second);
      values.set(this.values);
      [this.first, this.second, this.values] = [first, second, values];
    }
    this.first[this.count] = a;
    this.second[this.count] = b;
    this.values[this.count++] = value;
    this.components.join(a, b);
  }
}

/**
 * The vectors' cosines of one soul's shards, kept between clusterings: a shard added costs one cosine per shard
 * already there, not a new n²/2. Shards hold slots (reused when one leaves); cosines are Float32, as vectorCosine rounds them.
 */
export class VectorPairs {
  private readonly slotOf = new Map<number, number>();
  private readonly vectors: (Float32Array | null)[] = [];
  private readonly free: number[] = [];
  private capacity = 0;
  private cosines = new Float32Array(0);

  /** Bytes held by the cosines. */
  get bytes(): number {
    return this.cosines.byteLength;
  }

  /** Makes the slots hold exactly `ids`, computing the cosines of new shards with those already held. */
  sync(ids: readonly number[], vectorOf: (id: number) => Float32Array | null): void {
    const wanted = new Set(ids);
    for (const [id, slot] of this.slotOf) {
      if (wanted.has(id)) continue;
      this.slotOf.delete(id);
      this.vectors[slot] = null;
      this.free.push(slot);
    }
    const added = ids.filter((id) => !this.slotOf.has(id));
    if (added.length === 0) return;
    this.free.sort((x, y) => y - x);
    const needed = this.slotOf.size + added.length;
    if (needed > this.capacity) this.grow(Math.max(needed, Math.ceil(this.capacity * 1.5), 16));
    for (const id of added) {
      const slot = this.free.length > 0 ? this.free.pop()! : this.vectors.length;
      if (slot === this.vectors.length) this.vectors.push(null);
      const v = vectorOf(id);
      this.slotOf.set(id, slot);
      this.vectors[slot] = v;
      if (v === null) continue;
      const row = slot * this.capacity;
      for (const other of this.slotOf.values()) {
        const w = this.vectors[other];
        if (other === slot || w === null) continue;
        const c = vectorCosine(v, w);
        this.cosines[row + other] = c;
        this.cosines[other * this.capacity + slot] = c;
      }
    }
  }

  /** Lets go of these shards (their vectors changed): the next sync computes their cosines afresh. */
  release(ids: readonly number[]): void {
    for (const id of ids) {
      const slot = this.slotOf.get(id);
      if (slot === undefined) continue;
      this.slotOf.delete(id);
      this.vectors[slot] = null;
      this.free.push(slot);
    }
  }

  /** The slot of a held shard. */
  slot(id: number): number {
    return this.slotOf.get(id)!;
  }

  /** The cosines of held shards, pair (i, j) by their slots[i] and slots[j] (both must have a vector). */
  table(slots: Int32Array): CosineTable {
    return { cosines: this.cosines, stride: this.capacity, slots };
  }

  /** The cosine of two held shards' vectors, by slot (both must have a vector). */
  cosine(a: number, b: number): number {
    return this.cosines[a * this.capacity + b];
  }

  private grow(capacity: number): void {
    const cosines = new Float32Array(capacity * capacity);
    for (let slot = 0; slot < this.vectors.length; slot++) {
      cosines.set(this.cosines.subarray(slot * this.capacity, slot * this.capacity + this.vectors.length), slot * capacity);
    }
    this.cosines = cosines;
    this.capacity = capacity;
  }
}
