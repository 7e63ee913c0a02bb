/**
 * Growth curves: how three costs grow with the data, each beside the ratio to
 * the previous size so that anything super-linear shows.
 *
 * 1. The evidence report of one soul with 100 / 300 / 1,000 / 3,000 pending
 *    shards: the first report (clustering from scratch) and the report after
 *    one more shard arrived (the memo's incremental path; the usual refresh).
 * 2. The dashboard query (examples/dashboard.graphql: every soul with its
 *    traits, verdict and evidence clusters) over 10 / 100 / 1,000 souls,
 *    through the GraphQL app, with the cost limit lifted so that only the
 *    work is timed (bench/price-list.ts times it at the default limits).
 * 3. dropShard mutations/s (engine, autocommit) into 200 souls when the
 *    database holds 10,000 / 100,000 / 500,000 shards in all, spread over a
 *    year (about a third within the 120-day expiry). The background is
 *    written with raw inserts, which are not what is measured.
 *
 * `node bench/growth.ts` runs it alone.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { buildApp } from '../src/server/app.ts';
import { DAY_MS, addTrait, closeSoulsDb, createSoul, dropShard, dropShards, formatEvidence, manualClock, openSoulsDb, type ShardInput, type SoulsDb } from '../src/engine/index.ts';
import { makeObservationCorpus, makeRng } from './corpus.ts';
import { median, type BenchRow } from './engine.ts';

const START = Date.UTC(2026, 0, 1) + 400 * DAY_MS;
const SOURCES = ['delegation', 'distillation', 'quest_turnin', 'manual_review', 'reader_feedback', 'session_observation'];
const DASHBOARD = readFileSync(new URL('../examples/dashboard.graphql', import.meta.url), 'utf8');

async function timeAsync(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

/** `count` shards for one soul from six sources over `spreadDays`, texts from the observation corpus. */
function inputs(count: number, soulIds: number[], seed: number, now: number, spreadDays: number): ShardInput[] {
  const rng = makeRng(seed);
  return makeObservationCorpus(count, seed).map((content) => ({
    content,
    source: SOURCES[Math.floor(rng() * SOURCES.length)],
    soulIds: [soulIds[Math.floor(rng() * soulIds.length)]],
    createdAt: now - 60_000 - Math.floor(rng() * spreadDays * DAY_MS),
  }));
}

/** "×3.2 for ×3.3": how a cost grew against how its size grew, from the previous row. */
function growth(previous: { size: number; ms: number } | null, size: number, ms: number): string {
  return previous ? ` (×${(ms / previous.ms).toFixed(1)} for ×${(size / previous.size).toFixed(1)})` : '';
}

async function evidenceCurve(dir: string): Promise<BenchRow[]> {
  const clock = manualClock(START);
  const db = openSoulsDb({ path: join(dir, 'evidence.db'), clock });
  const rows: BenchRow[] = [];
  let previous: { size: number; cold: number; warm: number } | null = null;
  for (const [i, size] of [100, 300, 1000, 3000].entries()) {
    const soul = await createSoul(db, { name: `reported-${size}`, essence: `A soul with ${size} pending shards.` });
    await addTrait(db, soul.id, { principle: 'Verifies results before reporting them', provenance: 'Seen in review.' });
    await dropShards(db, inputs(size, [soul.id], 300 + i, clock.now(), 60));
    const cold = await timeAsync(() => formatEvidence(db, soul.id));
    const warm: number[] = [];
    for (let k = 0; k < 5; k++) {
      clock.advance(1000);
      await dropShard(db, `One more observation ${k} of the soul with ${size} shards: checked the ledger again.`, 'manual_review', [soul.id]);
      warm.push(await timeAsync(() => formatEvidence(db, soul.id)));
    }
    const after = median(warm);
    rows.push({ name: `evidence report, ${size.toLocaleString('en')} pending: first / after one new shard (ms)`, value: `${cold.toFixed(1)} / ${after.toFixed(1)}${previous ? ` (×${(cold / previous.cold).toFixed(1)} / ×${(after / previous.warm).toFixed(1)} for ×${(size / previous.size).toFixed(1)})` : ''}` });
    previous = { size, cold, warm: after };
  }
  closeSoulsDb(db);
  return rows;
}

async function dashboardCurve(dir: string): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  let previous: { size: number; ms: number } | null = null;
  for (const size of [10, 100, 1000]) {
    const clock = manualClock(START);
    const db = openSoulsDb({ path: join(dir, `dashboard-${size}.db`), clock });
    const texts = makeObservationCorpus(size * 12, size);
    for (let i = 0; i < size; i++) {
      const soul = await createSoul(db, { name: `soul-${i}`, essence: `Soul ${i} learns from what it is seen to do.` });
      const { shardIds } = await dropShards(db, inputs(12, [soul.id], i, clock.now(), 20).map((input, k) => ({ ...input, content: texts[i * 12 + k] })));
      for (let t = 0; t < 3; t++) await addTrait(db, soul.id, { principle: `Principle ${t} of soul ${i}`, provenance: 'Seen in review.', citeShardIds: [shardIds[t]] });
    }
    const app = buildApp({ db, graphiql: false, limits: { maxCost: 1_000_000_000 } });
    const request = async () => {
      const response = await app.yoga.fetch('http://localhost/graphql', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ query: DASHBOARD }) });
      const json = await response.json();
      if (json.errors || json.data.souls.length !== size) throw new Error(`dashboard over ${size} souls: ${JSON.stringify(json).slice(0, 300)}`);
    };
    const first = await timeAsync(request);
    const warm: number[] = [];
    for (let k = 0; k < 5; k++) warm.push(await timeAsync(request));
    await app.stop();
    const ms = median(warm);
    rows.push({ name: `dashboard query (examples/dashboard.graphql), ${size.toLocaleString('en')} souls: first / warm median of 5 (ms)`, value: `${first.toFixed(1)} / ${ms.toFixed(1)}${growth(previous, size, ms)}` });
    previous = { size, ms };
  }
  return rows;
}

/** Background shards straight into the tables (shard, its soul), in one transaction: what dropShard writes, without the engine. */
function fillRaw(path: string, soulIds: number[], count: number, seed: number, now: number): void {
  const raw = new DatabaseSync(path);
  const shard = raw.prepare(`INSERT INTO soul_shards (content, source, status, sealed, created_at, updated_at, recorded_at) VALUES (?, ?, 'pending', 0, ?, ?, ?)`);
  const owner = raw.prepare('INSERT INTO shard_souls (shard_id, soul_id) VALUES (?, ?)');
  raw.exec('BEGIN IMMEDIATE');
  for (let start = 0; start < count; start += 10_000) {
    for (const input of inputs(Math.min(10_000, count - start), soulIds, seed + start, now, 365)) {
      const { lastInsertRowid } = shard.run(input.content, input.source, input.createdAt!, now, now);
      owner.run(lastInsertRowid, input.soulIds[0]);
    }
  }
  raw.exec('COMMIT');
  raw.close();
}

/** dropShard's mean time (ms) over `count` writes spread over the souls, after one untimed write per soul (the background came in behind the engine's back, so its memo starts cold). */
async function dropShardTime(db: SoulsDb, soulIds: number[], count: number, seed: number): Promise<number> {
  const now = db.clock.now();
  for (const input of inputs(soulIds.length, soulIds, seed + 1, now, 30).map((input, k) => ({ ...input, soulIds: [soulIds[k]] }))) await dropShard(db, input.content, input.source, input.soulIds, input);
  const measured = inputs(count, soulIds, seed, now, 30);
  return (await timeAsync(async () => {
    for (const input of measured) await dropShard(db, input.content, input.source, input.soulIds, input);
  })) / count;
}

async function dropShardCurve(dir: string): Promise<BenchRow[]> {
  const path = join(dir, 'writes.db');
  const clock = manualClock(START);
  let db: SoulsDb = openSoulsDb({ path, clock });
  const soulIds: number[] = [];
  for (let i = 0; i < 200; i++) soulIds.push((await createSoul(db, { name: `soul-${i}`, essence: `Essence of soul ${i}.` })).id);
  const rows: BenchRow[] = [];
  let previous: { size: number; ms: number } | null = null;
  let at100k: { size: number; ms: number } | null = null;
  let total = 0;
  const singles = 300;
  const label = (size: number) => `dropShard/s (autocommit, 200 souls), ${size.toLocaleString('en')} shards in the database`;
  for (const [i, size] of [10_000, 100_000, 500_000].entries()) {
    fillRaw(path, soulIds, size - total - (singles + soulIds.length) * i, 900 + i, clock.now());
    total = size;
    const ms = await dropShardTime(db, soulIds, singles, 700 + 2 * i);
    rows.push({ name: label(size), value: `${(1000 / ms).toFixed(0)}${growth(previous, size, ms).replace('(×', '(time per write ×')}` });
    previous = { size, ms };
    if (size === 100_000) at100k = previous;
  }
  // The same database with a cache that holds every soul's considered shards: what the row above loses to the bound.
  closeSoulsDb(db);
  db = openSoulsDb({ path, clock, settings: { maxCacheMegabytes: 512 } });
  const roomy = await dropShardTime(db, soulIds, singles, 710);
  rows.push({ name: `${label(total)}, maxCacheMegabytes 512`, value: `${(1000 / roomy).toFixed(0)}${growth(at100k, total, roomy).replace('(×', '(time per write ×').replace(')', ', against 100,000)')}` });
  closeSoulsDb(db);
  return rows;
}

export async function benchGrowth(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'souls-bench-growth-'));
  const started = performance.now();
  try {
    const rows = [...(await evidenceCurve(dir)), ...(await dashboardCurve(dir)), ...(await dropShardCurve(dir))];
    rows.push({ name: 'this section took (s)', value: ((performance.now() - started) / 1000).toFixed(0) });
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  for (const row of await benchGrowth()) console.log(`${row.name}  ${row.value}`);
}
