import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { closeSoulsDb, getTrait, listShards, manualClock, openSoulsDb } from '../src/engine/index.ts';
import { initRefiner, OUTCOME_SOURCE } from '../src/mcp/refiner.ts';
import { seedDemo } from '../scripts/demo.ts';
import { runRefinerAgent, scriptedModel, type RefinerModel } from '../examples/refiner-agent.ts';
import { connect, demoDb } from './support/mcp.ts';
import { cleanEnv } from './support/cli.ts';

describe('examples/refiner-agent.ts', { timeout: 60_000 }, () => {
  it('runs the scripted refiner over the demo world and shows its own shards growing', () => {
    const out = execFileSync(process.execPath, ['examples/refiner-agent.ts'], { encoding: 'utf8', env: cleanEnv() });
    expect(out).toContain('Refiner soul 6: 0 outcome shards, 0 regret shards');
    expect(out).toContain('Refining Brannoc (soul 2) with the propose-traits skill\n  soul_evidence: ok\n  nothing to change here');
    expect(out).toMatch(/Refining Relay \(soul 3\)[^\n]*\n  soul_evidence: ok\n  trait_change add \(dry run\): previewed\n  trait_change add: trait #\d+ "Keep to what this shows: [^"]+"\n  soul_attune: ok\n  the refiner now has 2 outcome shards/);
    expect(out).toContain('Refined 2 soul(s); the refiner has 4 outcome and 0 regret shards.');
  });

  it('drives souls mcp over stdio with --db, as an agent host would', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-refiner-'));
    try {
      const file = join(dir, 'souls.db');
      // `souls mcp` runs on the system clock: the world is seeded up to now.
      const now = Date.now();
      const clock = manualClock(now);
      const db = openSoulsDb({ path: file, clock });
      await seedDemo(db, clock, { now });
      await initRefiner(db);
      closeSoulsDb(db);
      const out = execFileSync(process.execPath, ['examples/refiner-agent.ts', '--db', file], { encoding: 'utf8', env: cleanEnv() });
      expect(out).toContain('Refined 2 soul(s); the refiner has 4 outcome and 0 regret shards.');
      const after = openSoulsDb({ path: file, mode: 'read-only' });
      expect((await listShards(after, { source: OUTCOME_SOURCE, includeExpired: true, first: 50 })).items).toHaveLength(4);
      closeSoulsDb(after);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('hands the model the skill, the soul and every observation; its calls land as outcome shards on the refiner', async () => {
    const { db } = await demoDb();
    const { soul: refiner } = await initRefiner(db);
    const session = await connect(db, { refinerId: refiner.id });
    const turns: { skill: string; instructions: string; calls: string[] }[] = [];
    const watching: RefinerModel = {
      async next(turn) {
        turns.push({ skill: turn.skill, instructions: turn.instructions, calls: turn.observations.map((o) => o.call.name) });
        return scriptedModel.next(turn);
      },
    };
    try {
      const { refined, outcomeShards } = await runRefinerAgent(session.client, watching, { refinerId: refiner.id, log: () => undefined });
      expect(refined).toHaveLength(2);
      expect(outcomeShards).toBe(4);
      expect(turns[0]).toMatchObject({ skill: 'propose-traits', calls: [] });
      expect(turns[0].instructions).toContain('# Propose traits from evidence');
      const added = (await listShards(db, { soulId: refiner.id, source: OUTCOME_SOURCE, tags: ['action:add'], first: 10 })).items;
      for (const shard of added) {
        const traitId = Number(shard.tags.find((t) => t.startsWith('trait:'))!.slice(6));
        expect((await getTrait(db, traitId))!.principle).toMatch(/^Keep to what this shows: /);
      }
    } finally {
      await session.close();
    }
  });
});
