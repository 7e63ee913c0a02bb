import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSoulsDb, createSoul, openSoulsDb, searchShards, type SoulsDb } from '../src/engine/index.ts';
import type { SqliteStore } from '../src/store/sqlite.ts';
import { BATCH_SIZE, CRASH_SOUL, TAGS_PER_SHARD, batchSource, marker } from './support/crash-child.ts';
import { createRng, integrityProblems } from './support/fuzz.ts';

const CHILD = fileURLToPath(new URL('./support/crash-child.ts', import.meta.url));
const KILLS = 20;
/** Bounds on waiting for a child: they only fail the test when something hangs (at load 20 a child's import took over 30 s). */
const CHILD_MS = 120_000;

type Phase = 'before start' | 'during import' | 'after commit';
type Run = { batch: number; planned: Phase | 'measure'; delayMs: number; observed: Phase; signal: NodeJS.Signals | null; stderr: string };

let dir: string;
let file: string;
const running = new Set<ChildProcess>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'souls-crash-'));
  file = join(dir, 'crash.db');
  const db = openSoulsDb({ path: file });
  await createSoul(db, { name: CRASH_SOUL, essence: 'Imports huge batches and gets killed for it.' });
  closeSoulsDb(db);
});

afterAll(() => {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs the child on batch k and SIGKILLs it: `delayMs` after it spawned (before start),
 * after it said "start" (during the import), or after it said "done" (after the commit).
 * Resolves once it is dead, with what it had said by the time it was killed.
 */
function runAndKill(batch: number, planned: Phase | 'measure', delayMs: number): Promise<Run & { startMs: number; doneMs: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [CHILD, file, String(batch)], { stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let stdout = '';
    let stderr = '';
    let observed: Phase | null = null;
    let startMs = NaN;
    let doneMs = NaN;
    const phaseNow = (): Phase => (stdout.includes('done') ? 'after commit' : stdout.includes('start') ? 'during import' : 'before start');
    const kill = () => {
      if (observed !== null) return;
      observed = phaseNow();
      child.kill('SIGKILL');
    };
    const bound = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`batch ${batch}: the child did not finish within ${CHILD_MS} ms; stdout ${JSON.stringify(stdout)}, stderr ${JSON.stringify(stderr)}`));
    }, CHILD_MS);
    if (planned === 'before start') setTimeout(kill, delayMs);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const had = phaseNow();
      stdout += chunk;
      if (had === 'before start' && stdout.includes('start')) {
        startMs = performance.now() - t0;
        if (planned === 'during import') setTimeout(kill, delayMs);
      }
      if (had !== 'after commit' && stdout.includes('done')) {
        doneMs = performance.now() - t0;
        if (planned === 'after commit' || planned === 'measure') setTimeout(kill, delayMs);
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('exit', (_code, signal) => {
      clearTimeout(bound);
      running.delete(child);
      resolve({ batch, planned, delayMs, observed: observed ?? phaseNow(), signal, stderr, startMs, doneMs });
    });
  });
}

type BatchCount = { shards: number; attributions: number; tags: number; fts: number; hits: number; foreignHits: number };

function countBatch(db: SoulsDb, batch: number): Omit<BatchCount, 'hits' | 'foreignHits'> {
  const sql = (db.store as SqliteStore).db;
  const one = (query: string, ...params: string[]) => Number((sql.prepare(query).get(...params) as { n: number }).n);
  const source = batchSource(batch);
  return {
    shards: one('SELECT COUNT(*) AS n FROM soul_shards WHERE source = ?', source),
    attributions: one('SELECT COUNT(*) AS n FROM shard_souls ss JOIN soul_shards s ON s.id = ss.shard_id WHERE s.source = ?', source),
    tags: one('SELECT COUNT(*) AS n FROM shard_tags t JOIN soul_shards s ON s.id = t.shard_id WHERE s.source = ?', source),
    fts: one('SELECT COUNT(*) AS n FROM shard_fts WHERE shard_fts MATCH ?', marker(batch)),
  };
}

describe(`crash consistency: ${KILLS} SIGKILLs during ${BATCH_SIZE.toLocaleString('en')}-shard imports on one database file`, () => {
  it('leaves every batch entirely present or entirely absent, and the file intact', { timeout: 900_000 }, async () => {
    const rng = createRng(4242);
    // Batch 0 measures the child: time to "start" (process start, engine open) and the import itself; it is killed after its commit.
    const measure = await runAndKill(0, 'measure', 0);
    expect(measure.signal, measure.stderr).toBe('SIGKILL');
    expect(measure.observed).toBe('after commit');
    const startMs = measure.startMs;
    const importMs = measure.doneMs - measure.startMs;

    // 4 kills before the start (one at once), 12 during the import, 4 after the commit, shuffled.
    const plan: Phase[] = [...Array<Phase>(4).fill('before start'), ...Array<Phase>(12).fill('during import'), ...Array<Phase>(4).fill('after commit')];
    for (let i = plan.length - 1; i > 0; i--) {
      const j = rng.int(i + 1);
      [plan[i], plan[j]] = [plan[j], plan[i]];
    }
    const runs: Run[] = [measure];
    let immediate = true;
    for (let k = 1; k <= KILLS; k++) {
      const planned = plan[k - 1];
      const delayMs =
        planned === 'before start'
          ? immediate
            ? ((immediate = false), 0)
            : rng.next() * startMs * 0.8
          : planned === 'during import'
            ? // Half anywhere in the import (mostly its transaction), half around its end, where the commit is.
              (rng.chance(0.5) ? rng.next() : 0.85 + rng.next() * 0.2) * importMs
            : rng.next() * 50;
      const run = await runAndKill(k, planned, delayMs);
      // Killed by us, not dead of its own accord.
      expect(run.signal, `batch ${k}: ${run.stderr}`).toBe('SIGKILL');
      expect(run.stderr, `batch ${k}`).toBe('');
      runs.push(run);
    }

    const db = openSoulsDb({ path: file });
    try {
      expect(integrityProblems((db.store as SqliteStore).db)).toEqual([]);
      const counts = new Map<number, BatchCount>();
      for (const run of runs) {
        const hits = await searchShards(db, marker(run.batch), { first: 50 });
        counts.set(run.batch, { ...countBatch(db, run.batch), hits: hits.length, foreignHits: hits.filter((h) => h.shard.source !== batchSource(run.batch)).length });
      }
      const present = runs.filter((r) => counts.get(r.batch)!.shards > 0);
      const absent = runs.filter((r) => counts.get(r.batch)!.shards === 0);
      const byPhase = (phase: Phase) => `${runs.filter((r) => r.observed === phase).length} (${present.filter((r) => r.observed === phase).length} present)`;
      console.log(
        [
          `crash: ${KILLS} kills survived (+1 measuring run); child start ${startMs.toFixed(0)} ms, import of ${BATCH_SIZE} shards ${importMs.toFixed(0)} ms`,
          `  kills before start ${byPhase('before start')}, during import ${byPhase('during import')}, after commit ${byPhase('after commit')}`,
          `  batches present ${present.length} [${present.map((r) => r.batch).join(', ')}], absent ${absent.length} [${absent.map((r) => r.batch).join(', ')}]`,
        ].join('\n'),
      );

      for (const run of runs) {
        const c = counts.get(run.batch)!;
        const whole = { shards: BATCH_SIZE, attributions: BATCH_SIZE, tags: BATCH_SIZE * TAGS_PER_SHARD, fts: BATCH_SIZE, hits: 50, foreignHits: 0 };
        const none = { shards: 0, attributions: 0, tags: 0, fts: 0, hits: 0, foreignHits: 0 };
        expect(c, `batch ${run.batch} (killed ${run.observed}, ${run.delayMs.toFixed(0)} ms after its ${run.planned === 'before start' ? 'spawn' : 'signal'})`).toEqual(c.shards > 0 ? whole : none);
        // Killed before it began: nothing; killed after it said done: a commit is durable.
        if (run.observed === 'before start') expect(c.shards, `batch ${run.batch}`).toBe(0);
        if (run.observed === 'after commit') expect(c.shards, `batch ${run.batch}`).toBe(BATCH_SIZE);
      }
      // Nothing else crept in: every shard in the file belongs to a whole batch.
      const total = Number(((db.store as SqliteStore).db.prepare('SELECT COUNT(*) AS n FROM soul_shards').get() as { n: number }).n);
      expect(total).toBe(present.length * BATCH_SIZE);
      expect(runs.filter((r) => r.observed === 'before start').length).toBeGreaterThan(0);
      expect(runs.filter((r) => r.observed === 'during import').length).toBeGreaterThan(0);
      expect(runs.filter((r) => r.observed === 'after commit').length).toBeGreaterThan(1);
      expect(absent.length).toBeGreaterThan(0);
    } finally {
      closeSoulsDb(db);
    }
  });
});
