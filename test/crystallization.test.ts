import { describe, expect, it, vi } from 'vitest';
import {
  awakenSoul,
  createSoul,
  crystallizationReadiness,
  DAY_MS,
  dropShard,
  dropShards,
  formatEvidence,
  getCrystallization,
  manualClock,
  retireSoul,
  revealShards,
  similarity,
  stampAttuned,
  addTrait,
  citeShard,
  fadeExhaustedShards,
  getShard,
  getSoul,
  levelUp,
  unmetNeeds,
  revertLevelUp,
  type Crystallization,
  type SoulsDb,
} from '../src/engine/index.ts';
import { freshDb } from './support/engine.ts';

const HOUR_MS = 3_600_000;
const NOW = Date.UTC(2026, 2, 1);

/** Sentences about unrelated things: each is its own cluster at the default clusteringThreshold. */
const distinct = [
  'Reviewed the pull request carefully before merging it',
  'Cooked a spicy curry for the whole team on friday',
  'Jogged five kilometres along the river at dawn',
  'Sketched a floor plan for the new community library',
  'Argued that meetings should never exceed thirty minutes',
  'Planted tomatoes and basil in the balcony garden',
];

/** The same sentence with one word changed: all three form one cluster. */
const nearDuplicates = [
  'Reviewed the pull request carefully before merging it',
  'Reviewed the pull request quickly before merging it',
  'Reviewed the pull request thoroughly before merging it',
];

const fresh = (settings: Record<string, unknown> = {}) => freshDb(NOW, settings);

let soulCounter = 0;
async function soul(db: SoulsDb, name = `Soul ${++soulCounter}`): Promise<number> {
  return (await createSoul(db, { name, essence: `The essence of ${name}.` })).id;
}

/** Drops a shard created `msAgo` before the clock's now. */
async function drop(db: SoulsDb, soulIds: number | number[], content: string, source: string, msAgo = 0, sealed = false) {
  return dropShard(db, content, source, Array.isArray(soulIds) ? soulIds : [soulIds], { createdAt: db.clock.now() - msAgo, sealed });
}

async function verdict(db: SoulsDb, soulId: number): Promise<Crystallization> {
  return (await getCrystallization(db, [soulId])).get(soulId)!;
}

/** Three distinct shards from three sources, 3, 2 and 1 days old: ready, priority 3 × 3 × 2 × 1 = 18. */
async function baselineSoul(db: SoulsDb, name?: string): Promise<{ soulId: number; readySoulIds: number[][] }> {
  const soulId = await soul(db, name);
  const readySoulIds = [
    (await drop(db, soulId, distinct[0], 'chat', 3 * DAY_MS)).readySoulIds,
    (await drop(db, soulId, distinct[1], 'journal', 2 * DAY_MS)).readySoulIds,
    (await drop(db, soulId, distinct[2], 'email', 1 * DAY_MS)).readySoulIds,
  ];
  return { soulId, readySoulIds };
}

describe('fixtures', () => {
  it('the distinct sentences are pairwise below the clustering threshold and the near duplicates above it', () => {
    for (let i = 0; i < distinct.length; i++) {
      for (let j = i + 1; j < distinct.length; j++) expect(similarity(distinct[i], distinct[j])).toBeLessThan(0.4);
    }
    for (let i = 0; i < nearDuplicates.length; i++) {
      for (let j = i + 1; j < nearDuplicates.length; j++) expect(similarity(nearDuplicates[i], nearDuplicates[j])).toBeGreaterThanOrEqual(0.4);
    }
  });
});

describe('crystallization conditions, each failing alone', () => {
  it('baseline: a soul meeting every condition is ready with the expected counts and priority', async () => {
    const { db } = fresh();
    const { soulId, readySoulIds } = await baselineSoul(db);
    expect(readySoulIds).toEqual([[], [], [soulId]]);
    expect(await verdict(db, soulId)).toEqual({
      soulId,
      ready: true,
      priority: 18,
      pendingCount: 3,
      distinctSources: 3,
      ageSpreadDays: 2,
      newSinceAttuned: true,
      clusterCount: 3,
      clusteredShardCount: 3,
      unmet: [],
    });
  });

  it('MIN_SHARDS: fewer shards than crystallizationThreshold', async () => {
    const { db } = fresh();
    const soulId = await soul(db);
    await drop(db, soulId, distinct[0], 'chat', 3 * DAY_MS);
    await drop(db, soulId, distinct[1], 'email', 1 * DAY_MS);
    expect(await verdict(db, soulId)).toEqual({
      soulId,
      ready: false,
      priority: 2 * 2 * 2,
      pendingCount: 2,
      distinctSources: 2,
      ageSpreadDays: 2,
      newSinceAttuned: true,
      clusterCount: null,
      clusteredShardCount: null,
      unmet: ['MIN_SHARDS'],
    });
  });

  it('MIN_SHARDS follows the crystallizationThreshold knob', async () => {
    const { db } = fresh({ crystallizationThreshold: 4 });
    const { soulId, readySoulIds } = await baselineSoul(db);
    expect(readySoulIds).toEqual([[], [], []]);
    const c = await verdict(db, soulId);
    expect(c.ready).toBe(false);
    expect(c.unmet).toEqual(['MIN_SHARDS']);
    expect((await drop(db, soulId, distinct[3], 'chat')).readySoulIds).toEqual([soulId]);
  });

  it('MIN_CLUSTERS: three near duplicates from two sources over two days make one cluster, so not ready', async () => {
    const { db } = fresh();
    const soulId = await soul(db);
    const writes = [
      await drop(db, soulId, nearDuplicates[0], 'chat', 3 * DAY_MS),
      await drop(db, soulId, nearDuplicates[1], 'email', 2 * DAY_MS),
      await drop(db, soulId, nearDuplicates[2], 'chat', 1 * DAY_MS),
    ];
    expect(writes.map((w) => w.readySoulIds)).toEqual([[], [], []]);
    expect(await verdict(db, soulId)).toEqual({
      soulId,
      ready: false,
      priority: 3 * 2 * 2,
      pendingCount: 3,
      distinctSources: 2,
      ageSpreadDays: 2,
      newSinceAttuned: true,
      clusterCount: 1,
      clusteredShardCount: 3,
      unmet: ['MIN_CLUSTERS'],
    });
    // A second, unrelated observation makes a second cluster: this write is the edge.
    expect((await drop(db, soulId, distinct[1], 'chat')).readySoulIds).toEqual([soulId]);
    const after = await verdict(db, soulId);
    expect(after.ready).toBe(true);
    expect(after.clusterCount).toBe(2);
  });

  it('SOURCE_DIVERSITY: every shard from one source', async () => {
    const { db } = fresh();
    const soulId = await soul(db);
    await drop(db, soulId, distinct[0], 'chat', 3 * DAY_MS);
    await drop(db, soulId, distinct[1], 'chat', 2 * DAY_MS);
    await drop(db, soulId, distinct[2], 'chat', 1 * DAY_MS);
    const c = await verdict(db, soulId);
    expect(c).toMatchObject({ ready: false, pendingCount: 3, distinctSources: 1, clusterCount: null, unmet: ['SOURCE_DIVERSITY'] });
    expect(c.priority).toBe(3 * 1 * 2);
    expect((await drop(db, soulId, distinct[3], 'email')).readySoulIds).toEqual([soulId]);
  });

  it('AGE_SPREAD: newest − oldest of exactly one day is not enough', async () => {
    const { db } = fresh();
    const soulId = await soul(db);
    await drop(db, soulId, distinct[0], 'chat', DAY_MS);
    await drop(db, soulId, distinct[1], 'email', 12 * HOUR_MS);
    const last = await drop(db, soulId, distinct[2], 'journal', 0);
    expect(last.readySoulIds).toEqual([]);
    const c = await verdict(db, soulId);
    expect(c).toMatchObject({ ready: false, pendingCount: 3, distinctSources: 3, ageSpreadDays: 1, clusterCount: null, unmet: ['AGE_SPREAD'] });
  });

  it('AGE_SPREAD: one day and one millisecond is enough', async () => {
    const { db } = fresh();
    const soulId = await soul(db);
    await drop(db, soulId, distinct[0], 'chat', DAY_MS + 1);
    await drop(db, soulId, distinct[1], 'email', 12 * HOUR_MS);
    const last = await drop(db, soulId, distinct[2], 'journal', 0);
    expect(last.readySoulIds).toEqual([soulId]);
    const c = await verdict(db, soulId);
    expect(c).toMatchObject({ ready: true, clusterCount: 3, unmet: [] });
    expect(c.ageSpreadDays).toBe((DAY_MS + 1) / DAY_MS);
  });

  it('RECENCY: after stampAttuned the soul waits for a shard recorded after the attunement', async () => {
    const { db, clock } = fresh();
    const { soulId } = await baselineSoul(db);
    await stampAttuned(db, soulId);
    expect(await verdict(db, soulId)).toMatchObject({ ready: false, newSinceAttuned: false, clusterCount: null, unmet: ['RECENCY'] });
    expect(await crystallizationReadiness(db)).toEqual([]);

    // Created at the very millisecond of the attunement: not after it.
    expect((await drop(db, soulId, distinct[3], 'chat', 0)).readySoulIds).toEqual([]);
    expect((await verdict(db, soulId)).unmet).toEqual(['RECENCY']);

    clock.advance(HOUR_MS);
    expect((await drop(db, soulId, distinct[4], 'chat', 0)).readySoulIds).toEqual([soulId]);
    expect(await verdict(db, soulId)).toMatchObject({ ready: true, newSinceAttuned: true, unmet: [] });
  });

  it('DORMANT: a retired soul is never ready, even with enough evidence', async () => {
    const { db } = fresh();
    const { soulId } = await baselineSoul(db);
    await retireSoul(db, soulId);
    const c = await verdict(db, soulId);
    expect(c).toMatchObject({ ready: false, pendingCount: 3, distinctSources: 3, ageSpreadDays: 2, clusterCount: null, unmet: ['DORMANT'] });
    expect(await crystallizationReadiness(db)).toEqual([]);
    // Dormant souls may receive shards, but never become ready.
    expect((await drop(db, soulId, distinct[3], 'chat')).readySoulIds).toEqual([]);
    await awakenSoul(db, soulId);
    expect(await verdict(db, soulId)).toMatchObject({ ready: true, unmet: [] });
  });

  it('an empty soul fails every cheap condition but recency (never attuned: nothing to be new since) and skips clustering', async () => {
    const { db } = fresh();
    const soulId = await soul(db);
    expect(await verdict(db, soulId)).toEqual({
      soulId,
      ready: false,
      priority: 0,
      pendingCount: 0,
      distinctSources: 0,
      ageSpreadDays: 0,
      newSinceAttuned: true,
      clusterCount: null,
      clusteredShardCount: null,
      unmet: ['MIN_SHARDS', 'SOURCE_DIVERSITY', 'AGE_SPREAD'],
    });
  });
});

describe('priority', () => {
  it('is pendingCount × distinctSources × ageSpreadDays × 1/max(1, daysSinceLastAttuned)', async () => {
    const { db, clock } = fresh();
    clock.set(NOW - 4 * DAY_MS);
    const attuned = await soul(db, 'Attuned four days ago');
    await drop(db, attuned, distinct[0], 'chat', 3 * DAY_MS); // NOW − 7 days
    await drop(db, attuned, distinct[1], 'email', 2 * DAY_MS); // NOW − 6 days
    await stampAttuned(db, attuned); // NOW − 4 days
    const halfDay = await soul(db, 'Attuned half a day ago');
    await drop(db, halfDay, distinct[0], 'chat', 0); // NOW − 4 days
    await drop(db, halfDay, distinct[1], 'email', 0);
    clock.set(NOW - 2.5 * DAY_MS);
    const twoAndHalf = await soul(db, 'Attuned two and a half days ago');
    await drop(db, twoAndHalf, distinct[0], 'chat', 0);
    await drop(db, twoAndHalf, distinct[1], 'email', 0);
    await stampAttuned(db, twoAndHalf);
    clock.set(NOW - 12 * HOUR_MS);
    await stampAttuned(db, halfDay);

    clock.set(NOW);
    await drop(db, attuned, distinct[2], 'journal', 0);
    await drop(db, halfDay, distinct[2], 'journal', 0);
    await drop(db, twoAndHalf, distinct[2], 'journal', 0);

    const c = await getCrystallization(db, [attuned, halfDay, twoAndHalf]);
    // 3 shards × 3 sources × 7 days × 1/4
    expect(c.get(attuned)).toMatchObject({ ready: true, pendingCount: 3, distinctSources: 3, ageSpreadDays: 7, priority: 15.75 });
    // 3 × 3 × 4 days × 1/max(1, 0.5) = 36
    expect(c.get(halfDay)).toMatchObject({ ready: true, ageSpreadDays: 4, priority: 36 });
    // 3 × 3 × 2.5 days × 1/2.5 = 9
    expect(c.get(twoAndHalf)).toMatchObject({ ready: true, ageSpreadDays: 2.5 });
    expect(c.get(twoAndHalf)!.priority).toBeCloseTo(9, 10);
  });

  it('crystallizationReadiness lists only ready, non-dormant souls, by priority descending then id', async () => {
    const { db, clock } = fresh();
    clock.set(NOW - 4 * DAY_MS);
    const bea = await soul(db, 'Bea');
    await drop(db, bea, distinct[0], 'chat', 3 * DAY_MS);
    await drop(db, bea, distinct[1], 'email', 2 * DAY_MS);
    await stampAttuned(db, bea);
    clock.set(NOW);
    await drop(db, bea, distinct[2], 'journal', 0); // 15.75

    const ada = (await baselineSoul(db, 'Ada')).soulId; // 18
    const cy = await soul(db, 'Cy');
    await drop(db, cy, distinct[0], 'chat', 3 * DAY_MS);
    await drop(db, cy, distinct[1], 'email', 2 * DAY_MS);
    await drop(db, cy, distinct[2], 'chat', 1 * DAY_MS);
    await drop(db, cy, distinct[3], 'email', 0); // 4 × 2 × 3 = 24
    const dee = (await baselineSoul(db, 'Dee')).soulId;
    await retireSoul(db, dee);
    const eve = await soul(db, 'Eve');
    await drop(db, eve, distinct[0], 'chat', 3 * DAY_MS);
    const fay = (await baselineSoul(db, 'Fay')).soulId; // 18, ties with Ada: lower id first
    const gus = await soul(db, 'Gus');
    for (const [i, text] of nearDuplicates.entries()) await drop(db, gus, text, i % 2 ? 'chat' : 'email', (3 - i) * DAY_MS);

    const readiness = await crystallizationReadiness(db);
    expect(readiness.map((r) => [r.soulId, r.priority])).toEqual([
      [cy, 24],
      [ada, 18],
      [fay, 18],
      [bea, 15.75],
    ]);
    for (const r of readiness) {
      expect(r.crystallization).toEqual(await verdict(db, r.soulId));
      expect(r.crystallization.ready).toBe(true);
    }
    expect(readiness.map((r) => r.soulId)).not.toContain(dee);
    expect(readiness.map((r) => r.soulId)).not.toContain(eve);
    expect(readiness.map((r) => r.soulId)).not.toContain(gus);
  });
});

describe('readySoulIds is an edge, not a level', () => {
  it('lists a soul once when it becomes ready, not again while it stays ready, and again after attunement plus new evidence', async () => {
    const { db, clock } = fresh();
    const { soulId, readySoulIds } = await baselineSoul(db);
    expect(readySoulIds).toEqual([[], [], [soulId]]);
    expect((await drop(db, soulId, distinct[3], 'chat')).readySoulIds).toEqual([]);
    expect((await drop(db, soulId, distinct[4], 'email')).readySoulIds).toEqual([]);
    expect((await verdict(db, soulId)).ready).toBe(true);

    await stampAttuned(db, soulId);
    clock.advance(HOUR_MS);
    expect((await drop(db, soulId, distinct[5], 'chat')).readySoulIds).toEqual([soulId]);
    expect((await drop(db, soulId, 'Yet another unrelated note about sailing boats', 'chat')).readySoulIds).toEqual([]);
  });

  it('a batch that takes a soul from nothing to ready lists it once', async () => {
    const { db } = fresh();
    const soulId = await soul(db);
    const other = await soul(db);
    const now = db.clock.now();
    const result = await dropShards(db, [
      { content: distinct[0], source: 'chat', soulIds: [soulId, other], createdAt: now - 3 * DAY_MS },
      { content: distinct[1], source: 'email', soulIds: [soulId], createdAt: now - 2 * DAY_MS },
      { content: distinct[2], source: 'journal', soulIds: [soulId, soulId], createdAt: now - DAY_MS },
      { content: distinct[3], source: 'chat', soulIds: [soulId], createdAt: now },
    ]);
    expect(result.shardIds).toHaveLength(4);
    expect(result.readySoulIds).toEqual([soulId]);
    expect((await dropShards(db, [{ content: distinct[4], source: 'chat', soulIds: [soulId] }])).readySoulIds).toEqual([]);
  });

  it('revealShards can make a soul ready, and lists it in its readySoulIds', async () => {
    const { db } = fresh();
    const soulId = await soul(db);
    await drop(db, soulId, distinct[0], 'chat', 3 * DAY_MS);
    await drop(db, soulId, distinct[1], 'email', 1 * DAY_MS);
    const sealed = await drop(db, soulId, distinct[2], 'journal', 0, true);
    expect(sealed.readySoulIds).toEqual([]);
    expect((await verdict(db, soulId)).unmet).toEqual(['MIN_SHARDS']);

    const revealed = await revealShards(db, [sealed.shardId]);
    expect(revealed.readySoulIds).toEqual([soulId]);
    expect((await verdict(db, soulId)).ready).toBe(true);
    // Revealing it again changes nothing and is no edge.
    expect((await revealShards(db, [sealed.shardId])).readySoulIds).toEqual([]);
  });

  it('revealing an already visible shard along with a sealed one does not report a soul that was already ready', async () => {
    const { db } = fresh();
    const soulId = await soul(db);
    // One distinct shard plus two near duplicates: two clusters, ready.
    const lone = await drop(db, soulId, distinct[1], 'chat', 3 * DAY_MS);
    await drop(db, soulId, nearDuplicates[0], 'email', 2 * DAY_MS);
    expect((await drop(db, soulId, nearDuplicates[1], 'journal', DAY_MS)).readySoulIds).toEqual([soulId]);
    const sealed = await drop(db, soulId, nearDuplicates[2], 'chat', 0, true);
    expect((await verdict(db, soulId)).ready).toBe(true);

    const result = await revealShards(db, [lone.shardId, sealed.shardId]);
    expect(result.shardIds).toEqual([lone.shardId, sealed.shardId]);
    expect(result.readySoulIds).toEqual([]);
    expect((await verdict(db, soulId)).ready).toBe(true);
  });

  it('one shard attributed to two souls can make both ready in one write, each listed once', async () => {
    const { db } = fresh();
    const ada = await soul(db);
    const bea = await soul(db);
    for (const id of [ada, bea]) {
      await drop(db, id, distinct[0], 'chat', 3 * DAY_MS);
      await drop(db, id, distinct[1], 'email', 2 * DAY_MS);
    }
    const shared = await drop(db, [bea, ada, bea], distinct[2], 'journal', 0);
    expect([...shared.readySoulIds].sort((a, b) => a - b)).toEqual([ada, bea]);
  });

  it('a write touching a ready soul and a newly ready soul lists only the new one', async () => {
    const { db } = fresh();
    const ready = (await baselineSoul(db)).soulId;
    const other = await soul(db);
    await drop(db, other, distinct[0], 'chat', 3 * DAY_MS);
    await drop(db, other, distinct[1], 'email', 2 * DAY_MS);
    expect((await drop(db, [ready, other], distinct[3], 'journal', 0)).readySoulIds).toEqual([other]);
  });
});

describe('every write that can make a soul ready reports it (SPEC §3)', () => {
  /** A chain: A–B and B–C (and D) are similar, A–C is not, so the four form one cluster only through B. */
  const chain = {
    a: 'Fixed the flaky login test in the build',
    b: 'Fixed the flaky login test in the build and then reviewed the deployment script',
    c: 'Reviewed the deployment script',
    d: 'Reviewed the deployment script twice',
  };

  it('the chain fixture: one cluster only through B', () => {
    expect(similarity(chain.a, chain.b)).toBeGreaterThanOrEqual(0.4);
    expect(similarity(chain.b, chain.c)).toBeGreaterThanOrEqual(0.4);
    for (const far of [chain.c, chain.d]) expect(similarity(chain.a, far)).toBeLessThan(0.4);
  });

  it('awakenSoul: a dormant soul whose evidence meets the gate is ready the moment it awakens', async () => {
    const { db } = fresh();
    const { soulId } = await baselineSoul(db);
    await retireSoul(db, soulId);
    expect((await drop(db, soulId, distinct[3], 'chat')).readySoulIds).toEqual([]);
    const { soul: awake, readySoulIds } = await awakenSoul(db, soulId);
    expect(awake.deletedAt).toBeNull();
    expect(readySoulIds).toEqual([soulId]);

    // A soul without enough evidence awakens not ready, and reports nothing.
    const thin = await soul(db);
    await drop(db, thin, distinct[0], 'chat', DAY_MS * 2);
    await retireSoul(db, thin);
    expect((await awakenSoul(db, thin)).readySoulIds).toEqual([]);
  });

  it('revertLevelUp: shards it un-fades count again, and the soul they make ready is reported', async () => {
    const { db, clock } = fresh();
    const soulId = await soul(db);
    await drop(db, soulId, distinct[0], 'chat', 3 * DAY_MS);
    await drop(db, soulId, distinct[1], 'journal', 2 * DAY_MS);
    const third = await drop(db, soulId, distinct[2], 'email', DAY_MS);
    expect(third.readySoulIds).toEqual([soulId]);
    const t = await addTrait(db, soulId, { principle: 'Cooks for the team', provenance: 'friday' });
    const u = await addTrait(db, soulId, { principle: 'Shops at the market', provenance: 'saturday', citeShardIds: [third.shardId] });
    const { event } = await levelUp(db, soulId, {
      newEssence: 'A cook.',
      consolidations: [{ sourceTraitIds: [t.id], mergedPrinciple: 'Feeds the team', mergedProvenance: 'fridays' }],
      promotedTraitIds: [],
      carriedTraitIds: [u.id],
    });
    await citeShard(db, third.shardId, event.merged[0]);
    const faded = await fadeExhaustedShards(db);
    expect(faded.fadedCount).toBe(1);
    expect(faded.readySoulIds).toEqual([]);
    expect(await verdict(db, soulId)).toMatchObject({ ready: false, pendingCount: 2 });

    clock.advance(HOUR_MS);
    const reverted = await revertLevelUp(db, soulId);
    expect(reverted.readySoulIds).toEqual([soulId]);
    expect(await verdict(db, soulId)).toMatchObject({ ready: true, pendingCount: 3 });
    // Un-fading nothing reports nothing.
    await levelUp(db, soulId, { newEssence: 'Again.', consolidations: [], promotedTraitIds: [], carriedTraitIds: [t.id, u.id] });
    expect((await revertLevelUp(db, soulId)).readySoulIds).toEqual([]);
  });

  it('fadeExhaustedShards: a faded shard that chained two clusters splits them, and the soul it made ready is reported', async () => {
    const { db } = fresh();
    const soulId = await soul(db);
    await drop(db, soulId, chain.a, 'chat', 3 * DAY_MS);
    const b = await drop(db, soulId, chain.b, 'chat', 2 * DAY_MS);
    await drop(db, soulId, chain.c, 'email', DAY_MS);
    await drop(db, soulId, chain.d, 'email', 0);
    expect(await verdict(db, soulId)).toMatchObject({ ready: false, clusterCount: 1, unmet: ['MIN_CLUSTERS'] });
    for (const principle of ['Fixes flaky tests', 'Reviews deployments']) {
      await addTrait(db, soulId, { principle, provenance: 'the build', citeShardIds: [b.shardId] });
    }
    const faded = await fadeExhaustedShards(db);
    expect(faded).toEqual({ fadedCount: 1, readySoulIds: [soulId] });
    expect(await verdict(db, soulId)).toMatchObject({ ready: true, clusterCount: 2 });
    expect(await fadeExhaustedShards(db)).toEqual({ fadedCount: 0, readySoulIds: [] });
  });

  it('RECENCY counts arrival (SPEC §13): shards recorded after the attunement meet it whatever their createdAt, alone or in a batch', async () => {
    for (const batch of [false, true]) {
      const { db, clock } = fresh();
      const { soulId } = await baselineSoul(db);
      await stampAttuned(db, soulId);
      const attunedAt = clock.now();
      expect(await verdict(db, soulId)).toMatchObject({ ready: false, newSinceAttuned: false, unmet: ['RECENCY'] });
      clock.advance(HOUR_MS);
      // A historical import: observed days before the attunement, recorded an hour after it.
      const backdated = [
        { content: distinct[3], source: 'import', soulIds: [soulId], createdAt: attunedAt - 5 * DAY_MS },
        { content: distinct[4], source: 'import', soulIds: [soulId], createdAt: attunedAt - 4 * DAY_MS },
      ];
      const ready = batch ? (await dropShards(db, backdated)).readySoulIds : (await dropShard(db, backdated[0].content, 'import', [soulId], { createdAt: backdated[0].createdAt })).readySoulIds;
      expect(ready, `batch ${batch}`).toEqual([soulId]);
      const c = await verdict(db, soulId);
      expect(c, `batch ${batch}`).toMatchObject({ ready: true, newSinceAttuned: true, unmet: [] });
      // Observation time still drives the age spread: 5 days from the oldest import to the newest baseline shard.
      expect(c.ageSpreadDays).toBe(4);
      expect(await crystallizationReadiness(db)).toEqual([expect.objectContaining({ soulId })]);
    }
  });

  it('says in words what would meet each unmet condition: for RECENCY the attunement time and that any shard recorded since counts', async () => {
    const { db, clock } = fresh();
    const { soulId } = await baselineSoul(db);
    await stampAttuned(db, soulId);
    const attuned = (await getSoul(db, soulId))!;
    expect(unmetNeeds(await verdict(db, soulId), attuned.lastAttunedAt, db.settings)).toEqual([
      {
        condition: 'RECENCY',
        message: `a shard recorded or revealed after the last attunement (${new Date(clock.now()).toISOString()}): any shard recorded since counts, whatever its createdAt`,
      },
    ]);
    const other = await soul(db);
    await drop(db, other, distinct[0], 'chat', 12 * HOUR_MS);
    expect(unmetNeeds(await verdict(db, other), null, db.settings)).toEqual([
      { condition: 'MIN_SHARDS', message: '2 more shards (1 of the 3 needed)' },
      { condition: 'SOURCE_DIVERSITY', message: 'shards from 1 more source (1 of the 2 needed)' },
      { condition: 'AGE_SPREAD', message: 'shards observed more than a day apart (one shard spans no time)' },
    ]);
    await drop(db, other, distinct[1], 'email', 0);
    await drop(db, other, distinct[2], 'email', 0);
    expect(unmetNeeds(await verdict(db, other), null, db.settings)).toEqual([
      { condition: 'AGE_SPREAD', message: 'shards observed more than a day apart (the oldest and newest are 0.50 days apart)' },
    ]);
    const alike = await soul(db);
    for (const [i, text] of nearDuplicates.entries()) await drop(db, alike, text, i === 0 ? 'chat' : 'email', (3 - i) * DAY_MS);
    expect(unmetNeeds(await verdict(db, alike), null, db.settings)).toEqual([
      { condition: 'MIN_CLUSTERS', message: 'shards on 1 more distinct topic (1 of the 2 clusters needed; a judged theme counts as one)' },
    ]);
    await retireSoul(db, alike);
    expect(unmetNeeds(await verdict(db, alike), null, db.settings)).toEqual([{ condition: 'DORMANT', message: 'awakening: a dormant soul is never ready' }]);
  });

  it('RECENCY counts a sealed shard revealed after the attunement as new evidence (max of created, recorded and revealed)', async () => {
    const { db, clock } = fresh();
    const { soulId } = await baselineSoul(db);
    const sealed = await drop(db, soulId, distinct[3], 'chat', HOUR_MS, true);
    clock.advance(HOUR_MS);
    await stampAttuned(db, soulId);
    expect(await verdict(db, soulId)).toMatchObject({ ready: false, unmet: ['RECENCY'] });

    clock.advance(HOUR_MS);
    const revealed = await revealShards(db, [sealed.shardId]);
    expect(revealed.readySoulIds).toEqual([soulId]);
    expect(await verdict(db, soulId)).toMatchObject({ ready: true, newSinceAttuned: true });
    expect((await getShard(db, sealed.shardId))!.revealedAt).toBe(clock.now());
  });
});

describe('the cheap gate', () => {
  it('does not load or cluster shards for a soul that fails the cheap conditions, and does once they pass', async () => {
    const { db } = fresh();
    const spy = vi.spyOn(db.store, 'shardContents');
    const clustering = vi.spyOn(db.clusters, 'clusterCount');
    const soulId = await soul(db);
    await drop(db, soulId, distinct[0], 'chat', 3 * DAY_MS);
    await drop(db, soulId, distinct[1], 'chat', 2 * DAY_MS);
    await drop(db, soulId, distinct[2], 'chat', 1 * DAY_MS); // three shards, one source
    expect((await verdict(db, soulId)).clusterCount).toBeNull();
    expect(spy).not.toHaveBeenCalled();
    expect(clustering).not.toHaveBeenCalled();

    const edge = await drop(db, soulId, distinct[3], 'email', 0);
    expect(edge.readySoulIds).toEqual([soulId]);
    expect(clustering).toHaveBeenCalled();
    expect(spy).toHaveBeenCalledTimes(1);
    expect(spy.mock.calls[0][0]).toHaveLength(3); // the three older shards; the write's own text is in hand

    await drop(db, soulId, distinct[4], 'email', 0);
    expect(spy).toHaveBeenCalledTimes(1); // remembered since
  });

  it('a batch runs one crystallization pass at the end, clustering each soul it touches once', async () => {
    const { db } = fresh();
    const souls = [await soul(db), await soul(db), await soul(db)];
    const spy = vi.spyOn(db.store, 'shardContents');
    const clustering = vi.spyOn(db.clusters, 'clusterCount');
    const now = db.clock.now();
    const result = await dropShards(
      db,
      souls.flatMap((id) => [
        { content: distinct[0], source: 'chat', soulIds: [id], createdAt: now - 3 * DAY_MS },
        { content: distinct[1], source: 'email', soulIds: [id], createdAt: now - 2 * DAY_MS },
        { content: distinct[2], source: 'journal', soulIds: [id], createdAt: now - DAY_MS },
      ]),
    );
    expect(result.readySoulIds).toEqual(souls);
    expect(spy).not.toHaveBeenCalled(); // the batch's own texts are in hand
    // One pass at the end: each soul clustered before (its old shards: none) and after the batch.
    expect(clustering.mock.calls.map((c) => c[0])).toEqual(souls.flatMap((id) => [id]));
  });
});

describe('determinism', () => {
  async function scenario(db: SoulsDb, clock: ReturnType<typeof manualClock>): Promise<number[]> {
    const ada = await soul(db, 'Ada');
    const bea = await soul(db, 'Bea');
    for (const [i, text] of distinct.entries()) {
      await dropShard(db, text, ['chat', 'email', 'journal'][i % 3], i % 2 ? [ada, bea] : [ada], { createdAt: clock.now() - (6 - i) * DAY_MS, tags: [`t${i % 2}`] });
    }
    for (const [i, text] of nearDuplicates.entries()) await dropShard(db, text, 'chat', [bea], { createdAt: clock.now() - i * HOUR_MS });
    const trait = await addTrait(db, ada, { principle: 'Reviews pull requests carefully', provenance: 'seen in chat' });
    const sealed = await dropShard(db, 'A sealed note about the quarterly budget', 'email', [ada], { sealed: true });
    await citeShard(db, sealed.shardId, trait.id);
    clock.advance(DAY_MS);
    await stampAttuned(db, bea);
    clock.advance(2 * DAY_MS);
    await dropShard(db, 'Fixed the flaky login test after lunch', 'chat', [bea]);
    await revealShards(db, [sealed.shardId]);
    clock.advance(HOUR_MS);
    return [ada, bea];
  }

  it('the same writes with the same clock give identical crystallization and evidence on two fresh databases', async () => {
    const runs = [];
    for (let i = 0; i < 2; i++) {
      const { db, clock } = fresh();
      const ids = await scenario(db, clock);
      const crystallization = await getCrystallization(db, ids);
      const evidence = await Promise.all(ids.map((id) => formatEvidence(db, id)));
      runs.push({ ids, crystallization: [...crystallization], markdown: evidence.map((e) => e.markdown), evidence });
    }
    expect(runs[0].ids).toEqual(runs[1].ids);
    expect(runs[0].crystallization).toEqual(runs[1].crystallization);
    expect(runs[0].crystallization.map(([, c]) => c.ready)).toEqual([true, true]);
    expect(runs[0].markdown[0]).toBe(runs[1].markdown[0]);
    expect(runs[0].markdown[1]).toBe(runs[1].markdown[1]);
    expect(runs[0].evidence).toEqual(runs[1].evidence);
  });
});
