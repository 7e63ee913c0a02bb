/**
 * The similarity modes side by side: quality on the labelled paraphrase
 * corpus at each mode's default threshold, clustering time on the seeded
 * observation corpus (300 and 3,000 shards), the largest cluster at 3,000,
 * and what a dropShard costs when the soul's pending shards are re-clustered
 * by the gate (lexical recomputes the partition whenever the set changes).
 */
import { clusterMatrix, ENGINE_MODES, evaluatePartition, LEXICAL_SWEEP_THRESHOLDS, loadParaphraseCorpus } from './paraphrase.ts';
import { closeSoulsDb, createSoul, DAY_MS, defaultClusteringThresholds, dropShard, dropShards, manualClock, openSoulsDb, similarityModes } from '../src/engine/index.ts';
import { clusterSteps } from '../src/engine/similarity-modes.ts';
import { lexicalVectors, cosineMatrixSteps } from '../src/engine/lexical.ts';
import { runSteps } from '../src/engine/slices.ts';
import { decodeEmbedding, encodeEmbedding } from '../src/engine/provided.ts';
import { timeRuns } from './clustering.ts';
import { makeObservationCorpus, makeRng } from './corpus.ts';
import { syntheticEmbeddings } from './provided.ts';

/** The noise level whose same-theme cosine (about 0.5) stands for a middling embedding model. */
const SYNTHETIC_NOISE = 1;

type Row = { name: string; value: string };

const ms = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(1));

/** Random unit-free vectors, one per text, of a typical sentence-embedding dimension (provided mode's timing, not its quality). */
const BENCH_DIMENSION = 384;
function randomEmbeddings(count: number, seed: number): number[][] {
  const random = makeRng(seed);
  return Array.from({ length: count }, () => Array.from({ length: BENCH_DIMENSION }, () => random() - 0.5));
}
const stored = (values: number[]) => decodeEmbedding(encodeEmbedding('embedding', values));

/** Mean ms of a dropShard into a soul already holding `pending` shards that pass the cheap gate (so each drop clusters them). */
async function dropShardMs(mode: (typeof similarityModes)[number], pending: number): Promise<number> {
  const clock = manualClock(Date.UTC(2026, 0, 1));
  const db = openSoulsDb({ clock, settings: { similarity: mode } });
  const soul = await createSoul(db, { name: 'Bench', essence: 'A soul with many pending shards.' });
  const texts = makeObservationCorpus(pending + 40, 11);
  const embeddings = mode === 'provided' ? randomEmbeddings(pending + 40, 5) : [];
  const sources = ['chat', 'review', 'journal'];
  await dropShards(
    db,
    texts.slice(0, pending).map((content, i) => ({
      content,
      source: sources[i % 3],
      soulIds: [soul.id],
      createdAt: clock.now() - (pending - i) * 60_000 - 2 * DAY_MS,
      embedding: embeddings[i],
    })),
  );
  const start = performance.now();
  for (let i = pending; i < pending + 40; i++) await dropShard(db, texts[i], sources[i % 3], [soul.id], { embedding: embeddings[i] });
  const mean = (performance.now() - start) / 40;
  closeSoulsDb(db);
  return mean;
}

export async function benchSimilarityModes(): Promise<Row[]> {
  const rows: Row[] = [];
  const corpus = loadParaphraseCorpus();
  const texts = corpus.records.map((r) => r.text);
  const observations = { 300: makeObservationCorpus(300, 42), 3000: makeObservationCorpus(3000, 42) };
  const synthetic = syntheticEmbeddings(corpus, SYNTHETIC_NOISE);
  const randomVectors = { 300: randomEmbeddings(300, 42).map(stored), 3000: randomEmbeddings(3000, 42).map(stored) };
  // semantic needs its encoder's vectors: bench/semantic.ts.
  for (const mode of similarityModes.filter((m) => m !== 'semantic')) {
    const threshold = defaultClusteringThresholds[mode];
    const label = mode === 'provided' ? `provided at ${threshold} (SYNTHETIC vectors, σ ${SYNTHETIC_NOISE}; random ${BENCH_DIMENSION}-d for timing)` : `${mode} at ${threshold}`;
    const engineMode = ENGINE_MODES.find((m) => m.label.startsWith(mode));
    const clusters = engineMode ? engineMode.cluster(texts, threshold) : runSteps(clusterSteps(mode, texts, threshold, synthetic));
    const e = evaluatePartition(corpus, clusters);
    rows.push({ name: `${label}: corpus ARI (incidents / distillations)`, value: `${e.ari.toFixed(3)} (${e.incident.ari.toFixed(3)} / ${e.distillation.ari.toFixed(3)})` });
    rows.push({ name: `${label}: corpus pairs wrongly merged`, value: String(e.wronglyMergedPairs) });
    rows.push({ name: `${label}: corpus same-theme pairs found`, value: `${e.sameThemePairs.found} of ${e.sameThemePairs.total}` });
    rows.push({ name: `${label}: corpus hard-negative theme pairs merged`, value: `${e.hardNegativesMerged.length} of ${corpus.hardNegatives.length}` });
    for (const n of [300, 3000] as const) {
      const run = timeRuns(n === 300 ? 15 : 5, () => runSteps(clusterSteps(mode, observations[n], threshold, mode === 'provided' ? randomVectors[n] : [])));
      const largest = Math.max(...run.result.map((c) => c.length));
      rows.push({ name: `${label}: clustering ${n.toLocaleString('en-US')} shards (ms, median)`, value: ms(run.ms) });
      rows.push({ name: `${label}: clusters at ${n.toLocaleString('en-US')} (largest)`, value: `${run.result.length} (${largest})` });
    }
    for (const pending of [300, 2000]) {
      rows.push({ name: `${label}: dropShard with ${pending.toLocaleString('en-US')} pending shards re-clustered (ms, mean of 40)`, value: ms(await dropShardMs(mode, pending)) });
    }
  }
  const sweep = LEXICAL_SWEEP_THRESHOLDS.filter((t) => t <= 0.3).map((t) => {
    const clusters = runSteps(clusterSteps('lexical', observations[3000], t));
    return `${t}: ${Math.max(...clusters.map((c) => c.length))}`;
  });
  rows.push({ name: 'lexical sweep: largest cluster at 3,000 observations, by threshold', value: sweep.join(', ') });
  // The lexical NN-chain against the greedy all-pairs reference, at 300 observations.
  const vectors = lexicalVectors(observations[300]);
  const condensed = runSteps(cosineMatrixSteps(vectors));
  const n = vectors.length;
  const full = new Float64Array(n * n);
  for (let i = 0, k = 0; i < n; i++) for (let j = i + 1; j < n; j++, k++) full[i * n + j] = full[j * n + i] = condensed[k];
  const agree =
    JSON.stringify(runSteps(clusterSteps('lexical', observations[300], defaultClusteringThresholds.lexical))) ===
    JSON.stringify(clusterMatrix(full, n, defaultClusteringThresholds.lexical, 'average'));
  rows.push({ name: 'lexical at 300: same partition as the greedy all-pairs average linkage', value: agree ? 'yes' : 'NO' });
  return rows;
}
