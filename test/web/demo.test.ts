// `npm run demo` / `souls seed-demo`: the demo world gives every screen of the character sheet something to show.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { DEMO_SPAN_DAYS, demoNextStep, seedDemo } from '../../scripts/demo.ts';
import {
  closeSoulsDb,
  createSoul,
  DAY_MS,
  getCrystallization,
  getLevelHistory,
  listDormantSouls,
  listShards,
  listSouls,
  listTraits,
  manualClock,
  openSoulsDb,
} from '../../src/engine/index.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

describe('the demo world', () => {
  it('has souls of both kinds, history, shards over weeks, ready souls, one at capacity and one dormant', async () => {
    const now = Date.UTC(2026, 10, 22, 12);
    const clock = manualClock(now);
    const db = openSoulsDb({ clock });
    const summary = await seedDemo(db, clock, { now });
    expect(clock.now()).toBe(now);

    const awake = await listSouls(db);
    const dormant = await listDormantSouls(db);
    expect(awake.map((s) => s.name).toSorted()).toEqual(['Brannoc', 'Mira', 'Relay', 'Sela']);
    expect(dormant.map((s) => s.name)).toEqual(['Wenna']);
    expect(awake.find((s) => s.name === 'Relay')!.description).toMatch(/AI agent/);

    const shards = await listShards(db, { first: 500, includeExpired: true });
    expect(shards.items.length).toBeGreaterThanOrEqual(40);
    expect(shards.items.length).toBeLessThanOrEqual(80);
    expect(new Set(shards.items.map((s) => s.source)).size).toBeGreaterThanOrEqual(5);
    const times = shards.items.map((s) => s.createdAt);
    expect((Math.max(...times) - Math.min(...times)) / DAY_MS).toBeGreaterThan(DEMO_SPAN_DAYS - 5);
    expect(Math.max(...times)).toBeLessThanOrEqual(now);

    const verdicts = await getCrystallization(db, awake.map((s) => s.id));
    const ready = awake.filter((s) => verdicts.get(s.id)!.ready).map((s) => s.name);
    expect(ready.length).toBeGreaterThanOrEqual(2);
    expect(summary.readySouls.toSorted()).toEqual(ready.toSorted());

    const brannoc = awake.find((s) => s.name === 'Brannoc')!;
    expect(await listTraits(db, brannoc.id, { status: 'active' })).toHaveLength(db.settings.traitLimit);
    const mira = await getLevelHistory(db, summary.souls.Mira);
    expect(mira.map((e) => [e.level, e.revertedAt])).toEqual([[1, null]]);
    const relay = await getLevelHistory(db, summary.souls.Relay);
    expect(relay).toHaveLength(1);
    expect(relay[0].revertedAt).not.toBeNull();
    closeSoulsDb(db);
  });

  it('refuses a database that already has souls unless forced', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const db = openSoulsDb({ clock });
    await createSoul(db, { name: 'Someone', essence: 'Was here first.' });
    await expect(seedDemo(db, clock)).rejects.toThrow(/already has 1 soul: pass --force/);
    expect(await listSouls(db)).toHaveLength(1);
    await seedDemo(db, clock, { force: true, now: Date.UTC(2026, 0, 1) });
    expect(await listSouls(db)).toHaveLength(5);
    closeSoulsDb(db);
  });

  it('names no port it was not given: the running server’s own address, or the one given with --port', async () => {
    for (const elsewhere of [true, false]) {
      const told = demoNextStep('demo.db', elsewhere, 'npm start -- --db demo.db');
      expect(told).not.toMatch(/:\d{2,5}\//);
      expect(told).toContain('"Character sheet on http://…/"');
      expect(demoNextStep('demo.db', elsewhere, 'npm start -- --db demo.db', 4321)).toContain('http://127.0.0.1:4321/');
    }
    expect(demoNextStep('demo.db', false, 'npm start -- --db demo.db', 4321)).toContain('(npm start -- --db demo.db --port 4321)');
    const dir = mkdtempSync(join(tmpdir(), 'souls-demo-'));
    try {
      const seeded = await run(process.execPath, ['scripts/demo.ts', '--db', join(dir, 'demo.db'), '--port', '5123'], { cwd: ROOT });
      expect(seeded.stdout).toMatch(/and open http:\/\/127\.0\.0\.1:5123\/ for the character sheet/);
      const refused = await run(process.execPath, ['scripts/demo.ts', '--db', join(dir, 'other.db'), '--port', 'forty'], { cwd: ROOT }).then(
        () => null,
        (error: { code: number; stderr: string }) => error,
      );
      expect(refused?.stderr).toMatch(/--port must be a port number/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('`souls seed-demo --db FILE` fills a file, and a second run is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-demo-'));
    const file = join(dir, 'demo.db');
    try {
      const first = await run(process.execPath, ['src/cli/index.ts', 'seed-demo', '--db', file], { cwd: ROOT });
      expect(first.stdout).toMatch(/Seeded .*demo\.db: Mira, Brannoc, Relay, Wenna, Sela/);
      expect(first.stdout).toMatch(/Ready for refinement: .+\. Dormant: Wenna\./);
      const second = await run(process.execPath, ['src/cli/index.ts', 'seed-demo', '--db', file], { cwd: ROOT }).then(
        () => null,
        (error: { code: number; stderr: string }) => error,
      );
      expect(second?.code).toBe(1);
      expect(second?.stderr).toMatch(/already has 5 souls/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
