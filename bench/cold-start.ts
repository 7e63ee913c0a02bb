// What the first calls on a new database cost: creating the file (migrations), the first write and read of each
// kind, before any statement is prepared or cache is warm. The cost every `souls` command pays once; a second or less.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeSoulsDb, createSoul, DAY_MS, dropShards, formatEvidence, manualClock, openSoulsDb, renderSoul } from '../src/engine/index.ts';
import { makeObservationCorpus } from './corpus.ts';
import type { BenchRow } from './engine.ts';

const SHARDS = 200;

async function timed<T>(work: () => Promise<T> | T): Promise<{ ms: number; result: T }> {
  const start = performance.now();
  const result = await work();
  return { ms: performance.now() - start, result };
}

const row = (name: string, ms: number): BenchRow => ({ name: `${name} (ms)`, value: ms.toFixed(2), numbers: [Number(ms.toFixed(2))], unit: 'ms', better: 'lower' });

export async function benchColdStart(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'souls-bench-cold-'));
  try {
    const clock = manualClock(Date.UTC(2026, 0, 1) + 30 * DAY_MS);
    const opened = await timed(() => openSoulsDb({ path: join(dir, 'cold.db'), clock }));
    const db = opened.result;
    const soul = await timed(() => createSoul(db, { name: 'Cold', essence: 'Measured from the first call.' }));
    const texts = makeObservationCorpus(SHARDS, 3);
    const now = clock.now();
    const inputs = texts.map((content, i) => ({ content, source: `source-${i % 3}`, soulIds: [soul.result.id], createdAt: now - (i % 20) * DAY_MS }));
    const drop = await timed(() => dropShards(db, inputs));
    const evidence = await timed(() => formatEvidence(db, soul.result.id));
    const render = await timed(() => renderSoul(db, soul.result.id));
    const closed = await timed(() => closeSoulsDb(db));
    return [
      row('open a new database file (creates the tables)', opened.ms),
      row('first createSoul', soul.ms),
      row(`first dropShards, ${SHARDS} shards into one soul (gate and clustering included)`, drop.ms),
      row(`first formatEvidence over those ${SHARDS} shards`, evidence.ms),
      row('first renderSoul', render.ms),
      row('close (optimize and checkpoint)', closed.ms),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
