// Engine benchmarks on a file database (WAL, synchronous=NORMAL), as a server would run it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import {
  DAY_MS,
  closeSoulsDb,
  createSoul,
  crystallizationReadiness,
  dropShard,
  dropShards,
  fadeExhaustedShards,
  formatEvidence,
  manualClock,
  openSoulsDb,
  type ShardInput,
  type SoulsDb,
} from '../src/engine/index.ts';
import { expiryCutoff } from '../src/engine/settings.ts';
import { initSoulsTables } from '../src/store/sqlite.ts';
import { makeObservationCorpus, makeRng } from './corpus.ts';
import type { Better } from './report.ts';

/**
 * One printed row. `value` is what the table shows; `numbers`, `unit` and `better` say what it measured when
 * reading them back from the text would guess wrong (bench/report.ts's figureOf reads a row without them).
 */
export type BenchRow = { name: string; value: string; numbers?: number[]; unit?: string | null; better?: Better | null };

const START = Date.UTC(2026, 0, 1);
const SOURCES = ['delegation', 'distillation', 'quest_turnin', 'manual_review', 'reader_feedback', 'session_observation'];

export function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function time(work: () => void): number {
  const start = performance.now();
  work();
  return performance.now() - start;
}

async function timeAsync(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

function tempPath(dir: string, name: string): string {
  return join(dir, name);
}

async function seedSouls(db: SoulsDb, count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) ids.push((await createSoul(db, { name: `soul-${i}`, essence: `Essence of soul ${i}.` })).id);
  return ids;
}

/** The same rows dropShard writes (shard, attribution, tags, FTS via trigger), with no validation, gate or clustering. */
function rawInsert(database: DatabaseSync) {
  const shard = database.prepare(`INSERT INTO soul_shards (content, source, status, sealed, created_at, updated_at, recorded_at) VALUES (?, ?, 'pending', 0, ?, ?, ?)`);
  const soul = database.prepare('INSERT INTO shard_souls (shard_id, soul_id) VALUES (?, ?)');
  const tag = database.prepare('INSERT OR IGNORE INTO shard_tags (shard_id, tag) VALUES (?, ?)');
  return (input: ShardInput, now: number) => {
    const { lastInsertRowid } = shard.run(input.content, input.source, input.createdAt ?? now, now, now);
    for (const soulId of input.soulIds) soul.run(lastInsertRowid, soulId);
    for (const t of input.tags ?? []) tag.run(lastInsertRowid, t);
  };
}

function shardInputs(count: number, soulIds: number[], seed: number, now: number, spreadDays = 30): ShardInput[] {
  const rng = makeRng(seed);
  const texts = makeObservationCorpus(count, seed);
  return texts.map((content, i) => ({
    content,
    source: SOURCES[Math.floor(rng() * SOURCES.length)],
    soulIds: [soulIds[Math.floor(rng() * soulIds.length)]],
    tags: i % 3 === 0 ? ['bench'] : [],
    createdAt: now - Math.floor(rng() * spreadDays * DAY_MS),
  }));
}

export type Workload = { label: string; sourceOf: (input: ShardInput, i: number) => string };

/**
 * Two workloads: every soul passing the cheap gate (so each write also
 * clusters, incrementally), and souls held back by one condition (one source
 * each), where a write costs only validation and the gate's one query.
 */
export const workloads: Workload[] = [
  { label: 'souls past the cheap gate (6 sources, 30 days)', sourceOf: (input) => input.source },
  { label: 'souls below the cheap gate (one source each)', sourceOf: (input) => `source-${input.soulIds[0]}` },
];

/** Wall-clock and CPU time (this process, all threads) of some work, in ms. */
type Sample = { wall: number; cpu: number };

async function sample(work: () => unknown): Promise<Sample> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  await work();
  const wall = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / 1000 };
}

/** Per-shard times of each way of writing, medians over the rounds of one run. */
type Run = Record<'engineSingle' | 'rawSingle' | 'engineBatch' | 'rawBatch' | 'rawMulti', Sample>;

function medianSample(samples: readonly Sample[]): Sample {
  return { wall: median(samples.map((s) => s.wall)), cpu: median(samples.map((s) => s.cpu)) };
}

/** Raw inserts of a whole batch as multi-row statements, the way the store writes one: what the raw baseline would gain from the store's own technique. */
function rawMultiInsert(database: DatabaseSync) {
  const statements = new Map<string, ReturnType<DatabaseSync['prepare']>>();
  const many = (head: string, row: string, rows: SQLInputValue[][]) => {
    for (let at = 0; at < rows.length; at += 256) {
      const part = rows.slice(at, at + 256);
      const sql = `${head} VALUES ${Array(part.length).fill(row).join(', ')}`;
      let statement = statements.get(sql);
      if (!statement) statements.set(sql, (statement = database.prepare(sql)));
      statement.run(...part.flat());
    }
  };
  return (inputs: readonly ShardInput[], now: number) => {
    const first = Number((database.prepare('SELECT COALESCE(MAX(id), 0) + 1 AS id FROM soul_shards').get() as { id: number }).id);
    many(`INSERT INTO soul_shards (id, content, source, status, sealed, created_at, updated_at, recorded_at) `, "(?, ?, ?, 'pending', 0, ?, ?, ?)", inputs.map((input, i) => [first + i, input.content, input.source, input.createdAt ?? now, now, now]));
    many('INSERT INTO shard_souls (shard_id, soul_id)', '(?, ?)', inputs.flatMap((input, i) => input.soulIds.map((soulId) => [first + i, soulId])));
    many('INSERT OR IGNORE INTO shard_tags (shard_id, tag)', '(?, ?)', inputs.flatMap((input, i) => (input.tags ?? []).map((tag) => [first + i, tag])));
  };
}

/**
 * dropShard and dropShards beside raw inserts of the same rows into the same tables, interleaved in one
 * run. Raw writes no gate rows: keeping them is the engine's work, so it is counted against the engine.
 */
async function writeRun(dir: string, workload: Workload, name: string): Promise<Run> {
  const clock = manualClock(START + 60 * DAY_MS);
  const db = openSoulsDb({ path: tempPath(dir, `writes-${name}.db`), clock });
  const soulIds = await seedSouls(db, 200);
  const rawDbs = ['raw', 'multi'].map((kind) => {
    const rawDb = new DatabaseSync(tempPath(dir, `${kind}-${name}.db`));
    rawDb.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON');
    initSoulsTables(rawDb);
    const soul = rawDb.prepare('INSERT INTO souls (id, name, name_key, slug, essence, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, 0)');
    for (const id of soulIds) soul.run(id, `soul-${id}`, `soul-${id}`, `soul-${id}`, 'x');
    return rawDb;
  });
  const [rawDb, multiDb] = rawDbs;
  const insert = rawInsert(rawDb);
  const insertMany = rawMultiInsert(multiDb);
  const now = clock.now();
  const perShard = (s: Sample, n: number): Sample => ({ wall: s.wall / n, cpu: s.cpu / n });

  const singles = 3000;
  const inputs = shardInputs(singles * 2, soulIds, 7, now).map((input, i) => ({ ...input, source: workload.sourceOf(input, i) }));
  const rounds = 3;
  const samples: Record<keyof Run, Sample[]> = { engineSingle: [], rawSingle: [], engineBatch: [], rawBatch: [], rawMulti: [] };
  for (let round = 0; round < rounds; round++) {
    const slice = inputs.slice((round * singles) / rounds, ((round + 1) * singles) / rounds);
    const raw = await sample(() => {
      for (const input of slice) {
        rawDb.exec('BEGIN IMMEDIATE');
        insert(input, now);
        rawDb.exec('COMMIT');
      }
    });
    samples.rawSingle.push(perShard(raw, slice.length));
    const engine = await sample(async () => {
      for (const input of slice) await dropShard(db, input.content, input.source, input.soulIds, input);
    });
    samples.engineSingle.push(perShard(engine, slice.length));
  }
  const batch = inputs.slice(singles);
  for (let start = 0; start < batch.length; start += BATCH_SIZE) {
    const chunk = batch.slice(start, start + BATCH_SIZE);
    const raw = await sample(() => {
      rawDb.exec('BEGIN IMMEDIATE');
      for (const input of chunk) insert(input, now);
      rawDb.exec('COMMIT');
    });
    samples.rawBatch.push(perShard(raw, chunk.length));
    const multi = await sample(() => {
      multiDb.exec('BEGIN IMMEDIATE');
      insertMany(chunk, now);
      multiDb.exec('COMMIT');
    });
    samples.rawMulti.push(perShard(multi, chunk.length));
    samples.engineBatch.push(perShard(await sample(() => dropShards(db, chunk)), chunk.length));
  }
  closeSoulsDb(db);
  for (const rawDb of rawDbs) rawDb.close();
  return Object.fromEntries(Object.entries(samples).map(([key, list]) => [key, medianSample(list)])) as Run;
}

const BATCH_SIZE = 1000;

/** Fresh databases per run; each figure is the median over the runs, ratios with their spread. */
const WRITE_RUNS = 5;

async function writeThroughput(dir: string, workload: Workload, index: number): Promise<BenchRow[]> {
  const runs: Run[] = [];
  for (let run = 0; run < WRITE_RUNS; run++) runs.push(await writeRun(dir, workload, `${index}-${run}`));
  const perSec = (key: keyof Run) => (1000 / median(runs.map((r) => r[key].wall))).toFixed(0);
  const ratio = (engine: keyof Run, raw: keyof Run, clock: keyof Sample) => {
    const ratios = runs.map((r) => r[raw][clock] / r[engine][clock]).sort((a, b) => a - b);
    return `${median(ratios).toFixed(2)} (${ratios[0].toFixed(2)}–${ratios.at(-1)!.toFixed(2)})`;
  };
  const label = workload.label;
  const of = `median of ${WRITE_RUNS} runs (min–max)`;
  return [
    { name: `${label}: dropShard/s, autocommit`, value: perSec('engineSingle') },
    { name: `${label}: raw insert/s, autocommit, same tables`, value: perSec('rawSingle') },
    { name: `${label}: dropShard ÷ raw, wall clock, ${of} (target ≥ 0.8)`, value: ratio('engineSingle', 'rawSingle', 'wall') },
    { name: `${label}: dropShard ÷ raw, CPU time, ${of}`, value: ratio('engineSingle', 'rawSingle', 'cpu') },
    { name: `${label}: dropShards/s, batches of ${BATCH_SIZE}`, value: perSec('engineBatch') },
    { name: `${label}: raw insert/s, batches of ${BATCH_SIZE}, a statement per row`, value: perSec('rawBatch') },
    { name: `${label}: dropShards ÷ raw, wall clock, ${of} (target ≥ 0.8)`, value: ratio('engineBatch', 'rawBatch', 'wall') },
    { name: `${label}: dropShards ÷ raw, CPU time, ${of}`, value: ratio('engineBatch', 'rawBatch', 'cpu') },
    { name: `${label}: raw insert/s, batches of ${BATCH_SIZE}, multi-row statements as the store writes`, value: perSec('rawMulti') },
    { name: `${label}: dropShards ÷ raw multi-row, wall clock, ${of}`, value: ratio('engineBatch', 'rawMulti', 'wall') },
  ];
}

/** The same rows written without the engine, for the ratio: one shard per transaction, or a batch in one. */
export type RawWriter = {
  insertOne(input: ShardInput, now: number): void | Promise<void>;
  insertBatch(inputs: readonly ShardInput[], now: number): void | Promise<void>;
  close(): void | Promise<void>;
};

/** Where a throughput run writes: the engine's database, and a raw writer into the same tables elsewhere with these souls. */
export type WriteTarget = { openDb(clock: ReturnType<typeof manualClock>): SoulsDb | Promise<SoulsDb>; raw(soulIds: readonly number[]): RawWriter | Promise<RawWriter> };

/** dropShard and dropShards beside raw inserts into the same tables of another store (bench/engine-postgres.ts), in the same run. */
export async function targetThroughput(target: WriteTarget, workload: Workload): Promise<BenchRow[]> {
  const clock = manualClock(START + 60 * DAY_MS);
  const db = await target.openDb(clock);
  const soulIds = await seedSouls(db, 200);
  const raw = await target.raw(soulIds);
  const now = clock.now();

  const singles = 3000;
  const inputs = shardInputs(singles * 2, soulIds, 7, now).map((input, i) => ({ ...input, source: workload.sourceOf(input, i) }));
  const rounds = 3;
  const engineSingle: number[] = [];
  const rawSingle: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const slice = inputs.slice((round * singles) / rounds, ((round + 1) * singles) / rounds);
    rawSingle.push(
      (await timeAsync(async () => {
        for (const input of slice) await raw.insertOne(input, now);
      })) / slice.length,
    );
    engineSingle.push(
      (await timeAsync(async () => {
        for (const input of slice) await dropShard(db, input.content, input.source, input.soulIds, input);
      })) / slice.length,
    );
  }
  const batch = inputs.slice(singles);
  const batchSize = 1000;
  const engineBatch: number[] = [];
  const rawBatch: number[] = [];
  for (let start = 0; start < batch.length; start += batchSize) {
    const chunk = batch.slice(start, start + batchSize);
    rawBatch.push((await timeAsync(async () => raw.insertBatch(chunk, now))) / chunk.length);
    engineBatch.push((await timeAsync(() => dropShards(db, chunk))) / chunk.length);
  }
  await closeSoulsDb(db);
  await raw.close();
  const perSec = (samples: number[]) => 1000 / median(samples);
  const ratio = (engine: number[], raw: number[]) => (perSec(engine) / perSec(raw)).toFixed(2);
  return [
    { name: `${workload.label}: dropShard/s, autocommit`, value: perSec(engineSingle).toFixed(0) },
    { name: `${workload.label}: raw insert/s, autocommit, same tables`, value: perSec(rawSingle).toFixed(0) },
    { name: `${workload.label}: dropShard ÷ raw (target ≥ 0.8)`, value: ratio(engineSingle, rawSingle) },
    { name: `${workload.label}: dropShards/s, batches of ${batchSize}`, value: perSec(engineBatch).toFixed(0) },
    { name: `${workload.label}: raw insert/s, batches of ${batchSize}`, value: perSec(rawBatch).toFixed(0) },
    { name: `${workload.label}: dropShards ÷ raw (target ≥ 0.8)`, value: ratio(engineBatch, rawBatch) },
  ];
}

/** A 50,000-shard database where one soul has 300 pending shards: the evidence report and the gate's query. */
async function readLatency(dir: string): Promise<BenchRow[]> {
  const clock = manualClock(START + 400 * DAY_MS);
  const db = openSoulsDb({ path: tempPath(dir, 'reads.db'), clock });
  const soulIds = await seedSouls(db, 200);
  const now = clock.now();
  const target = soulIds[0];
  const others = soulIds.slice(1);
  // A year of history: about two thirds of it is past the 120-day expiry cutoff.
  const background = shardInputs(49_700, others, 11, now, 365);
  for (let i = 0; i < background.length; i += 10_000) await dropShards(db, background.slice(i, i + 10_000));
  const own = shardInputs(300, [target], 13, now);
  await dropShards(db, own);
  await fadeExhaustedShards(db);

  const evidenceCold = await timeAsync(() => formatEvidence(db, target));
  const evidence: number[] = [];
  for (let i = 0; i < 40; i++) evidence.push(await timeAsync(() => formatEvidence(db, target)));
  const cutoff = expiryCutoff(db, now);
  const gate: number[] = [];
  for (let i = 0; i < 2000; i++) gate.push(time(() => db.store.gateStats([target], cutoff)));
  const readinessCold = await timeAsync(() => crystallizationReadiness(db));
  const readiness: number[] = [];
  for (let i = 0; i < 20; i++) readiness.push(await timeAsync(() => crystallizationReadiness(db)));
  closeSoulsDb(db);
  return [
    { name: 'gate check, one soul with 300 pending (µs, median)', value: (median(gate) * 1000).toFixed(0) },
    { name: 'formatEvidence, 300 pending / 50,000 total, first call (ms)', value: evidenceCold.toFixed(2) },
    { name: 'formatEvidence, 300 pending / 50,000 total (ms, median; target ≤ 5)', value: median(evidence).toFixed(2) },
    { name: 'crystallizationReadiness, 200 souls / 50,000 shards, first call (ms)', value: readinessCold.toFixed(2) },
    { name: 'crystallizationReadiness, 200 souls / 50,000 shards (ms, median)', value: median(readiness).toFixed(2) },
  ];
}

export async function benchEngine(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'souls-bench-'));
  try {
    const rows: BenchRow[] = [];
    for (const [i, workload] of workloads.entries()) rows.push(...(await writeThroughput(dir, workload, i)));
    return [...rows, ...(await readLatency(dir))];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
