/**
 * How `semantic` compares shards once their sentence-encoder vectors are stored: as `provided` does (the
 * same mix, VECTOR_WEIGHT · cosine + the rest lexical, complete linkage), at semantic's own threshold. A pair
 * in which a shard has no vector yet is compared lexically, put on this mode's scale: it meets semantic's
 * default threshold exactly when it meets lexical's own.
 */
import { clusterProvidedSteps, fallbackScale, fallbackSimilarity, mixSimilarity, VECTOR_WEIGHT } from './provided.ts';
import type { Linkage } from './lexical.ts';
import type { Steps } from './slices.ts';

export const SEMANTIC_FALLBACK_SCALE = fallbackScale('semantic');

/** The semantic similarity of two shards from their lexical cosine and vectors (null: not landed yet). */
export function semanticSimilarity(lexical: number, a: Float32Array | null, b: Float32Array | null, weight = VECTOR_WEIGHT): number {
  if (a === null || b === null) return fallbackSimilarity(lexical, SEMANTIC_FALLBACK_SCALE);
  return mixSimilarity(lexical, a, b, weight);
}

export function* clusterSemanticSteps(texts: readonly string[], vectors: readonly (Float32Array | null)[], threshold: number, linkage: Linkage = 'complete'): Steps<number[][]> {
  return yield* clusterProvidedSteps(texts, vectors, threshold, VECTOR_WEIGHT, linkage, SEMANTIC_FALLBACK_SCALE);
}
