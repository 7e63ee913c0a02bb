/** One similarity for every consumer: the setting's mode decides how two texts, or a pool of texts, are compared. */
import { clusterLexicalSteps, lexicalSimilarity, meanPairwiseLexical } from './lexical.ts';
import { clusterProvidedSteps } from './provided.ts';
import { clusterSemanticSteps } from './semantic-similarity.ts';
import { clusteringLinkages, type SimilarityMode } from './settings.ts';
import { clusterTextsSteps, meanPairwiseSimilarity, similarity } from './similarity.ts';
import { runSteps, type Steps } from './slices.ts';

/**
 * Similarity of two texts in [0, 1]: trigram Jaccard, or lexical TF-IDF cosine with IDF over the two.
 * Texts alone carry no vectors, so `provided` compares them lexically (traits, essences).
 */
export function textSimilarity(mode: SimilarityMode, a: string, b: string): number {
  return mode === 'trigram' ? similarity(a, b) : lexicalSimilarity(a, b);
}

/** Mean similarity over all unordered pairs of texts; 1 for fewer than 2. */
export function meanPairwise(mode: SimilarityMode, texts: readonly string[]): number {
  return mode === 'trigram' ? meanPairwiseSimilarity(texts) : meanPairwiseLexical(texts);
}

/** Each shard's stored embedding, by position; null (or absent) for a shard without one. */
export type Embeddings = readonly (Float32Array | null)[];

/**
 * The partition of texts at `threshold`: trigram single linkage (the seed's), lexical complete linkage, or
 * complete linkage over `vectors` mixed with lexical: provided's (the caller's vectors) and semantic's (the
 * sentence encoder's), each with its own fallback scale (clusteringLinkages). Clusters are sorted index
 * arrays ordered by their smallest index.
 */
export function clusterSteps(mode: SimilarityMode, texts: readonly string[], threshold: number, vectors: Embeddings = []): Steps<number[][]> {
  const linkage = clusteringLinkages[mode];
  if (mode === 'trigram' || linkage === 'single') return clusterTextsSteps(texts, threshold);
  if (mode === 'provided') return clusterProvidedSteps(texts, vectors, threshold, undefined, linkage);
  if (mode === 'semantic') return clusterSemanticSteps(texts, vectors, threshold, linkage);
  return clusterLexicalSteps(texts, threshold, linkage);
}

export function clusterBy(mode: SimilarityMode, texts: readonly string[], threshold: number, vectors: Embeddings = []): number[][] {
  return runSteps(clusterSteps(mode, texts, threshold, vectors));
}
