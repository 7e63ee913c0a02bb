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

/** Pairwise semantic similarities, condensed upper-triangular (as cosineMatrixSteps). */
export function* semanticMatrixSteps(texts: readonly string[], vectors: readonly (Float32Array | null)[], weight = VECTOR_WEIGHT): Steps<Float64Array> {
  const n = texts.length;
  const matrix = yield* cosineMatrixSteps(lexicalVectors(texts));
  let at = 0;
  for (let i = 0; i < n; i++) {
    yield;
    for (let j = i + 1; j < n; j++, at++) matrix[at] = semanticSimilarity(matrix[at], vectors[i] ?? null, vectors[j] ?? null, weight);
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
