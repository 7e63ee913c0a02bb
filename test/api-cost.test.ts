import { readFileSync } from 'node:fs';
import { execute, parse } from 'graphql';
import { afterEach, describe, expect, it } from 'vitest';
import { schema } from '../schema/index.ts';
import { createContext } from '../src/server/context.ts';
import { DAY_MS, addTrait, citeShard, createSoul, dropShard, formatEvidence, levelUp, manualClock, openSoulsDb, type SoulsDb } from '../src/engine/index.ts';
import { seedRoster } from '../bench/roster.ts';
import { createSoulsPubSub } from '../src/server/pubsub.ts';
import { startServer, type LiveServer } from './support/server.ts';

const T0 = Date.UTC(2026, 0, 1);

/** The roster a dashboard shows: every derived field of every soul, nested traits and their signals. */
const dashboard = `query Dashboard {
  souls {
    id
    name
    activeTraitCount
    pendingShardCount
    health
    rendered
    levelHistory { level }
    traits { principle signals { citationCount citationDensity stale } }
    crystallization { ready priority unmet clusterCount }
  }
}`;

const observations = [
  'Runs the whole test suite before every push',
  'Drinks green tea at the standup',
  'Answers review comments within the hour',
  'Draws architecture diagrams on the whiteboard',
];
const sources = ['chat', 'email', 'review'];

/**
 * N souls, each with three traits (one or two cited shards) and two or four
 * shards from several sources over several days: souls with four shards pass
 * the cheap gate and cluster, the others stop at it. Every fourth soul has levelled up.
 */
async function buildSouls(db: SoulsDb, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const soul = await createSoul(db, { name: `Soul ${String(i).padStart(3, '0')}`, essence: `Essence of soul ${i}, steady and curious.` });
    const shardIds: number[] = [];
    const shardCount = i % 3 === 0 ? 2 : 4;
    for (let k = 0; k < shardCount; k++) {
      const { shardId } = await dropShard(db, `${observations[k]} (soul ${i})`, sources[(i + k) % sources.length], [soul.id], {
        createdAt: T0 - (k + 1) * DAY_MS,
        tags: [`topic-${k}`],
      });
      shardIds.push(shardId);
    }
    const traitIds: number[] = [];
    for (let t = 0; t < 3; t++) {
      const trait = await addTrait(db, soul.id, { principle: `Principle ${t} of soul ${i}`, provenance: `Observed ${t + 1} times`, citeShardIds: t === 0 ? [shardIds[0]] : [] });
      traitIds.push(trait.id);
    }
    await citeShard(db, shardIds[1], traitIds[1]);
    if (i % 4 === 0) {
      await levelUp(db, soul.id, { newEssence: `Essence of soul ${i}, level one.`, consolidations: [], promotedTraitIds: [], carriedTraitIds: traitIds });
    }
  }
}

async function openBuilt(n: number): Promise<SoulsDb> {
  const db = openSoulsDb({ clock: manualClock(T0) });
  await buildSouls(db, n);
  return db;
}

/** Runs the dashboard with a fresh context, as the server does per operation; returns its data and the statements it cost. */
async function measure(db: SoulsDb): Promise<{ statements: number; souls: any[] }> {
  const before = await db.store.statementsExecuted();
  const result = await execute({ schema, document: parse(dashboard), contextValue: createContext(db, createSoulsPubSub()) });
  const statements = await db.store.statementsExecuted() - before;
  expect(result.errors).toBeUndefined();
  return { statements, souls: (result.data as any).souls };
}

/** The data is what the test claims to cover: N souls, ready and not, clustered and not, levelled and not, cited traits. */
function expectRepresentative(souls: any[], n: number): void {
  expect(souls).toHaveLength(n);
  expect(souls.some((s) => s.crystallization.ready)).toBe(true);
  expect(souls.some((s) => !s.crystallization.ready)).toBe(true);
  expect(souls.some((s) => s.crystallization.clusterCount !== null)).toBe(true);
  expect(souls.some((s) => s.crystallization.clusterCount === null)).toBe(true);
  expect(souls.some((s) => s.levelHistory.length === 1)).toBe(true);
  expect(souls.every((s) => s.traits.length === 3 && s.activeTraitCount === 3)).toBe(true);
  expect(souls.every((s) => s.traits.some((t: any) => t.signals.citationCount === 1))).toBe(true);
  expect(souls.every((s) => s.rendered.startsWith(`# ${s.name}\n`))).toBe(true);
}

describe('dashboard query cost', () => {
  it('costs the same number of SQL statements for 5 souls as for 50 (warm)', async () => {
    const counts: Record<number, { cold: number; warm: number }> = {};
    for (const n of [5, 50]) {
      const db = await openBuilt(n);
      const cold = await measure(db);
      const warm = await measure(db);
      expectRepresentative(warm.souls, n);
      expect(warm.souls).toEqual(cold.souls);
      counts[n] = { cold: cold.statements, warm: warm.statements };
      await db.store.close();
    }
    console.log(`dashboard statements: N=5 ${JSON.stringify(counts[5])}, N=50 ${JSON.stringify(counts[50])}`);
    expect(counts[5].warm).toBeGreaterThan(0);
    expect(counts[50].warm).toBe(counts[5].warm);
    expect(counts[50].cold).toBe(counts[5].cold);
  });

  it('costs the same for 5 and 50 souls when the cluster memo starts empty (cold, e.g. after a restart)', async () => {
    const counts: Record<number, { cold: number; warm: number }> = {};
    for (const n of [5, 50]) {
      const built = await openBuilt(n);
      // A new handle over the same store: nothing remembered, shard texts must be loaded for clustering.
      const db = openSoulsDb({ store: built.store, clock: built.clock });
      const cold = await measure(db);
      const warm = await measure(db);
      expectRepresentative(cold.souls, n);
      counts[n] = { cold: cold.statements, warm: warm.statements };
      await built.store.close();
    }
    console.log(`dashboard statements after a restart: N=5 ${JSON.stringify(counts[5])}, N=50 ${JSON.stringify(counts[50])}`);
    expect(counts[50].cold).toBe(counts[5].cold);
    expect(counts[50].warm).toBe(counts[5].warm);
    // Loading texts for clustering is one batched statement, whatever N.
    expect(counts[5].cold - counts[5].warm).toBeLessThanOrEqual(1);
  });
});

describe('the documented dashboard with every soul’s evidence report (examples/dashboard.graphql)', () => {
  const documented = parse(readFileSync(new URL('../examples/dashboard.graphql', import.meta.url), 'utf8'));

  it('costs the same number of SQL statements for 10 souls as for 100 (warm), each report as the soul’s alone', { timeout: 120_000 }, async () => {
    const counts: number[] = [];
    for (const n of [10, 100]) {
      const db = openSoulsDb({ clock: manualClock(T0 + 400 * DAY_MS) });
      await seedRoster(db, { souls: n });
      const run = async () => {
        const before = await db.store.statementsExecuted();
        const result = await execute({ schema, document: documented, contextValue: createContext(db, createSoulsPubSub()) });
        const statements = (await db.store.statementsExecuted()) - before;
        expect(result.errors).toBeUndefined();
        return { statements, souls: (result.data as any).souls };
      };
      await run();
      const { statements, souls } = await run();
      expect(souls).toHaveLength(n);
      counts.push(statements);
      // Batched, each soul's report is the one formatEvidence makes for that soul alone.
      for (const soul of souls.slice(0, 10)) {
        const alone = await formatEvidence(db, Number(soul.id));
        expect(soul.evidence.clusterCount).toBe(alone.clusters.length);
        expect(soul.evidence.clusters.map((c: any) => c.weight)).toEqual(alone.clusters.slice(0, 20).map((c) => c.weight));
        expect(soul.evidence.suggestedActions).toEqual(alone.suggestedActions.map((a) => ({ kind: a.kind, message: a.message, count: a.count })));
      }
      expect(souls.some((s: any) => s.evidence.clusters.some((c: any) => c.alignment.kind === 'REINFORCING'))).toBe(true);
      await db.store.close();
    }
    console.log(`documented dashboard statements, warm: N=10 ${counts[0]}, N=100 ${counts[1]}`);
    // Each kind of row once: the roster's verdicts and rows (souls, traits, citations, attunements) serve the reports,
    // and the reports' rows their representatives.
    expect(counts[0]).toBe(11);
    expect(counts[1]).toBe(counts[0]);
  });
});

describe('dashboard query cost over HTTP', () => {
  let server: LiveServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it('costs the same number of statements for 5 and 50 souls through the live server', async () => {
    const counts: number[] = [];
    for (const n of [5, 50]) {
      server = await startServer({ start: T0 });
      await buildSouls(server.app.db, n);
      await server.request(dashboard); // warm-up
      const before = await server.app.db.store.statementsExecuted();
      const { status, body } = await server.request(dashboard);
      counts.push(await server.app.db.store.statementsExecuted() - before);
      expect(status).toBe(200);
      expect(body.errors).toBeUndefined();
      expectRepresentative(body.data.souls, n);
      await server.stop();
      server = undefined;
    }
    console.log(`dashboard statements over HTTP: N=5 ${counts[0]}, N=50 ${counts[1]}`);
    expect(counts[1]).toBe(counts[0]);
  });
});
