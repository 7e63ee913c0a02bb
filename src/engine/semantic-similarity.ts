/**
 * How `semantic` compares shards once their sentence-encoder vectors are stored: as `provided` does (the
 * same mix, VECTOR_WEIGHT · cosine + the rest lexical), but clustered by complete linkage (a cluster's
 * weakest pair must meet the threshold), which the paraphrase corpus preferred for sentence vectors
 * (bench/semantic.ts). A pair in which a shard has no vector yet is compared lexically, put on this mode's
 * scale: it meets semantic's default threshold exactly when it meets lexical's own. Deterministic: sums in
 * index order, ties to the lowest index.
 */
import { cosineMatrixSteps, lexicalVectors, meetsCosine } from './lexical.ts';
import { mixSimilarity, VECTOR_WEIGHT } from './provided.ts';
import { defaultClusteringThresholds } from './settings.ts';
import type { Steps } from './slices.ts';

const FALLBACK_SCALE = defaultClusteringThresholds.semantic / defaultClusteringThresholds.lexical;

/** The semantic similarity of two shards from their lexical cosine and vectors (null: not landed yet). */
export function semanticSimilarity(lexical: number, a: Float32Array | null, b: Float32Array | null, weight = VECTOR_WEIGHT): number {
  if (a === null || b === null) return lexical * FALLBACK_SCALE;
  return mixSimilarity(lexical, a, b, weight);
}

/**
 * Pairwise semantic similarities, condensed upper-triangular (as cosineMatrixSteps). The vectors are copied
 * into one Float64 buffer first (exact: every Float32 is a double), which makes the all-pairs cosines about
 * 1.5× faster; the sums run in vectorCosine's order, so every value equals semanticSimilarity's bit for bit.
 */
export function* semanticMatrixSteps(texts: readonly string[], vectors: readonly (Float32Array | null)[], weight = VECTOR_WEIGHT): Steps<Float64Array> {
  const n = texts.length;
  const matrix = yield* cosineMatrixSteps(lexicalVectors(texts));
  const d = vectors.find((v) => v)?.length ?? 0;
  const uniform = vectors.every((v) => !v || v.length === d) && d % 4 === 0;
  const flat = new Float64Array(uniform ? n * d : 0);
  if (uniform) vectors.forEach((v, i) => v && flat.set(v, i * d));
  let at = 0;
  for (let i = 0; i < n; i++) {
    yield;
    const a = vectors[i] ?? null;
    for (let j = i + 1; j < n; j++, at++) {
      const b = vectors[j] ?? null;
      if (a === null || b === null || !uniform) {
        matrix[at] = semanticSimilarity(matrix[at], a, b, weight);
        continue;
      }
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let k = 0, x = i * d, y = j * d; k < d; k += 4, x += 4, y += 4) {
        s0 += flat[x] * flat[y];
        s1 += flat[x + 1] * flat[y + 1];
        s2 += flat[x + 2] * flat[y + 2];
        s3 += flat[x + 3] * flat[y + 3];
      }
      const cosine = Math.min(1, Math.max(0, s0 + s1 + (s2 + s3)));
      matrix[at] = weight * cosine + (1 - weight) * Math.min(1, matrix[at]);
    }
  }
  return matrix;
}

function pairIndex(n: number, i: number, j: number): number {
  return i * n - ((i * (i + 1)) >> 1) + (j - i - 1);
}

/**
 * Exact complete linkage cut at `threshold`: repeatedly merges the two clusters whose weakest pair is the
 * strongest, while it meets the threshold. The nearest-neighbour chain gives the greedy order's merges
 * (complete linkage is reducible), O(n²) on the condensed matrix, which it overwrites. A cluster whose best
 * link is below the threshold never reaches it again (a merged link is a minimum), so it is set aside.
 * Ties go to the chain's previous cluster, then the lowest index. Clusters are sorted index arrays,
 * ordered by their smallest index.
 */
export function* completeLinkageSteps(n: number, matrix: Float64Array, threshold: number): Steps<number[][]> {
  const active = new Uint8Array(n).fill(1);
  const members: number[][] = Array.from({ length: n }, (_, i) => [i]);
  const done: number[][] = [];
  const link = (a: number, b: number): number => (a < b ? matrix[pairIndex(n, a, b)] : matrix[pairIndex(n, b, a)]);
  const chain: number[] = [];
  let remaining = n;
  let lowest = 0;
  while (remaining > 0) {
    yield;
    if (chain.length === 0) {
      while (!active[lowest]) lowest++;
      chain.push(lowest);
    }
    const a = chain[chain.length - 1];
    const previous = chain.length > 1 ? chain[chain.length - 2] : -1;
    let best = previous >= 0 ? link(a, previous) : -Infinity;
    let b = previous;
    for (let k = 0; k < n; k++) {
      if (k === a || !active[k]) continue;
      const value = link(a, k);
      if (value > best) {
        best = value;
        b = k;
      }
    }
    if (b < 0 || !meetsCosine(best, threshold)) {
      active[a] = 0;
      remaining--;
      done.push(members[a]);
      chain.pop();
      continue;
    }
    if (b !== previous) {
      chain.push(b);
      continue;
    }
    chain.length -= 2;
    const keep = Math.min(a, b);
    const drop = Math.max(a, b);
    for (let k = 0; k < n; k++) {
      if (!active[k] || k === keep || k === drop) continue;
      const merged = Math.min(link(keep, k), link(drop, k));
      if (keep < k) matrix[pairIndex(n, keep, k)] = merged;
      else matrix[pairIndex(n, k, keep)] = merged;
    }
    members[keep] = members[keep].concat(members[drop]);
    active[drop] = 0;
    remaining--;
  }
  for (const cluster of done) cluster.sort((x, y) => x - y);
  return done.sort((x, y) => x[0] - y[0]);
}

/** Semantic clustering: the mixed similarities, then complete linkage at `threshold`. */
export function* clusterSemanticSteps(texts: readonly string[], vectors: readonly (Float32Array | null)[], threshold: number, weight = VECTOR_WEIGHT): Steps<number[][]> {
  if (texts.length === 0) return [];
  const matrix = yield* semanticMatrixSteps(texts, vectors, weight);
  return yield* completeLinkageSteps(texts.length, matrix, threshold);
}
