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
import { cosineMatrixSteps, lexicalVectors, lowerCosineSteps, mirrorLower, squareLinkageSteps, ThresholdComponents, type Linkage, type SparseVector } from './lexical.ts';
import { defaultBounds, defaultClusteringThresholds } from './settings.ts';
import type { Steps } from './slices.ts';

/**
 * Share of a vector pair's similarity that comes from the vectors; chosen with the default threshold on
 * synthetic vectors over the paraphrase corpus (bench/provided.ts, README "How similarity works").
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

/** The provided similarity of two shards given their lexical cosine and vectors (null: none). `weight` is for the bench's sweep. */
export function mixSimilarity(lexical: number, a: Float32Array | null, b: Float32Array | null, weight = VECTOR_WEIGHT): number {
  if (a === null || b === null) return fallbackSimilarity(lexical);
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
  const components = new ThresholdComponents(texts.length, threshold);
  const square = yield* mixedSquareSteps(lexicalVectors(texts), vectors, weight, undefined, scale, components);
  return yield* squareLinkageSteps(texts.length, square, threshold, linkage, components);
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
