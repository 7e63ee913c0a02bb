import { describe, expect, it } from 'vitest';
import { makeObservationCorpus, makeRng } from '../bench/corpus.ts';
import { ClusterMemo } from '../src/engine/cluster-memo.ts';
import { completeLinkageSteps, cosineMatrixSteps, lexicalVectors, linkageSteps } from '../src/engine/lexical.ts';
import { clusterCompleteMixedSteps, clusterProvidedSteps, decodeEmbedding, encodeEmbedding, fallbackScale, fallbackSimilarity, mixSimilarity, VECTOR_WEIGHT } from '../src/engine/provided.ts';
import { clusterBy } from '../src/engine/similarity-modes.ts';
import { runSteps } from '../src/engine/slices.ts';

/**
 * The reference: every pair's provided similarity in a condensed matrix (mixSimilarity, pair by pair), then the
 * NN-chain over all of it. The fast path keeps only the pairs meeting the threshold and must agree exactly.
 */
function reference(texts: readonly string[], vectors: readonly (Float32Array | null)[], threshold: number, scale: number): number[][] {
  const matrix = runSteps(cosineMatrixSteps(lexicalVectors(texts)));
  let at = 0;
  for (let i = 0; i < texts.length; i++) {
    for (let j = i + 1; j < texts.length; j++, at++) {
      const a = vectors[i];
      const b = vectors[j];
      matrix[at] = a && b ? mixSimilarity(matrix[at], a, b) : fallbackSimilarity(matrix[at], scale);
    }
  }
  return runSteps(linkageSteps(texts.length, matrix, threshold, 'complete'));
}

/**
 * Pools built for ties: vectors over few dimensions, half of their components in {−1, 0, 1} (many equal
 * cosines, some vectors equal), repeated texts, and (odd seeds) a share of shards without a vector.
 */
function pool(count: number, seed: number): { texts: string[]; vectors: (Float32Array | null)[] } {
  const random = makeRng(seed);
  const corpus = makeObservationCorpus(Math.ceil(count / 2), seed);
  const dimension = 3 + Math.floor(random() * 6);
  const texts = Array.from({ length: count }, () => corpus[Math.floor(random() * corpus.length)]);
  const vectors = texts.map(() => {
    if (seed % 2 === 1 && random() < 0.15) return null;
    const values: number[] = Array.from({ length: dimension }, () => (random() < 0.5 ? Math.floor(random() * 3) - 1 : random() * 2 - 1));
    if (!values.some((v) => v !== 0)) values[0] = 1;
    return decodeEmbedding(encodeEmbedding('embedding', values));
  });
  return { texts, vectors };
}

describe('vector clustering without the full matrix', () => {
  it('gives the reference complete linkage partition, ties included, at several thresholds and seeds', () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const { texts, vectors } = pool(90, seed);
      for (const threshold of [0, 0.25, 0.425, 0.6, 0.9]) {
        for (const scale of [fallbackScale('provided'), fallbackScale('semantic')]) {
          const fast = runSteps(clusterCompleteMixedSteps(lexicalVectors(texts), vectors, threshold, VECTOR_WEIGHT, scale));
          expect(fast, `seed ${seed}, threshold ${threshold}, scale ${scale}`).toEqual(reference(texts, vectors, threshold, scale));
        }
        expect(runSteps(clusterProvidedSteps(texts, vectors, threshold, VECTOR_WEIGHT, 'complete'))).toEqual(reference(texts, vectors, threshold, fallbackScale('provided')));
      }
    }
  });

  it('lexical complete linkage gives the partition of the NN-chain over the whole cosine matrix, ties included', () => {
    for (const seed of [1, 2, 3, 4]) {
      const random = makeRng(seed);
      // Repeated texts and texts over a few words: many equal cosines, and components of every size.
      const corpus = makeObservationCorpus(40, seed);
      const words = ['merge', 'branch', 'review', 'tests', 'deploy', 'no', 'many'];
      const texts = Array.from({ length: 120 }, (_, i) =>
        i % 3 === 0 ? corpus[Math.floor(random() * corpus.length)] : Array.from({ length: 1 + Math.floor(random() * 4) }, () => words[Math.floor(random() * words.length)]).join(' '),
      );
      for (const threshold of [0, 0.06, 0.2, 0.425, 0.6, 0.9, 1]) {
        const matrix = runSteps(cosineMatrixSteps(lexicalVectors(texts)));
        const expected = runSteps(linkageSteps(texts.length, matrix, threshold, 'complete'));
        expect(clusterBy('lexical', texts, threshold), `seed ${seed}, threshold ${threshold}`).toEqual(expected);
        expect(runSteps(completeLinkageSteps(lexicalVectors(texts), threshold))).toEqual(expected);
      }
    }
  });

  it('merges pools that are one component, and leaves apart pools of no vectors, as the reference does', () => {
    const { texts } = pool(40, 9);
    const same = texts.map(() => decodeEmbedding(encodeEmbedding('embedding', [1, 1, 0])));
    for (const vectors of [same, texts.map(() => null)]) {
      for (const threshold of [0.25, 0.8]) expect(runSteps(clusterProvidedSteps(texts, vectors, threshold, VECTOR_WEIGHT, 'complete'))).toEqual(reference(texts, vectors, threshold, fallbackScale('provided')));
    }
  });

  it("gives, through the memo's kept cosines, the partition of the set asked about while shards come and go", () => {
    for (const mode of ['provided', 'semantic'] as const) {
      for (const seed of [11, 12, 13]) {
        const { texts, vectors } = pool(140, seed);
        const loadVectors = (ids: number[]) => new Map(ids.flatMap((id) => (vectors[id - 1] ? [[id, encodeEmbedding('embedding', Array.from(vectors[id - 1]!))] as const] : [])));
        const threshold = mode === 'provided' ? 0.25 : 0.425;
        const memo = new ClusterMemo(threshold, undefined, mode, loadVectors);
        const load = (ids: number[]) => new Map(ids.map((id) => [id, texts[id - 1]]));
        const random = makeRng(seed);
        let ids = Array.from({ length: 60 }, (_, i) => i + 1);
        for (let step = 0; step < 12; step++) {
          const clusters = memo.partition(1, ids, load);
          const expected = clusterBy(
            mode,
            ids.map((id) => texts[id - 1]),
            threshold,
            ids.map((id) => vectors[id - 1]),
          ).map((cluster) => cluster.map((i) => ids[i]));
          expect(clusters, `${mode}, seed ${seed}, step ${step}`).toEqual(expected);
          const reference_ = reference(ids.map((id) => texts[id - 1]), ids.map((id) => vectors[id - 1]), threshold, fallbackScale(mode)).map((cluster) => cluster.map((i) => ids[i]));
          expect(clusters).toEqual(reference_);
          const kept = ids.filter(() => random() > 0.1);
          const added = Array.from({ length: 1 + Math.floor(random() * 8) }, () => 1 + Math.floor(random() * texts.length));
          ids = [...new Set([...kept, ...added])].sort((x, y) => x - y);
        }
      }
    }
  });
});
