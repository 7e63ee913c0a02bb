import { describe, expect, it } from 'vitest';
import { makeRng } from '../bench/corpus.ts';
import {
  adjustedRandIndex,
  bestRow,
  clusterByLinkage,
  clusterMatrix,
  evaluateAlignment,
  evaluatePartition,
  labelsOf,
  loadParaphraseCorpus,
  nearestNeighbourSameTheme,
  similarityMatrix,
  sweepThresholds,
  thresholdRange,
  type CorpusRecord,
  type ParaphraseCorpus,
} from '../bench/paraphrase.ts';
import { clusterTexts, normalizeForSimilarity, similarity } from '../src/engine/similarity.ts';

/** ARI from the four pair counts (Hubert & Arabie's pair form), by enumerating
 * all pairs: an independent route to the same number. */
function ariByPairCounting(a: readonly number[], b: readonly number[]): number {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  let tn = 0;
  for (let i = 0; i < a.length; i++) {
    for (let j = i + 1; j < a.length; j++) {
      const sameA = a[i] === a[j];
      const sameB = b[i] === b[j];
      if (sameA && sameB) tp++;
      else if (sameA) fn++;
      else if (sameB) fp++;
      else tn++;
    }
  }
  return (2 * (tp * tn - fn * fp)) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn));
}

describe('adjustedRandIndex', () => {
  it('is 1 for identical partitions, whatever the label names', () => {
    expect(adjustedRandIndex([0, 0, 1, 1, 2], [0, 0, 1, 1, 2])).toBe(1);
    expect(adjustedRandIndex(['a', 'a', 'b', 'b', 'c'], [7, 7, 3, 3, 9])).toBe(1);
    expect(adjustedRandIndex([0, 1, 2], [5, 6, 7])).toBe(1);
    expect(adjustedRandIndex([4, 4, 4], [1, 1, 1])).toBe(1);
  });

  it('matches the textbook values (scikit-learn documentation examples)', () => {
    // Contingency [[2,0,0],[0,1,1]]: index 1, expected 2·1/6, max 3/2 → (2/3)/(7/6) = 4/7.
    expect(adjustedRandIndex([0, 0, 1, 1], [0, 0, 1, 2])).toBeCloseTo(4 / 7, 12);
    expect(adjustedRandIndex([0, 0, 1, 2], [0, 0, 1, 1])).toBeCloseTo(4 / 7, 12);
    // Every pair split the other way: index 0, expected 2/3, max 2 → −0.5.
    expect(adjustedRandIndex([0, 0, 1, 1], [0, 1, 0, 1])).toBeCloseTo(-0.5, 12);
    // One cluster against all singletons carries no information.
    expect(adjustedRandIndex([0, 0, 0, 0], [0, 1, 2, 3])).toBe(0);
  });

  it('agrees with the pair-counting form on random labellings, and is symmetric', () => {
    const rng = makeRng(10);
    for (let trial = 0; trial < 200; trial++) {
      const n = 2 + Math.floor(rng() * 30);
      const k1 = 1 + Math.floor(rng() * 6);
      const k2 = 1 + Math.floor(rng() * 6);
      const a = Array.from({ length: n }, () => Math.floor(rng() * k1));
      const b = Array.from({ length: n }, () => Math.floor(rng() * k2));
      const byPairs = ariByPairCounting(a, b);
      // The pair form is 0/0 exactly when both labellings are trivial and equal.
      if (Number.isNaN(byPairs)) expect(adjustedRandIndex(a, b)).toBe(1);
      else expect(adjustedRandIndex(a, b)).toBeCloseTo(byPairs, 10);
      expect(adjustedRandIndex(a, b)).toBeCloseTo(adjustedRandIndex(b, a), 12);
    }
  });

  it('rejects labellings of different lengths', () => {
    expect(() => adjustedRandIndex([0, 1], [0])).toThrow(RangeError);
  });
});

describe('clusterByLinkage', () => {
  // A~B, B~C, C~D at 0.9; every other pair 0: a chain with A and D unrelated.
  const chain = ['A', 'B', 'C', 'D'];
  const linked = new Set(['AB', 'BC', 'CD']);
  const chainSimilarity = (x: string, y: string): number => (linked.has([x, y].sort().join('')) ? 0.9 : 0);

  it('single linkage chains; average and complete linkage do not', () => {
    expect(clusterByLinkage(chain, chainSimilarity, 0.5, 'single')).toEqual([[0, 1, 2, 3]]);
    // A+B first (tied with B+C and C+D, lowest indices win), then C+D (AB–C averages only 0.45); AB–CD averages 0.225.
    expect(clusterByLinkage(chain, chainSimilarity, 0.5, 'average')).toEqual([[0, 1], [2, 3]]);
    expect(clusterByLinkage(chain, chainSimilarity, 0.5, 'complete')).toEqual([[0, 1], [2, 3]]);
    expect(clusterByLinkage(chain, chainSimilarity, 0.95, 'single')).toEqual([[0], [1], [2], [3]]);
  });

  it('with trigram Jaccard and single linkage, gives exactly the engine clustering on the corpus', () => {
    const texts = loadParaphraseCorpus().records.map((r) => r.text);
    const matrix = similarityMatrix(texts, similarity);
    for (const threshold of [0.15, 0.2, 0.4]) {
      expect(clusterMatrix(matrix, texts.length, threshold, 'single')).toEqual(clusterTexts(texts, threshold));
    }
  }, 30_000);

  it('average linkage merges by the mean of all cross pairs, recomputed from scratch', () => {
    const rng = makeRng(3);
    const n = 12;
    const matrix = Array.from({ length: n }, () => new Array<number>(n).fill(0));
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) matrix[i][j] = matrix[j][i] = Math.round(rng() * 100) / 100;
    }
    const texts = Array.from({ length: n }, (_, i) => String(i));
    const sim = (x: string, y: string): number => matrix[Number(x)][Number(y)];
    const clusters = clusterByLinkage(texts, sim, 0.5, 'average');
    const mean = (a: number[], b: number[]): number => {
      let sum = 0;
      for (const i of a) for (const j of b) sum += matrix[i][j];
      return sum / (a.length * b.length);
    };
    // Stopping condition: no two final clusters average 0.5 or more.
    for (let x = 0; x < clusters.length; x++) {
      for (let y = x + 1; y < clusters.length; y++) expect(mean(clusters[x], clusters[y])).toBeLessThan(0.5);
    }
    expect(clusters.flat().sort((a, b) => a - b)).toEqual(texts.map((_, i) => i));
    expect(clusterByLinkage(texts, sim, 0.5, 'average')).toEqual(clusters);
  });
});

describe('evaluatePartition', () => {
  const record = (id: string, theme: string | null, kind: CorpusRecord['kind']): CorpusRecord => ({
    id,
    text: id,
    source: 'chat',
    theme,
    kind,
  });
  const tiny: ParaphraseCorpus = {
    description: '',
    themes: [
      { id: 'a', summary: '', principles: ['pa'] },
      { id: 'b', summary: '', principles: ['pb'] },
    ],
    hardNegatives: [['a', 'b']],
    records: [
      record('a1', 'a', 'incident'),
      record('a2', 'a', 'distillation'),
      record('a3', 'a', 'incident'),
      record('b1', 'b', 'incident'),
      record('b2', 'b', 'distillation'),
      record('s1', null, 'incident'),
    ],
  };

  it('counts pairs, hard negatives and kinds on a hand-checked partition', () => {
    // {a1, a2, b1} {a3} {b2, s1}
    const e = evaluatePartition(tiny, [[0, 1, 3], [2], [4, 5]]);
    // Contingency: index 1; row pairs 3 + 1 = 4; column pairs 3 + 1 = 4; E = 16/15 → (1 − 16/15)/(4 − 16/15) = −1/44.
    expect(e.ari).toBeCloseTo(-1 / 44, 12);
    expect(e.sameThemePairs).toEqual({ found: 1, total: 4 });
    expect(e.wronglyMergedPairs).toBe(3);
    expect(e.hardNegativesMerged).toEqual([['a', 'b']]);
    expect(e.hardNegativeRecordPairsMerged).toBe(2);
    expect(e.largestCluster).toBe(3);
    expect(e.clusters).toBe(3);
    // Incidents a1, a3, b1, s1: pairs a1–a3 (split), a1–b1 (wrongly merged).
    expect(e.incident.sameThemePairs).toEqual({ found: 0, total: 1 });
    expect(e.incident.wronglyMergedPairs).toBe(1);
    // Distillations a2, b2: no same-theme pair, not merged.
    expect(e.distillation.sameThemePairs).toEqual({ found: 0, total: 0 });
    expect(e.distillation.wronglyMergedPairs).toBe(0);
    // Across kinds, same theme: a1–a2 (found), a3–a2, b1–b2.
    expect(e.crossKindPairs).toEqual({ found: 1, total: 3 });
  });

  it('scores the true partition perfectly', () => {
    const e = evaluatePartition(tiny, [[0, 1, 2], [3, 4], [5]]);
    expect(e.ari).toBe(1);
    expect(e.sameThemePairs).toEqual({ found: 4, total: 4 });
    expect(e.wronglyMergedPairs).toBe(0);
    expect(e.hardNegativesMerged).toEqual([]);
    expect(e.incident.ari).toBe(1);
    expect(e.distillation.ari).toBe(1);
  });

  it('refuses clusters that leave a record out or hold one twice', () => {
    expect(() => labelsOf(3, [[0, 2]])).toThrow(/cover every item/);
    expect(() => labelsOf(3, [[0, 1], [1, 2]])).toThrow(/item 1 is in two clusters/);
  });

  it('sweeps thresholds and picks the best ARI', () => {
    const corpus = loadParaphraseCorpus();
    const rows = sweepThresholds(corpus, clusterTexts, thresholdRange(0.1, 0.5, 0.1));
    expect(rows.map((r) => r.threshold)).toEqual([0.1, 0.2, 0.3, 0.4, 0.5]);
    const best = bestRow(rows);
    for (const row of rows) expect(row.evaluation.ari).toBeLessThanOrEqual(best.evaluation.ari);
    // A lower threshold never splits what single linkage merged at a higher one.
    for (let k = 1; k < rows.length; k++) {
      expect(rows[k].evaluation.sameThemePairs.found).toBeLessThanOrEqual(rows[k - 1].evaluation.sameThemePairs.found);
      expect(rows[k].evaluation.largestCluster).toBeLessThanOrEqual(rows[k - 1].evaluation.largestCluster);
    }
  });

  it('alignment and nearest neighbours: a similarity that knows the labels scores perfectly', () => {
    const corpus = loadParaphraseCorpus();
    const themeOf = new Map<string, string | null>(corpus.records.map((r) => [r.text, r.theme]));
    for (const t of corpus.themes) for (const p of t.principles) themeOf.set(p, t.id);
    const oracle = (a: string, b: string): number => {
      const ta = themeOf.get(a);
      return ta != null && ta === themeOf.get(b) ? 1 : 0;
    };
    const themed = corpus.records.filter((r) => r.theme !== null).length;
    expect(evaluateAlignment(corpus, oracle, 0.5)).toEqual({
      ownTheme: { found: themed, total: themed },
      wrongTheme: 0,
      hardNegativeTheme: 0,
      singletonsAligned: { found: 0, total: corpus.records.length - themed },
    });
    expect(nearestNeighbourSameTheme(corpus, oracle)).toEqual({ found: themed, total: themed });
    const e = evaluatePartition(corpus, clusterByLinkage(corpus.records.map((r) => r.text), oracle, 0.5, 'average'));
    expect(e.ari).toBe(1);
  });
});

describe('the paraphrase corpus (test/fixtures/paraphrase-corpus.json)', () => {
  const corpus = loadParaphraseCorpus();
  const { records, themes, hardNegatives } = corpus;
  const themeIds = new Set(themes.map((t) => t.id));

  it('has at least 250 records with unique ids, valid fields and shard-sized texts', () => {
    expect(records.length).toBeGreaterThanOrEqual(250);
    expect(new Set(records.map((r) => r.id)).size).toBe(records.length);
    for (const r of records) {
      expect(r.text.trim().length, r.id).toBeGreaterThan(10);
      expect(r.text.length, r.id).toBeLessThanOrEqual(300);
      expect(['incident', 'distillation'], r.id).toContain(r.kind);
      expect(r.source, r.id).toMatch(/^[a-z_]+$/);
      if (r.theme !== null) expect(themeIds.has(r.theme), r.id).toBe(true);
    }
  });

  it('has no duplicate texts, even after normalization', () => {
    const normalized = records.map((r) => normalizeForSimilarity(r.text));
    expect(new Set(normalized).size).toBe(records.length);
  });

  it('has at least 25 themes, each told 5+ ways across 3+ sources, as incidents and distillations, with 1–2 principles', () => {
    expect(themes.length).toBeGreaterThanOrEqual(25);
    expect(themeIds.size).toBe(themes.length);
    for (const theme of themes) {
      const members = records.filter((r) => r.theme === theme.id);
      expect(members.length, theme.id).toBeGreaterThanOrEqual(5);
      expect(new Set(members.map((r) => r.source)).size, theme.id).toBeGreaterThanOrEqual(3);
      expect(new Set(members.map((r) => r.kind)), theme.id).toEqual(new Set(['incident', 'distillation']));
      expect(theme.principles.length, theme.id).toBeGreaterThanOrEqual(1);
      expect(theme.principles.length, theme.id).toBeLessThanOrEqual(2);
      for (const p of theme.principles) expect(p.length, theme.id).toBeLessThanOrEqual(300);
    }
  });

  it('has at least 40 singletons', () => {
    expect(records.filter((r) => r.theme === null).length).toBeGreaterThanOrEqual(40);
  });

  it('marks at least 8 hard-negative pairs of distinct, existing themes that share words', () => {
    expect(hardNegatives.length).toBeGreaterThanOrEqual(8);
    expect(new Set(hardNegatives.map((p) => [...p].sort().join('|'))).size).toBe(hardNegatives.length);
    const words = (theme: string): Set<string> =>
      new Set(records.filter((r) => r.theme === theme).flatMap((r) => r.text.toLowerCase().match(/\p{L}{4,}/gu) ?? []));
    const common = new Set(['that', 'this', 'with', 'when', 'from', 'have', 'they', 'agent', 'player', 'because', 'without']);
    for (const [x, y] of hardNegatives) {
      expect(x).not.toBe(y);
      expect(themeIds.has(x) && themeIds.has(y), `${x}/${y}`).toBe(true);
      const wx = words(x);
      const shared = [...words(y)].filter((w) => wx.has(w) && !common.has(w));
      expect(shared.length, `${x}/${y}`).toBeGreaterThanOrEqual(2);
    }
  });
});
