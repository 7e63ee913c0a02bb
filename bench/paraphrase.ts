/**
 * The paraphrase yardstick: clusters the hand-labelled corpus in
 * test/fixtures/paraphrase-corpus.json with a similarity (or any clustering
 * function) and scores the partition against the labels: adjusted Rand index,
 * wrongly merged pairs, same-theme pairs found, hard-negative theme pairs
 * merged, the largest cluster, and the same figures for incidents and
 * distillations separately; plus a threshold sweep and an alignment check of
 * the themes' trait principles. `benchParaphrase` prints both similarity
 * modes: trigram (character-trigram Jaccard, single linkage, the seed's) and
 * lexical (TF-IDF cosine, complete linkage, and average linkage for comparison),
 * and how lexical's default threshold and linkage follow from the sweep.
 */
import { readFileSync } from 'node:fs';
import { adjustedRandIndex, chooseThreshold as chooseSweepRow, thresholdRange } from '../src/engine/calibrate.ts';
import { clusterLexical, lexicalSimilarity } from '../src/engine/lexical.ts';
import { defaultClusteringThresholds, defaultRedundancyThresholds } from '../src/engine/settings.ts';
import { clusterTexts, similarity as trigramSimilarity } from '../src/engine/similarity.ts';

export type RecordKind = 'incident' | 'distillation';
export type CorpusRecord = { id: string; text: string; source: string; theme: string | null; kind: RecordKind };
export type CorpusTheme = { id: string; summary: string; principles: string[] };
export type ParaphraseCorpus = {
  description: string;
  themes: CorpusTheme[];
  hardNegatives: Array<[string, string]>;
  records: CorpusRecord[];
};

export const PARAPHRASE_CORPUS_URL = new URL('../test/fixtures/paraphrase-corpus.json', import.meta.url);

export function loadParaphraseCorpus(url: URL = PARAPHRASE_CORPUS_URL): ParaphraseCorpus {
  return JSON.parse(readFileSync(url, 'utf8')) as ParaphraseCorpus;
}

export type Similarity = (a: string, b: string) => number;
export type Linkage = 'single' | 'average' | 'complete';
/** Any clustering: texts and a threshold in, clusters of input indices out. */
export type ClusterFunction = (texts: readonly string[], threshold: number) => number[][];

/** The engine's tolerance, so that e.g. a similarity of exactly 0.4 meets 0.4
 * despite binary floating point (same rule as meetsThreshold). */
const THRESHOLD_TOLERANCE = 1e-9;
const meets = (value: number, threshold: number): boolean => value >= threshold * (1 - THRESHOLD_TOLERANCE);

/**
 * Exact agglomerative clustering over all pairs: repeatedly merges the two
 * clusters with the highest linkage similarity while it meets the threshold
 * (single: best pair, average: mean of all cross pairs, complete: worst pair).
 * Ties go to the pair of clusters whose smallest indices are lowest, so the
 * result is deterministic. O(n³): meant for corpora of a few hundred texts.
 * Clusters are sorted index arrays, ordered by their smallest index, as
 * clusterTexts returns them.
 */
export function clusterByLinkage(
  texts: readonly string[],
  similarity: Similarity,
  threshold: number,
  linkage: Linkage,
): number[][] {
  return clusterMatrix(similarityMatrix(texts, similarity), texts.length, threshold, linkage);
}

/** All pairwise similarities, row-major n × n (the diagonal is left 0). */
export function similarityMatrix(texts: readonly string[], similarity: Similarity): Float64Array {
  const n = texts.length;
  const matrix = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const s = similarity(texts[i], texts[j]);
      matrix[i * n + j] = s;
      matrix[j * n + i] = s;
    }
  }
  return matrix;
}

/** clusterByLinkage over a precomputed similarity matrix (not modified). */
export function clusterMatrix(matrix: Float64Array, n: number, threshold: number, linkage: Linkage): number[][] {
  // link[i * n + j], for live clusters i and j: the sum of their pairwise
  // similarities (average linkage), or their best / worst pair (single / complete).
  const link = Float64Array.from(matrix);
  const members: number[][] = Array.from({ length: n }, (_, i) => [i]);
  const alive = new Array<boolean>(n).fill(true);
  const value = (i: number, j: number): number =>
    linkage === 'average' ? link[i * n + j] / (members[i].length * members[j].length) : link[i * n + j];
  for (;;) {
    // Cluster slots keep the index of their smallest member, so scanning
    // slots in order breaks ties by smallest indices.
    let best = -Infinity;
    let bi = -1;
    let bj = -1;
    for (let i = 0; i < n; i++) {
      if (!alive[i]) continue;
      for (let j = i + 1; j < n; j++) {
        if (!alive[j]) continue;
        const v = value(i, j);
        if (v > best) {
          best = v;
          bi = i;
          bj = j;
        }
      }
    }
    if (bi < 0 || !meets(best, threshold)) break;
    for (let k = 0; k < n; k++) {
      if (!alive[k] || k === bi || k === bj) continue;
      const a = link[k * n + bi];
      const b = link[k * n + bj];
      const merged = linkage === 'single' ? Math.max(a, b) : linkage === 'complete' ? Math.min(a, b) : a + b;
      link[k * n + bi] = merged;
      link[bi * n + k] = merged;
    }
    members[bi] = members[bi].concat(members[bj]).sort((x, y) => x - y);
    alive[bj] = false;
  }
  return members.filter((_, i) => alive[i]);
}

/** The engine's (calibration shares it with this bench). */
export { adjustedRandIndex, thresholdRange };

/** Cluster number of each item, from clusters of indices that must partition 0..count-1. */
export function labelsOf(count: number, clusters: readonly (readonly number[])[]): number[] {
  const labels = new Array<number>(count).fill(-1);
  clusters.forEach((members, c) => {
    for (const i of members) {
      if (labels[i] !== -1) throw new RangeError(`labelsOf: item ${i} is in two clusters`);
      labels[i] = c;
    }
  });
  if (labels.includes(-1)) throw new RangeError('labelsOf: the clusters do not cover every item');
  return labels;
}

/** A record's true label: its theme, or itself when it is a singleton. */
const truthOf = (r: CorpusRecord): string => r.theme ?? `single:${r.id}`;

export type PairCounts = { found: number; total: number };
export type KindFigures = { ari: number; sameThemePairs: PairCounts; wronglyMergedPairs: number };
export type Evaluation = {
  ari: number;
  clusters: number;
  largestCluster: number;
  /** Pairs in one cluster whose records have different themes (a singleton is its own theme). */
  wronglyMergedPairs: number;
  /** Pairs of same-theme records that share a cluster (recall of pairs). */
  sameThemePairs: PairCounts;
  /** Hard-negative theme pairs with at least one record of each in a common cluster. */
  hardNegativesMerged: Array<[string, string]>;
  /** Record pairs across a hard-negative theme pair that share a cluster. */
  hardNegativeRecordPairsMerged: number;
  incident: KindFigures;
  distillation: KindFigures;
  /** Same-theme pairs of one incident and one distillation that share a cluster. */
  crossKindPairs: PairCounts;
};

function pairFigures(records: readonly CorpusRecord[], labels: readonly number[], keep: (a: CorpusRecord, b: CorpusRecord) => boolean) {
  const sameThemePairs: PairCounts = { found: 0, total: 0 };
  let wronglyMergedPairs = 0;
  for (let i = 0; i < records.length; i++) {
    for (let j = i + 1; j < records.length; j++) {
      const a = records[i];
      const b = records[j];
      if (!keep(a, b)) continue;
      const together = labels[i] === labels[j];
      if (a.theme !== null && a.theme === b.theme) {
        sameThemePairs.total++;
        if (together) sameThemePairs.found++;
      } else if (together) {
        wronglyMergedPairs++;
      }
    }
  }
  return { sameThemePairs, wronglyMergedPairs };
}

/** Scores a partition of corpus.records (clusters of record indices). */
export function evaluatePartition(corpus: ParaphraseCorpus, clusters: readonly (readonly number[])[]): Evaluation {
  const { records } = corpus;
  const labels = labelsOf(records.length, clusters);
  const all = pairFigures(records, labels, () => true);

  const byKind = (kind: RecordKind): KindFigures => {
    const idx = records.flatMap((r, i) => (r.kind === kind ? [i] : []));
    const figures = pairFigures(records, labels, (a, b) => a.kind === kind && b.kind === kind);
    return {
      ari: adjustedRandIndex(idx.map((i) => truthOf(records[i])), idx.map((i) => labels[i])),
      ...figures,
    };
  };

  const hardNegativesMerged: Array<[string, string]> = [];
  let hardNegativeRecordPairsMerged = 0;
  for (const [x, y] of corpus.hardNegatives) {
    let merged = 0;
    records.forEach((a, i) => {
      if (a.theme !== x) return;
      records.forEach((b, j) => {
        if (b.theme === y && labels[i] === labels[j]) merged++;
      });
    });
    if (merged > 0) hardNegativesMerged.push([x, y]);
    hardNegativeRecordPairsMerged += merged;
  }

  return {
    ari: adjustedRandIndex(records.map(truthOf), labels),
    clusters: clusters.length,
    largestCluster: Math.max(0, ...clusters.map((c) => c.length)),
    wronglyMergedPairs: all.wronglyMergedPairs,
    sameThemePairs: all.sameThemePairs,
    hardNegativesMerged,
    hardNegativeRecordPairsMerged,
    incident: byKind('incident'),
    distillation: byKind('distillation'),
    crossKindPairs: pairFigures(records, labels, (a, b) => a.kind !== b.kind).sameThemePairs,
  };
}

export type SweepRow = { threshold: number; evaluation: Evaluation };

/** Clusters the corpus at each threshold and scores it. */
export function sweepThresholds(corpus: ParaphraseCorpus, cluster: ClusterFunction, thresholds: readonly number[]): SweepRow[] {
  const texts = corpus.records.map((r) => r.text);
  return thresholds.map((threshold) => ({ threshold, evaluation: evaluatePartition(corpus, cluster(texts, threshold)) }));
}

/** The sweep row with the highest ARI (the lowest threshold among ties). */
export function bestRow(rows: readonly SweepRow[]): SweepRow {
  return rows.reduce((best, row) => (row.evaluation.ari > best.evaluation.ari ? row : best));
}

export type AlignmentFigures = {
  /** Themed records whose best-matching principle is their own theme's, at or above the threshold. */
  ownTheme: PairCounts;
  /** Themed records whose best match (at or above the threshold) is another theme's principle. */
  wrongTheme: number;
  /** Of those, matched to the principle of their hard-negative partner theme. */
  hardNegativeTheme: number;
  /** Singletons that match some principle at or above the threshold (they should be NOVEL). */
  singletonsAligned: PairCounts;
};

/**
 * Per-record alignment against the themes' trait principles, as the
 * evidence report aligns a cluster: the best-matching principle wins if it
 * meets the threshold, else NOVEL. Ties go to the earlier theme.
 */
export function evaluateAlignment(corpus: ParaphraseCorpus, similarity: Similarity, threshold: number): AlignmentFigures {
  const partner = new Map<string, string>();
  for (const [x, y] of corpus.hardNegatives) {
    partner.set(x, y);
    partner.set(y, x);
  }
  const figures: AlignmentFigures = {
    ownTheme: { found: 0, total: 0 },
    wrongTheme: 0,
    hardNegativeTheme: 0,
    singletonsAligned: { found: 0, total: 0 },
  };
  for (const record of corpus.records) {
    let best = -Infinity;
    let bestTheme = '';
    for (const theme of corpus.themes) {
      for (const principle of theme.principles) {
        const s = similarity(record.text, principle);
        if (s > best) {
          best = s;
          bestTheme = theme.id;
        }
      }
    }
    const aligned = meets(best, threshold);
    if (record.theme === null) {
      figures.singletonsAligned.total++;
      if (aligned) figures.singletonsAligned.found++;
      continue;
    }
    figures.ownTheme.total++;
    if (!aligned) continue;
    if (bestTheme === record.theme) figures.ownTheme.found++;
    else {
      figures.wrongTheme++;
      if (partner.get(record.theme) === bestTheme) figures.hardNegativeTheme++;
    }
  }
  return figures;
}

/**
 * Retrieval quality of the similarity itself, independent of any threshold or
 * linkage: for each themed record, whether its most similar other record
 * (ties to the lower index) has the same theme.
 */
export function nearestNeighbourSameTheme(corpus: ParaphraseCorpus, similarity: Similarity): PairCounts {
  const { records } = corpus;
  const counts: PairCounts = { found: 0, total: 0 };
  records.forEach((record, i) => {
    if (record.theme === null) return;
    let best = -Infinity;
    let nearest = -1;
    records.forEach((other, j) => {
      if (j === i) return;
      const s = similarity(record.text, other.text);
      if (s > best) {
        best = s;
        nearest = j;
      }
    });
    counts.total++;
    if (records[nearest].theme === record.theme) counts.found++;
  });
  return counts;
}

const pct = (p: PairCounts): string => `${p.found}/${p.total} (${((100 * p.found) / Math.max(1, p.total)).toFixed(0)} %)`;
// ARI to three places, with -0.0004 shown as 0.000, not -0.000.
const ari3 = (x: number): string => (Math.abs(x) < 0.0005 ? 0 : x).toFixed(3);

/** One line of figures for a sweep row. */
export function summarize(e: Evaluation): string {
  return [
    `ARI ${ari3(e.ari)}`,
    `incident ${ari3(e.incident.ari)}`,
    `distillation ${ari3(e.distillation.ari)}`,
    `pairs found ${pct(e.sameThemePairs)}`,
    `wrongly merged ${e.wronglyMergedPairs}`,
    `hard negatives merged ${e.hardNegativesMerged.length}`,
    `largest ${e.largestCluster}`,
  ].join(', ');
}

/** Detailed rows for one mode at one threshold. */
export function evaluationRows(label: string, e: Evaluation): Array<{ name: string; value: string }> {
  return [
    { name: `${label}: adjusted Rand index`, value: ari3(e.ari) },
    { name: `${label}: ARI, incidents only / distillations only`, value: `${ari3(e.incident.ari)} / ${ari3(e.distillation.ari)}` },
    { name: `${label}: same-theme pairs found`, value: pct(e.sameThemePairs) },
    {
      name: `${label}: same-theme pairs found, incident-incident / distillation-distillation / across`,
      value: `${pct(e.incident.sameThemePairs)} / ${pct(e.distillation.sameThemePairs)} / ${pct(e.crossKindPairs)}`,
    },
    { name: `${label}: pairs wrongly merged`, value: String(e.wronglyMergedPairs) },
    {
      name: `${label}: hard-negative theme pairs merged`,
      value: `${e.hardNegativesMerged.length}${e.hardNegativesMerged.length ? ` (${e.hardNegativesMerged.map(([x, y]) => `${x}/${y}`).join(', ')})` : ''}`,
    },
    { name: `${label}: clusters (largest)`, value: `${e.clusters} (${e.largestCluster})` },
  ];
}

export const SWEEP_THRESHOLDS = thresholdRange(0.05, 0.6, 0.05);
/** Lexical cosines of paraphrases are small on this corpus: its sweep is finer and starts lower. */
export const LEXICAL_SWEEP_THRESHOLDS = [...thresholdRange(0.01, 0.1, 0.01), ...thresholdRange(0.15, 0.6, 0.05)];

/** The largest labelled theme (a singleton counts as a theme of 1). */
export function largestTheme(corpus: ParaphraseCorpus): number {
  const sizes = new Map<string, number>();
  for (const r of corpus.records) if (r.theme !== null) sizes.set(r.theme, (sizes.get(r.theme) ?? 0) + 1);
  return Math.max(1, ...sizes.values());
}

/**
 * How a mode's default threshold is chosen: the engine's rule (chooseThreshold, which `souls calibrate` applies to
 * a user's labels) with the largest labelled theme as the bound and hard-negative theme pairs merged as the tie-break.
 */
export function chooseThreshold(corpus: ParaphraseCorpus, rows: readonly SweepRow[]): SweepRow {
  return chooseSweepRow(rows, largestTheme(corpus), (row) => ({ ...row.evaluation, hardNegativesMerged: row.evaluation.hardNegativesMerged.length }));
}

export type ModeUnderTest = {
  /** e.g. 'trigram, single linkage' */
  label: string;
  cluster: ClusterFunction;
  /** The mode's default clustering threshold. */
  threshold: number;
  /** The pairwise similarity, for nearest neighbours and alignment. */
  similarity: Similarity;
  /** The threshold at which a record counts as REINFORCING a principle. */
  alignmentThreshold: number;
};

/** Bench rows for one mode: figures at its threshold, the best of the sweep, every sweep row, nearest neighbours, alignment. */
export function paraphraseRows(corpus: ParaphraseCorpus, mode: ModeUnderTest, thresholds = SWEEP_THRESHOLDS): Array<{ name: string; value: string }> {
  const { label } = mode;
  const rows = evaluationRows(`${label}, ${mode.threshold}`, sweepThresholds(corpus, mode.cluster, [mode.threshold])[0].evaluation);
  const sweep = sweepThresholds(corpus, mode.cluster, thresholds);
  const best = bestRow(sweep);
  const chosen = chooseThreshold(corpus, sweep);
  rows.push({ name: `${label}: best threshold of the sweep`, value: `${best.threshold} (ARI ${ari3(best.evaluation.ari)}, largest cluster ${best.evaluation.largestCluster})` });
  rows.push({
    name: `${label}: best with no cluster larger than a theme (${largestTheme(corpus)})`,
    value: `${chosen.threshold} (ARI ${ari3(chosen.evaluation.ari)})`,
  });
  for (const row of sweep) rows.push({ name: `${label}, sweep ${row.threshold.toFixed(2)}`, value: summarize(row.evaluation) });
  rows.push({ name: `${label}: nearest neighbour has the same theme`, value: pct(nearestNeighbourSameTheme(corpus, mode.similarity)) });
  const alignment = evaluateAlignment(corpus, mode.similarity, mode.alignmentThreshold);
  rows.push({
    name: `${label}: alignment at ${mode.alignmentThreshold}, records REINFORCING their theme's principle`,
    value: `${pct(alignment.ownTheme)}; another theme's: ${alignment.wrongTheme} (its hard negative's: ${alignment.hardNegativeTheme}); singletons aligned: ${pct(alignment.singletonsAligned)}`,
  });
  return rows;
}

/** The engine's two text-only similarity modes at their default thresholds and linkages, aligning at their default redundancyThreshold. */
export const ENGINE_MODES: ModeUnderTest[] = [
  {
    label: 'trigram, single linkage',
    cluster: clusterTexts,
    threshold: defaultClusteringThresholds.trigram,
    similarity: trigramSimilarity,
    alignmentThreshold: defaultRedundancyThresholds.trigram,
  },
  {
    label: 'lexical, complete linkage',
    cluster: (texts, threshold) => clusterLexical(texts, threshold, 'complete'),
    threshold: defaultClusteringThresholds.lexical,
    similarity: lexicalSimilarity,
    alignmentThreshold: defaultRedundancyThresholds.lexical,
  },
];

/** npm run bench section: both similarity modes on the corpus. */
export async function benchParaphrase(): Promise<Array<{ name: string; value: string }>> {
  const corpus = loadParaphraseCorpus();
  const themed = corpus.records.filter((r) => r.theme !== null).length;
  return [
    {
      name: 'corpus',
      value: `${corpus.records.length} records: ${themed} in ${corpus.themes.length} themes, ${corpus.records.length - themed} singletons, ${corpus.hardNegatives.length} hard-negative theme pairs`,
    },
    ...paraphraseRows(corpus, ENGINE_MODES[0]),
    ...paraphraseRows(corpus, ENGINE_MODES[1], LEXICAL_SWEEP_THRESHOLDS),
    ...paraphraseRows(corpus, { ...ENGINE_MODES[1], label: 'lexical, average linkage', cluster: (texts, threshold) => clusterLexical(texts, threshold, 'average') }, LEXICAL_SWEEP_THRESHOLDS),
  ];
}
