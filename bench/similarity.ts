/**
 * The similarity modes side by side: quality on the labelled paraphrase
 * corpus at each mode's default threshold and linkage, clustering time on the
 * seeded observation corpus (300 and 3,000 shards) afresh and through a warm
 * cluster memo, the largest cluster at 3,000 against its true theme (a fresh
 * text and its near-duplicates), and what a dropShard costs when the soul's
 * pending shards pass the cheap gate (trigram updates its partition; complete
 * linkage looks for one pair below the threshold, and clusters only when it
 * finds none; the warm-memo rows recompute lexical's partition from kept
 * terms and vector cosines, as a read does).
 */
import { clusterMatrix, ENGINE_MODES, evaluatePartition, loadParaphraseCorpus } from './paraphrase.ts';
import { closeSoulsDb, createSoul, DAY_MS, defaultClusteringThresholds, dropShard, dropShards, manualClock, openSoulsDb, similarityModes } from '../src/engine/index.ts';
import { clusterSteps } from '../src/engine/similarity-modes.ts';
import { clusterLexicalSteps, lexicalVectors, cosineMatrixSteps } from '../src/engine/lexical.ts';
import { ClusterMemo } from '../src/engine/cluster-memo.ts';
import { runSteps } from '../src/engine/slices.ts';
import { decodeEmbedding, encodeEmbedding } from '../src/engine/provided.ts';
import { median } from './clustering.ts';
import { makeLabelledObservationCorpus, makeObservationCorpus, makeRng } from './corpus.ts';
import { syntheticEmbeddings } from './provided.ts';

/** The noise level whose same-theme cosine (about 0.5) stands for a middling embedding model. */
const SYNTHETIC_NOISE = 1;

type Row = { name: string; value: string };

const ms = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(1));

/**
 * Medians of `runs` calls: wall ms, and this process's CPU ms (user + system), which other work on a shared
 * machine inflates far less than the wall clock; and the last result.
 */
function timeWallCpu<T>(runs: number, fn: () => T): { ms: number; cpuMs: number; result: T } {
  const walls: number[] = [];
  const cpus: number[] = [];
  let result!: T;
  for (let r = 0; r < runs; r++) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    result = fn();
    walls.push(performance.now() - start);
    const used = process.cpuUsage(cpu);
    cpus.push((used.user + used.system) / 1000);
  }
  return { ms: median(walls), cpuMs: median(cpus), result };
}
const wallCpu = (t: { ms: number; cpuMs: number }): string => `${ms(t.ms)} (CPU ${ms(t.cpuMs)})`;

/** Random unit-free vectors, one per text, of a typical sentence-embedding dimension (provided mode's timing, not its quality). */
const BENCH_DIMENSION = 512;
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

/** Whether a cluster holds more than its true theme (the theme most of its members have) plus 10 %. */
export function themeExcess(clusters: readonly (readonly number[])[], labels: readonly number[]): { largest: number; largestTheme: number; over: number; overMembers: number } {
  const themeSize = new Map<number, number>();
  for (const label of labels) themeSize.set(label, (themeSize.get(label) ?? 0) + 1);
  let largest = 0;
  let largestTheme = 0;
  let over = 0;
  let overMembers = 0;
  for (const cluster of clusters) {
    const counts = new Map<number, number>();
    for (const i of cluster) counts.set(labels[i], (counts.get(labels[i]) ?? 0) + 1);
    let theme = -1;
    let most = 0;
    for (const [label, count] of counts) if (count > most || (count === most && label < theme)) [theme, most] = [label, count];
    const size = themeSize.get(theme)!;
    if (cluster.length > 1.1 * size) {
      over++;
      overMembers += cluster.length;
    }
    if (cluster.length > largest) [largest, largestTheme] = [cluster.length, size];
  }
  return { largest, largestTheme, over, overMembers };
}

/**
 * Median ms of re-clustering a soul's `n` shards through the cluster memo after one shard left and one came (the
 * gate's work on a drop past the cheap checks): texts, terms and vector cosines already kept.
 */
export function memoChangeMs(mode: (typeof similarityModes)[number], texts: readonly string[], vectors: readonly (Float32Array | null)[], n: number, runs: number): { ms: number; cpuMs: number } {
  const threshold = defaultClusteringThresholds[mode];
  const bytes = new Map(vectors.flatMap((v, i) => (v ? [[i + 1, encodeEmbedding('embedding', Array.from(v))] as const] : [])));
  const memo = new ClusterMemo(threshold, undefined, mode, (ids) => new Map(ids.flatMap((id) => (bytes.has(id) ? [[id, bytes.get(id)!] as const] : []))));
  const load = (ids: number[]) => new Map(ids.map((id) => [id, texts[id - 1]]));
  const window = (from: number) => Array.from({ length: n }, (_, i) => from + i);
  memo.partition(1, window(1), load);
  memo.partition(1, window(2), load); // warm: a change of the set
  let from = 2;
  return timeWallCpu(runs, () => memo.partition(1, window(++from), load));
}

export async function benchSimilarityModes(): Promise<Row[]> {
  const rows: Row[] = [];
  const corpus = loadParaphraseCorpus();
  const texts = corpus.records.map((r) => r.text);
  const labelled = makeLabelledObservationCorpus(3000 + 40, 42);
  const observations = { 300: labelled.texts.slice(0, 300), 3000: labelled.texts.slice(0, 3000) };
  const synthetic = syntheticEmbeddings(corpus, SYNTHETIC_NOISE);
  const randomVectors = randomEmbeddings(3000 + 40, 42).map(stored);
  const themeSizes = new Map<number, number>();
  for (const theme of labelled.labels.slice(0, 3000)) themeSizes.set(theme, (themeSizes.get(theme) ?? 0) + 1);
  rows.push({ name: 'observation corpus at 3,000: true themes (a fresh text and its near-duplicates)', value: `${themeSizes.size}, the largest of ${Math.max(...themeSizes.values())}` });
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
      const vectors = mode === 'provided' ? randomVectors.slice(0, n) : [];
      const run = timeWallCpu(n === 300 ? 15 : 5, () => runSteps(clusterSteps(mode, observations[n], threshold, vectors)));
      rows.push({ name: `${label}: clustering ${n.toLocaleString('en-US')} shards afresh (ms, median)`, value: wallCpu(run) });
      if (mode !== 'trigram') {
        const memoVectors = mode === 'provided' ? randomVectors : [];
        rows.push({
          name: `${label}: re-clustering ${n.toLocaleString('en-US')} shards after one left and one came, memo warm (ms, median)`,
          value: wallCpu(memoChangeMs(mode, labelled.texts, memoVectors, n, n === 300 ? 15 : 5)),
        });
      }
      if (n === 3000) {
        const excess = themeExcess(run.result, labelled.labels.slice(0, 3000));
        rows.push({ name: `${label}: clusters at 3,000 (largest, and its true theme)`, value: `${run.result.length} (${excess.largest}; theme of ${excess.largestTheme})` });
        rows.push({ name: `${label}: clusters at 3,000 larger than their true theme + 10 % (their shards)`, value: `${excess.over} (${excess.overMembers})` });
      }
    }
    for (const pending of [300, 2000]) {
      rows.push({ name: `${label}: dropShard with ${pending.toLocaleString('en-US')} pending shards re-clustered (ms, mean of 40)`, value: ms(await dropShardMs(mode, pending)) });
    }
  }
  // semantic's clustering is provided's code with its own threshold and fallback scale; timed on the same random vectors.
  for (const n of [300, 3000] as const) {
    rows.push({
      name: `semantic at ${defaultClusteringThresholds.semantic} (random ${BENCH_DIMENSION}-d vectors for timing): re-clustering ${n.toLocaleString('en-US')} shards after one left and one came, memo warm (ms, median)`,
      value: wallCpu(memoChangeMs('semantic', labelled.texts, randomVectors, n, n === 300 ? 15 : 5)),
    });
  }
  for (const mode of ['lexical', 'trigram'] as const) {
    const sweep = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5].map((t) => {
      const excess = themeExcess(runSteps(clusterSteps(mode, observations[3000], t)), labelled.labels.slice(0, 3000));
      return `${t}: ${excess.largest} (${excess.over})`;
    });
    rows.push({ name: `${mode} sweep at 3,000 observations: largest cluster (clusters over their theme + 10 %), by threshold`, value: sweep.join(', ') });
  }
  // The NN-chain against the greedy all-pairs reference, at 300 observations, both linkages.
  const vectors = lexicalVectors(observations[300]);
  const condensed = runSteps(cosineMatrixSteps(vectors));
  const n = vectors.length;
  const full = new Float64Array(n * n);
  for (let i = 0, k = 0; i < n; i++) for (let j = i + 1; j < n; j++, k++) full[i * n + j] = full[j * n + i] = condensed[k];
  for (const linkage of ['average', 'complete'] as const) {
    const agree =
      JSON.stringify(runSteps(clusterLexicalSteps(observations[300], defaultClusteringThresholds.lexical, linkage))) ===
      JSON.stringify(clusterMatrix(full, n, defaultClusteringThresholds.lexical, linkage));
    rows.push({ name: `lexical at 300: same partition as the greedy all-pairs ${linkage} linkage`, value: agree ? 'yes' : 'NO' });
  }
  return rows;
}

if (import.meta.main) {
  for (const row of await benchSimilarityModes()) console.log(`${row.name.padEnd(110)}  ${row.value}`);
}
