/**
 * A SYNTHETIC check of the `provided` similarity, since no embedding model ships with Souls: each record of
 * the paraphrase corpus gets a vector that encodes its theme label plus Gaussian noise. Theme centres are
 * random unit vectors; the two themes of a hard-negative pair get centres with cosine HARD_NEGATIVE_COSINE
 * (real embeddings put "too many tests" and "no tests" close); each singleton gets a direction of its own.
 * A record's vector is centre + σ·noise (noise ~ N(0, 1/d) per component, so its length is about 1): two
 * records of one theme then have a cosine of about 1 / (1 + σ²). The figures say how the mixing and the
 * threshold behave across noise levels; they say nothing about any real embedding model.
 */
import { clusteringLinkages, defaultClusteringThresholds } from '../src/engine/settings.ts';
import type { Linkage } from '../src/engine/lexical.ts';
import { clusterProvidedSteps, decodeEmbedding, encodeEmbedding, VECTOR_WEIGHT } from '../src/engine/provided.ts';
import { runSteps } from '../src/engine/slices.ts';
import { makeRng } from './corpus.ts';
import { evaluatePartition, largestTheme, loadParaphraseCorpus, summarize, thresholdRange, type Evaluation, type ParaphraseCorpus } from './paraphrase.ts';

export const SYNTHETIC_DIMENSION = 64;
export const HARD_NEGATIVE_COSINE = 0.5;
export const NOISE_LEVELS = [0.5, 1, 1.5, 2];
export const PROVIDED_SWEEP_THRESHOLDS = thresholdRange(0.1, 0.6, 0.025);
export const WEIGHT_SWEEP = [0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1];

function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

function unit(values: number[]): number[] {
  const norm = Math.sqrt(values.reduce((sum, v) => sum + v * v, 0));
  return values.map((v) => v / norm);
}

/** One synthetic vector per record (as stored: normalized Float32), deterministic for a seed. */
export function syntheticEmbeddings(corpus: ParaphraseCorpus, noise: number, seed = 1): Float32Array[] {
  const random = makeRng(seed);
  const d = SYNTHETIC_DIMENSION;
  const direction = () => unit(Array.from({ length: d }, () => gaussian(random)));
  const centres = new Map(corpus.themes.map((t) => [t.id, direction()]));
  for (const [a, b] of corpus.hardNegatives) {
    const own = direction();
    const c = HARD_NEGATIVE_COSINE;
    // Gram–Schmidt: b's centre at cosine c from a's.
    const ca = centres.get(a)!;
    const along = own.reduce((sum, v, i) => sum + v * ca[i], 0);
    const orthogonal = unit(own.map((v, i) => v - along * ca[i]));
    centres.set(b, ca.map((v, i) => c * v + Math.sqrt(1 - c * c) * orthogonal[i]));
  }
  return corpus.records.map((r) => {
    const centre = r.theme === null ? direction() : centres.get(r.theme)!;
    const values = centre.map((v) => v + noise * gaussian(random) / Math.sqrt(d));
    return decodeEmbedding(encodeEmbedding('embedding', values));
  });
}

const PROVIDED_LINKAGE = clusteringLinkages.provided as Linkage;

/** The corpus clustered in provided mode at each noise level (vector weight, threshold and linkage given). */
export function evaluateProvided(corpus: ParaphraseCorpus, vectorsPerNoise: readonly Float32Array[][], threshold: number, weight: number, linkage: Linkage = PROVIDED_LINKAGE): Evaluation[] {
  const texts = corpus.records.map((r) => r.text);
  return vectorsPerNoise.map((vectors) => evaluatePartition(corpus, runSteps(clusterProvidedSteps(texts, vectors, threshold, weight, linkage))));
}

export type ProvidedChoice = { weight: number; linkage: Linkage; threshold: number; meanAri: number; evaluations: Evaluation[] };

/**
 * How the vector weight and the default threshold are chosen: for each weight, the threshold of the sweep with
 * the best mean ARI over the noise levels among those whose largest cluster, at every noise level, holds no
 * more records than the largest labelled theme (lowest threshold on ties).
 */
export function bestThresholdForWeight(corpus: ParaphraseCorpus, vectorsPerNoise: readonly Float32Array[][], weight: number, linkage: Linkage = PROVIDED_LINKAGE): ProvidedChoice | null {
  let best: ProvidedChoice | null = null;
  for (const threshold of PROVIDED_SWEEP_THRESHOLDS) {
    const evaluations = evaluateProvided(corpus, vectorsPerNoise, threshold, weight, linkage);
    if (evaluations.some((e) => e.largestCluster > largestTheme(corpus))) continue;
    const meanAri = evaluations.reduce((sum, e) => sum + e.ari, 0) / evaluations.length;
    if (best === null || meanAri > best.meanAri) best = { weight, linkage, threshold, meanAri, evaluations };
  }
  return best;
}

/** npm run bench section: the provided mode on synthetic vectors: the weight sweep, then each noise level at the defaults and swept. */
export async function benchProvided(): Promise<Array<{ name: string; value: string }>> {
  const corpus = loadParaphraseCorpus();
  const threshold = defaultClusteringThresholds.provided;
  const vectorsPerNoise = NOISE_LEVELS.map((noise) => syntheticEmbeddings(corpus, noise));
  const rows: Array<{ name: string; value: string }> = [
    { name: 'SYNTHETIC vectors', value: `d = ${SYNTHETIC_DIMENSION}, theme label + noise σ ${NOISE_LEVELS.join(', ')}, hard-negative centres at cosine ${HARD_NEGATIVE_COSINE}; not a real model` },
  ];
  for (const linkage of ['average', 'complete'] as const) {
    for (const weight of WEIGHT_SWEEP) {
      const best = bestThresholdForWeight(corpus, vectorsPerNoise, weight, linkage);
      rows.push({
        name: `${linkage} linkage, vector weight ${weight}: best threshold, mean ARI (ARI per σ; hard-negative pairs merged per σ)`,
        value:
          best === null
            ? 'none fits'
            : `${best.threshold}, ${best.meanAri.toFixed(3)} (${best.evaluations.map((e) => e.ari.toFixed(3)).join(' / ')}; ${best.evaluations.map((e) => e.hardNegativesMerged.length).join(' / ')})`,
      });
    }
  }
  NOISE_LEVELS.forEach((noise, k) => {
    const label = `σ ${noise} (same-theme cosine ≈ ${(1 / (1 + noise * noise)).toFixed(2)})`;
    rows.push({ name: `${label}, weight ${VECTOR_WEIGHT}, ${PROVIDED_LINKAGE} linkage at ${threshold}`, value: summarize(evaluateProvided(corpus, [vectorsPerNoise[k]], threshold, VECTOR_WEIGHT)[0]) });
    for (const t of thresholdRange(0.15, 0.6, 0.05)) {
      rows.push({ name: `σ ${noise}, sweep ${t.toFixed(2)}`, value: summarize(evaluateProvided(corpus, [vectorsPerNoise[k]], t, VECTOR_WEIGHT)[0]) });
    }
  });
  return rows;
}

if (import.meta.main) {
  for (const row of await benchProvided()) console.log(`${row.name.padEnd(60)}  ${row.value}`);
}
