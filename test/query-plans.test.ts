import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addTrait,
  citeShard,
  closeSoulsDb,
  createSoul,
  DAY_MS,
  dropShards,
  fadeExhaustedShards,
  getCrystallization,
  listShards,
  manualClock,
  openSoulsDb,
  type ShardInput,
  type SoulsDb,
} from '../src/engine/index.ts';
import { openPostgresStore } from '../src/store/postgres-pool.ts';
import type { SqliteStore } from '../src/store/sqlite.ts';

/*
 * The hot statements alias soul_shards as `s`, shard_souls as `ss` and souls as
 * `so`; EXPLAIN QUERY PLAN reports the alias, so each pattern accepts both.
 */
const SHARDS = '(?:s|soul_shards)';
const ATTRIBUTIONS = '(?:ss|shard_souls)';
const shardByRowid = new RegExp(`^SEARCH ${SHARDS} USING INTEGER PRIMARY KEY \\(rowid=\\?\\)`);
const attributionsBySoul = new RegExp(`^SEARCH ${ATTRIBUTIONS} USING (?:COVERING )?INDEX idx_shard_souls_soul \\(soul_id=\\?`);
const bareScan = new RegExp(`^SCAN ${SHARDS}\\b|^SCAN ${ATTRIBUTIONS}\\b`);
const pendingIndex = /USING (?:COVERING )?INDEX idx_shards_pending\b/;
const ftsFirst = /^SCAN shard_fts VIRTUAL TABLE/;

type Plans = Record<string, string[]>;

function assertHotPlans(plans: Plans): void {
  expect(Object.keys(plans).toSorted()).toEqual(['ftsSearch', 'ftsSearchBySoul', 'gate', 'gateRead', 'pendingLoad', 'readiness']);

  // No hot statement walks a whole shard or attribution table.
  for (const [name, steps] of Object.entries(plans)) {
    expect(steps.length, name).toBeGreaterThan(0);
    expect(steps.filter((step) => bareScan.test(step)), name).toEqual([]);
  }

  // The cheap gate, of a write and of a read: attributions by soul, then each shard by its INTEGER PRIMARY KEY.
  for (const name of ['gate', 'gateRead']) {
    expect(plans[name].some((step) => attributionsBySoul.test(step)), plans[name].join('\n')).toBe(true);
    expect(plans[name].some((step) => shardByRowid.test(step)), plans[name].join('\n')).toBe(true);
  }

  // The pending load is driven by idx_shard_souls_soul: it is the first step.
  expect(plans.pendingLoad[0], plans.pendingLoad.join('\n')).toMatch(attributionsBySoul);
  expect(plans.pendingLoad.some((step) => shardByRowid.test(step)), plans.pendingLoad.join('\n')).toBe(true);
  expect(plans.pendingLoad.filter((step) => new RegExp(`^SCAN ${SHARDS}\\b`).test(step))).toEqual([]);

  // Readiness across all souls reads the partial pending index.
  expect(plans.readiness.some((step) => pendingIndex.test(step)), plans.readiness.join('\n')).toBe(true);

  // Full-text search starts from the FTS table and looks shards up by rowid.
  for (const name of ['ftsSearch', 'ftsSearchBySoul']) {
    expect(plans[name][0], plans[name].join('\n')).toMatch(ftsFirst);
    expect(plans[name].some((step) => shardByRowid.test(step)), plans[name].join('\n')).toBe(true);
  }
}

const NOW = Date.UTC(2026, 2, 1);
const SOULS = 50;
const SHARD_COUNT = 5000;

const topics = ['deploy', 'review', 'garden', 'recipe', 'meeting', 'travel', 'budget', 'music', 'reading', 'fitness', 'family', 'design'];
const verbs = ['discussed', 'planned', 'postponed', 'enjoyed', 'questioned', 'finished', 'started', 'documented'];
const sources = ['chat', 'email', 'journal', 'calendar', 'voice'];

/** A realistic spread: 50 souls, 5,000 shards over 100 days from 5 sources, some shared, some tagged, some sealed. */
function realisticBatch(soulIds: readonly number[], now: number): ShardInput[] {
  return Array.from({ length: SHARD_COUNT }, (_, i) => {
    const owner = soulIds[i % soulIds.length];
    const shared = i % 9 === 0 ? [soulIds[(i * 7 + 3) % soulIds.length]] : [];
    return {
      content: `Note ${i}: ${verbs[i % verbs.length]} the ${topics[i % topics.length]} with ${topics[(i * 5) % topics.length]} in mind (${i % 97})`,
      source: sources[i % sources.length],
      soulIds: [owner, ...shared],
      tags: i % 4 === 0 ? [topics[i % topics.length]] : [],
      sealed: i % 50 === 25,
      createdAt: now - Math.floor((i / SHARD_COUNT) * 100 * DAY_MS),
    };
  });
}

describe('query plans of the hot statements', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'souls-query-plans-'));
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('on a fresh, empty file database (no statistics)', async () => {
    const db = openSoulsDb({ clock: manualClock(NOW), path: join(dir, 'empty.db') });
    try {
      assertHotPlans(await db.store.explainQueryPlans());
    } finally {
      closeSoulsDb(db);
    }
  });

  it('on a file database with 50 souls and 5,000 shards, after fadeExhaustedShards has refreshed the statistics', async () => {
    const clock = manualClock(NOW);
    const db: SoulsDb = openSoulsDb({ clock, path: join(dir, 'full.db') });
    try {
      const soulIds: number[] = [];
      for (let i = 0; i < SOULS; i++) soulIds.push((await createSoul(db, { name: `Soul ${i}`, essence: `Essence ${i}` })).id);
      const { shardIds } = await dropShards(db, realisticBatch(soulIds, NOW));
      expect(shardIds).toHaveLength(SHARD_COUNT);

      // Some shards exhausted: cited by two traits of their soul.
      const first = await addTrait(db, soulIds[0], { principle: 'Plans deploys carefully', provenance: 'notes' });
      const second = await addTrait(db, soulIds[0], { principle: 'Documents reviews', provenance: 'notes' });
      const exhausted = shardIds.filter((_, i) => i % SOULS === 0).slice(0, 40);
      for (const shardId of exhausted) {
        await citeShard(db, shardId, first.id);
        await citeShard(db, shardId, second.id);
      }
      expect((await fadeExhaustedShards(db)).fadedCount).toBe(exhausted.length);
      expect((await listShards(db, { status: 'faded', first: 0 })).totalCount).toBe(exhausted.length);

      // Precondition, read-only: PRAGMA optimize did gather statistics, so this plan is not the no-statistics one.
      const stats = (db.store as SqliteStore).db.prepare('SELECT COUNT(*) AS n FROM sqlite_stat1').get() as { n: number };
      expect(Number(stats.n)).toBeGreaterThan(0);

      assertHotPlans(await db.store.explainQueryPlans());

      // The plans serve real reads on this data.
      const verdicts = await getCrystallization(db, soulIds.slice(0, 3));
      expect(verdicts.get(soulIds[0])!.pendingCount).toBeGreaterThan(0);
    } finally {
      closeSoulsDb(db);
    }
  });
});

/*
 * PostgreSQL plans by cost, from statistics: the test loads enough rows (500 souls, 20,000 shards over 100 days)
 * and runs ANALYZE (store.optimize) so the planner has real choices, then checks it takes the indexes. The store
 * explains at a cutoff a week before the newest shard, where most evidence lies outside the window.
 */
describe('query plans of the hot statements on PostgreSQL (PGlite)', () => {
  const seqScan = /Seq Scan on (?:soul_shards|shard_souls)\b/;

  it('uses the attribution, primary-key, partial pending and text indexes with 20,000 shards after ANALYZE', async () => {
    const store = await openPostgresStore({ url: 'pglite:memory', openTimeoutMs: 120_000, timeoutMs: 120_000 });
    try {
      const soulIds: number[] = [];
      for (let i = 0; i < 500; i++) soulIds.push((await store.insertSoul({ name: `Soul ${i}`, slug: null, essence: 'e', description: '' }, NOW)).id);
      for (let batch = 0; batch < 4; batch++) {
        const shards = realisticBatch(soulIds, NOW).map((s, i) => ({ ...s, tags: s.tags ?? [], sealed: s.sealed ?? false, createdAt: NOW - Math.floor(((batch * SHARD_COUNT + i) / (4 * SHARD_COUNT)) * 100 * DAY_MS), embedding: null }));
        expect((await store.insertShards(shards, NOW, 0)).shardIds).toHaveLength(SHARD_COUNT);
      }
      await store.optimize();
      const plans = await store.explainQueryPlans();
      const text = (name: string) => plans[name].join('\n');
      for (const name of ['gate', 'gateRead', 'pendingLoad', 'ftsSearch', 'ftsSearchBySoul']) expect(text(name), name).not.toMatch(seqScan);
      for (const name of ['gate', 'gateRead', 'pendingLoad', 'ftsSearchBySoul']) {
        expect(text(name), name).toMatch(/Index Scan on idx_shard_souls_soul|Index Scan using idx_shard_souls_soul/);
        expect(text(name), name).toMatch(/Index Scan using soul_shards_pkey on soul_shards s/);
      }
      expect(text('readiness')).toMatch(/Index Scan on idx_shards_pending/);
      expect(text('ftsSearch')).toMatch(/Index Scan on (?:idx_shards_search|idx_shards_pending)/);
    } finally {
      await store.close();
    }
  }, 300_000);
});
