/**
 * Weighting variants of the lexical similarity, swept on the paraphrase corpus with average and complete
 * linkage, to see which choices measurably help: character n-grams (weight and length), term-frequency
 * shape (raw, binary, sublinear 1 + ln tf, BM25 saturation), IDF (smoothed as the engine's, without the +1,
 * plain ln N/df, BM25's, none) and stemming. Each variant gets its threshold by the engine's rule
 * (chooseThreshold: the best ARI among thresholds whose largest cluster is no larger than the largest theme).
 * The reference vectorizer here is written independently of lexicalVectors; with the engine's options it must
 * give the engine's cosines (test/similarity-modes.test.ts checks it).
 */
import { lexicalSimilarity, linkageSteps, lexicalWords, stemWord, type Linkage } from '../src/engine/lexical.ts';
import { similarity as trigramSimilarity } from '../src/engine/similarity.ts';
import { runSteps } from '../src/engine/slices.ts';
import {
  chooseThreshold,
  evaluateAlignment,
  evaluatePartition,
  LEXICAL_SWEEP_THRESHOLDS,
  loadParaphraseCorpus,
  type AlignmentFigures,
  type ParaphraseCorpus,
  type Similarity,
  type SweepRow,
} from './paraphrase.ts';

export type Weighting = {
  charWeight: number;
  gram: number;
  tf: 'raw' | 'binary' | 'sublinear' | 'bm25';
  idf: 'smoothed' | 'smoothed-no-1' | 'plain' | 'bm25' | 'none';
  stem: boolean;
};

/** The engine's lexical weighting. */
export const ENGINE_WEIGHTING: Weighting = { charWeight: 0, gram: 4, tf: 'sublinear', idf: 'smoothed', stem: true };

const BM25_K1 = 1.2;
const BM25_B = 0.75;

/** Normalized sparse vectors (term key → weight) of the texts, IDF over the texts, words and grams each L2-normalized and mixed. */
export function weightedVectors(texts: readonly string[], o: Weighting): Map<string, number>[] {
  const docs = texts.map((text) => {
    const words = lexicalWords(text);
    const wordCounts = new Map<string, number>();
    const gramCounts = new Map<string, number>();
    for (const word of words) {
      const key = `w:${o.stem ? stemWord(word) : word}`;
      wordCounts.set(key, (wordCounts.get(key) ?? 0) + 1);
      if (o.charWeight === 0) continue;
      const chars = Array.from(`_${word}_`);
      for (let k = 0; k + o.gram <= chars.length; k++) {
        const gram = `c:${chars.slice(k, k + o.gram).join('')}`;
        gramCounts.set(gram, (gramCounts.get(gram) ?? 0) + 1);
      }
    }
    return { wordCounts, gramCounts, length: words.length };
  });
  const n = texts.length;
  const docFreq = new Map<string, number>();
  for (const d of docs) for (const counts of [d.wordCounts, d.gramCounts]) for (const key of counts.keys()) docFreq.set(key, (docFreq.get(key) ?? 0) + 1);
  const averageLength = docs.reduce((sum, d) => sum + d.length, 0) / Math.max(1, n);
  const idf = (key: string): number => {
    const df = docFreq.get(key)!;
    if (o.idf === 'smoothed') return Math.log((1 + n) / (1 + df)) + 1;
    if (o.idf === 'smoothed-no-1') return Math.log((1 + n) / (1 + df));
    if (o.idf === 'plain') return Math.log(n / df);
    if (o.idf === 'bm25') return Math.log(1 + (n - df + 0.5) / (df + 0.5));
    return 1;
  };
  const tf = (count: number, length: number): number => {
    if (o.tf === 'raw') return count;
    if (o.tf === 'binary') return 1;
    if (o.tf === 'sublinear') return 1 + Math.log(count);
    return (count * (BM25_K1 + 1)) / (count + BM25_K1 * (1 - BM25_B + (BM25_B * length) / Math.max(1e-9, averageLength)));
  };
  return docs.map((d) => {
    const vector = new Map<string, number>();
    for (const [counts, share] of [
      [d.wordCounts, 1 - o.charWeight],
      [d.gramCounts, o.charWeight],
    ] as const) {
      if (share === 0) continue;
      const weights = [...counts].map(([key, count]) => [key, tf(count, d.length) * idf(key)] as const);
      const norm = Math.sqrt(weights.reduce((sum, [, w]) => sum + w * w, 0));
      if (norm === 0) continue;
      for (const [key, w] of weights) vector.set(key, (w * Math.sqrt(share)) / norm);
    }
    return vector;
  });
}

function cosine(a: Map<string, number>, b: Map<string, number>): number {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let sum = 0;
  for (const [key, w] of small) sum += w * (large.get(key) ?? 0);
  return Math.min(1, sum);
}

/** Condensed upper-triangular cosines (as cosineMatrixSteps lays them out). */
export function weightedMatrix(texts: readonly string[], o: Weighting): Float64Array {
  const vectors = weightedVectors(texts, o);
  const n = texts.length;
  const matrix = new Float64Array((n * (n - 1)) / 2);
  for (let i = 0, at = 0; i < n; i++) for (let j = i + 1; j < n; j++, at++) matrix[at] = cosine(vectors[i], vectors[j]);
  return matrix;
}

/** The similarity of two texts under a weighting, IDF over the two (as the engine's lexicalSimilarity). */
export const weightedSimilarity =
  (o: Weighting): Similarity =>
  (a, b) => {
    const [x, y] = weightedVectors([a, b], o);
    return cosine(x, y);
  };

export function sweepMatrix(corpus: ParaphraseCorpus, matrix: Float64Array, linkage: Linkage, thresholds = LEXICAL_SWEEP_THRESHOLDS): SweepRow[] {
  const n = corpus.records.length;
  return thresholds.map((threshold) => ({ threshold, evaluation: evaluatePartition(corpus, runSteps(linkageSteps(n, Float64Array.from(matrix), threshold, linkage))) }));
}

export const VARIANTS: Array<[string, Weighting]> = [
  ['engine: words only, 1 + ln tf, smoothed IDF', ENGINE_WEIGHTING],
  ['4-grams 0.3 (the earlier engine)', { ...ENGINE_WEIGHTING, charWeight: 0.3 }],
  ['4-grams 0.1', { ...ENGINE_WEIGHTING, charWeight: 0.1 }],
  ['4-grams 0.5', { ...ENGINE_WEIGHTING, charWeight: 0.5 }],
  ['3-grams 0.3', { ...ENGINE_WEIGHTING, charWeight: 0.3, gram: 3 }],
  ['5-grams 0.3', { ...ENGINE_WEIGHTING, charWeight: 0.3, gram: 5 }],
  ['raw tf', { ...ENGINE_WEIGHTING, tf: 'raw' }],
  ['binary tf', { ...ENGINE_WEIGHTING, tf: 'binary' }],
  ['BM25 tf saturation (k1 1.2, b 0.75)', { ...ENGINE_WEIGHTING, tf: 'bm25' }],
  ['IDF ln((1+N)/(1+df)) without +1', { ...ENGINE_WEIGHTING, idf: 'smoothed-no-1' }],
  ['IDF ln(N/df)', { ...ENGINE_WEIGHTING, idf: 'plain' }],
  ['BM25 IDF', { ...ENGINE_WEIGHTING, idf: 'bm25' }],
  ['BM25 tf and IDF', { ...ENGINE_WEIGHTING, tf: 'bm25', idf: 'bm25' }],
  ['no IDF', { ...ENGINE_WEIGHTING, idf: 'none' }],
  ['no stemming', { ...ENGINE_WEIGHTING, stem: false }],
];

/** As nearestNeighbourSameTheme, from a condensed matrix (IDF over the whole corpus); ties to the lower index. */
function nearestSameTheme(corpus: ParaphraseCorpus, matrix: Float64Array): { found: number; total: number } {
  const { records } = corpus;
  const n = records.length;
  const at = (i: number, j: number) => (i < j ? i * n - ((i * (i + 1)) >> 1) + (j - i - 1) : j * n - ((j * (j + 1)) >> 1) + (i - j - 1));
  let found = 0;
  let total = 0;
  for (let i = 0; i < n; i++) {
    if (records[i].theme === null) continue;
    let best = -Infinity;
    let nearest = -1;
    for (let j = 0; j < n; j++) {
      if (j !== i && matrix[at(i, j)] > best) {
        best = matrix[at(i, j)];
        nearest = j;
      }
    }
    total++;
    if (records[nearest].theme === records[i].theme) found++;
  }
  return { found, total };
}

const ari3 = (x: number): string => (Math.abs(x) < 0.0005 ? 0 : x).toFixed(3);

/**
 * The alignment threshold a similarity's figures favour: the one maximizing records REINFORCING their own
 * theme's principle minus records REINFORCING another theme's minus singletons aligned (lowest on ties).
 */
export function chooseAlignmentThreshold(rows: ReadonlyArray<{ threshold: number; figures: AlignmentFigures }>): { threshold: number; figures: AlignmentFigures } {
  const score = (f: AlignmentFigures) => f.ownTheme.found - f.wrongTheme - f.singletonsAligned.found;
  return rows.reduce((best, row) => (score(row.figures) > score(best.figures) ? row : best));
}

export const ALIGNMENT_SWEEP = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4];

/** npm run bench section: every variant with both linkages at the rule's threshold; then the alignment sweep for lexical. */
export async function benchLexicalVariants(): Promise<Array<{ name: string; value: string }>> {
  const corpus = loadParaphraseCorpus();
  const texts = corpus.records.map((r) => r.text);
  const rows: Array<{ name: string; value: string }> = [];
  for (const [label, weighting] of VARIANTS) {
    const matrix = weightedMatrix(texts, weighting);
    for (const linkage of ['average', 'complete'] as const) {
      const chosen = chooseThreshold(corpus, sweepMatrix(corpus, matrix, linkage));
      const e = chosen.evaluation;
      rows.push({
        name: `${label}, ${linkage}`,
        value: `${chosen.threshold}: ARI ${ari3(e.ari)} (${ari3(e.incident.ari)} / ${ari3(e.distillation.ari)}), pairs found ${e.sameThemePairs.found}, wrongly merged ${e.wronglyMergedPairs}, hard negatives ${e.hardNegativesMerged.length}`,
      });
    }
    const nn = nearestSameTheme(corpus, matrix);
    rows.push({ name: `${label}: nearest neighbour (IDF over the corpus) has the same theme`, value: `${nn.found} of ${nn.total}` });
  }
  return rows;
}

export { ari3 };

if (import.meta.main) {
  for (const row of [...(await benchAlignment()), ...(await benchLexicalVariants())]) console.log(`${row.name.padEnd(70)}  ${row.value}`);
}

export type PrinciplePairs = { sameTheme: { found: number; total: number }; otherTheme: { found: number; total: number }; hardNegative: { found: number; total: number } };

/** Pairs of the themes' principles at or above `threshold`: within one theme (should be consolidation candidates), across themes, across hard-negative partners. */
export function principlePairs(corpus: ParaphraseCorpus, similarity: Similarity, threshold: number): PrinciplePairs {
  const partner = new Set(corpus.hardNegatives.flatMap(([a, b]) => [`${a} ${b}`, `${b} ${a}`]));
  const all = corpus.themes.flatMap((t) => t.principles.map((p) => ({ theme: t.id, text: p })));
  const out: PrinciplePairs = { sameTheme: { found: 0, total: 0 }, otherTheme: { found: 0, total: 0 }, hardNegative: { found: 0, total: 0 } };
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length; j++) {
      const hit = similarity(all[i].text, all[j].text) >= threshold * (1 - 1e-9);
      const bucket = all[i].theme === all[j].theme ? out.sameTheme : partner.has(`${all[i].theme} ${all[j].theme}`) ? out.hardNegative : out.otherTheme;
      bucket.total++;
      if (hit) bucket.found++;
    }
  }
  return out;
}

/** npm run bench section: per mode, records REINFORCING principles and principle pairs flagged, by threshold, and the threshold each rule picks. */
export async function benchAlignment(): Promise<Array<{ name: string; value: string }>> {
  const corpus = loadParaphraseCorpus();
  const rows: Array<{ name: string; value: string }> = [];
  for (const [mode, similarity] of [
    ['trigram', trigramSimilarity],
    ['lexical', lexicalSimilarity],
  ] as const) {
    const sweep = ALIGNMENT_SWEEP.map((threshold) => ({ threshold, figures: evaluateAlignment(corpus, similarity, threshold) }));
    for (const { threshold, figures: f } of sweep) {
      const pairs = principlePairs(corpus, similarity, threshold);
      rows.push({
        name: `${mode} at ${threshold.toFixed(2)}`,
        value: `REINFORCING own theme ${f.ownTheme.found}/${f.ownTheme.total}, another's ${f.wrongTheme} (hard negative's ${f.hardNegativeTheme}), singletons ${f.singletonsAligned.found}/${f.singletonsAligned.total}; principle pairs flagged: same theme ${pairs.sameTheme.found}/${pairs.sameTheme.total}, hard-negative themes ${pairs.hardNegative.found}/${pairs.hardNegative.total}, others ${pairs.otherTheme.found}/${pairs.otherTheme.total}`,
      });
    }
    rows.push({ name: `${mode}: alignment threshold by the rule (own − another's − singletons)`, value: String(chooseAlignmentThreshold(sweep).threshold) });
  }
  return rows;
}
