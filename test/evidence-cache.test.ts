import { afterEach, describe, expect, it } from 'vitest';
import { DAY_MS, addTrait, createSoul, dropShard, dropShards, fadeExhaustedShards, formatEvidence, manualClock, openSoulsDb, unciteShard, type ShardInput, type SoulsDb } from '../src/engine/index.ts';
import { makeObservationCorpus, makeRng } from '../bench/corpus.ts';
import { serverPerTest, type LiveServer } from './support/server.ts';

const T0 = Date.UTC(2026, 2, 1);
const SOURCES = ['dialogue', 'quest', 'journal'];
const THEMES = [
  ['ledger', 'grain', 'sack', 'keep', 'tally', 'count', 'north', 'winter'],
  ['forge', 'blade', 'anvil', 'ember', 'quench', 'hammer', 'dawn', 'bell'],
  ['patrol', 'gate', 'watch', 'torch', 'wall', 'signal', 'night', 'horn'],
  ['herb', 'salve', 'fever', 'garden', 'remedy', 'root', 'poultice', 'bloom'],
];

/** About 900 characters of one theme's words: shards sharing a theme cluster together, the themes stay apart. */
function themeText(theme: readonly string[], seed: number): string {
  const rng = makeRng(seed);
  return Array.from({ length: 140 }, () => theme[Math.floor(rng() * theme.length)]).join(' ');
}

/**
 * `perSoul` shards of about 1,000 characters for each of `souls` souls, every fifth also attributed to the next
 * soul, a third tagged: with maxCacheMegabytes 1 the evidence rows' budget (160 KiB) holds about 70 of them.
 */
function corpus(soulIds: readonly number[], perSoul: number): ShardInput[] {
  const observations = makeObservationCorpus(perSoul * soulIds.length, 5);
  const themes = THEMES.map((theme, i) => themeText(theme, 100 + i));
  return observations.map((observation, i) => {
    const soul = i % soulIds.length;
    const owners = i % 5 === 0 && soulIds.length > 1 ? [soulIds[soul], soulIds[(soul + 1) % soulIds.length]] : [soulIds[soul]];
    return {
      content: `${observation} ${themes[Math.floor(i / soulIds.length) % THEMES.length]} #${i}`,
      source: SOURCES[i % SOURCES.length],
      soulIds: owners,
      tags: i % 3 === 0 ? ['ledger'] : [],
      createdAt: T0 - (1 + (i % 40)) * DAY_MS,
    };
  });
}

async function seed(db: SoulsDb, souls: number, perSoul: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < souls; i++) ids.push((await createSoul(db, { name: `Keeper ${i}`, essence: 'Keeps the records.' })).id);
  const inputs = corpus(ids, perSoul);
  for (let start = 0; start < inputs.length; start += 500) await dropShards(db, inputs.slice(start, start + 500));
  return ids;
}

const scopes = [{}, { tags: ['ledger'] }, { query: 'forge' }, { query: 'gate', tags: ['ledger'] }];

describe('evidence reports larger than the evidence cache are the same as uncached ones', () => {
  it('on every read, one after another and at once, for one soul and for several', async () => {
    const db = openSoulsDb({ clock: manualClock(T0), settings: { maxCacheMegabytes: 1 } });
    const soulIds = await seed(db, 4, 150);
    // A fresh handle over the same rows, with the default cache: nothing cached, so nothing evicted.
    const uncached = async (soulId: number, scope: object) => formatEvidence(openSoulsDb({ store: db.store, clock: db.clock }), soulId, scope);
    const reference = new Map<string, Awaited<ReturnType<typeof formatEvidence>>>();
    for (const soulId of soulIds) for (const [s, scope] of scopes.entries()) reference.set(`${soulId}/${s}`, await uncached(soulId, scope));
    expect(reference.get(`${soulIds[0]}/0`)!.shardCount).toBe(180);
    expect(reference.get(`${soulIds[0]}/0`)!.clusters.length).toBeGreaterThan(1);

    for (let round = 0; round < 3; round++) {
      for (const [s, scope] of scopes.entries()) expect(await formatEvidence(db, soulIds[0], scope)).toEqual(reference.get(`${soulIds[0]}/${s}`));
    }
    for (let round = 0; round < 3; round++) {
      const asked = soulIds.flatMap((soulId) => scopes.map((scope, s) => ({ key: `${soulId}/${s}`, report: formatEvidence(db, soulId, scope) })));
      for (const { key, report } of asked) expect(await report).toEqual(reference.get(key));
    }
  });

  it('a report far larger than the cache, read again and again and beside others', async () => {
    const db = openSoulsDb({ clock: manualClock(T0), settings: { maxCacheMegabytes: 1 } });
    const [big, small] = await seed(db, 2, 600);
    const fresh = () => openSoulsDb({ store: db.store, clock: db.clock });
    const bigReport = await formatEvidence(fresh(), big);
    const smallReport = await formatEvidence(fresh(), small, { tags: ['ledger'] });
    expect(bigReport.shardCount).toBe(720);
    for (let round = 0; round < 3; round++) {
      const [a, b, c] = await Promise.all([formatEvidence(db, big), formatEvidence(db, small, { tags: ['ledger'] }), formatEvidence(db, big)]);
      expect(a).toEqual(bigReport);
      expect(b).toEqual(smallReport);
      expect(c).toEqual(bigReport);
    }
  });
});

const report = `shardCount clusteredShardCount generatedAt markdown
  clusters { memberCount weight sources representative { id content } members { id } sharedWith { soul { id } sharedCount } }
  trend { recentCount previousCount velocity }`;
const soulQuery = `query ($id: ID!) { soul(id: $id) {
  all: evidence { ${report} }
  tagged: evidence(tags: ["ledger"]) { ${report} }
  found: evidence(query: "forge") { ${report} }
} }`;
// The four souls there are: the roster's default page of 1,000 is priced past maxCost with these reports.
const dashboard = `{ souls(orderBy: NAME, first: 4) { name evidence { ${report} } } }`;

describe('evidence over HTTP with a small cache answers as a fresh server does', () => {
  const start = serverPerTest(afterEach);

  async function seeded(settings: { maxCacheMegabytes?: number }): Promise<{ server: LiveServer; soulIds: number[] }> {
    const server = await start({ start: T0, settings, app: { limits: { maxCost: 1_000_000 } } });
    return { server, soulIds: await seed(server.app.db, 4, 150) };
  }

  it('repeated and concurrent reports of one soul, and a dashboard over four souls', async () => {
    const { server, soulIds } = await seeded({ maxCacheMegabytes: 1 });
    const { server: reference } = await seeded({});
    const expected = new Map<string, unknown>();
    for (const id of soulIds) expected.set(String(id), (await reference.request(soulQuery, { id: String(id) })).body);
    const expectedDashboard = (await reference.request(dashboard)).body;
    expect(expectedDashboard.errors).toBeUndefined();
    expect(expectedDashboard.data.souls.map((s: { evidence: { shardCount: number } }) => s.evidence.shardCount)).toEqual([180, 180, 180, 180]);

    for (let round = 0; round < 3; round++) {
      const answer = await server.request(soulQuery, { id: String(soulIds[0]) });
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual(expected.get(String(soulIds[0])));
    }
    for (let round = 0; round < 2; round++) {
      const answers = await Promise.all([...soulIds.map((id) => server.request(soulQuery, { id: String(id) })), server.request(dashboard), server.request(dashboard)]);
      soulIds.forEach((id, i) => expect(answers[i].body).toEqual(expected.get(String(id))));
      expect(answers[soulIds.length].body).toEqual(expectedDashboard);
      expect(answers[soulIds.length + 1].body).toEqual(expectedDashboard);
    }
  });
});

describe('a cluster\'s representative is its row as it stands', () => {
  const start = serverPerTest(afterEach);

  it('after the shard was faded and restored since a report read it', async () => {
    const server = await start({ start: T0 });
    const { db } = server.app;
    const soul = await createSoul(db, { name: 'Keeper', essence: 'Keeps the records.' });
    const lone = (await dropShard(db, 'Counted the grain sacks twice before the winter feast', 'ledger', [soul.id])).shardId;
    await dropShard(db, 'Sharpened every blade in the armoury at dawn', 'forge', [soul.id]);
    const representative = async () => {
      const data = await server.data('query ($id: ID!) { soul(id: $id) { evidence { clusters { representative { id status updatedAt } } } } }', { id: String(soul.id) });
      return data.soul.evidence.clusters.map((c: { representative: { id: string } }) => c.representative).find((r: { id: string }) => r.id === String(lone));
    };
    const read = await representative();
    expect(read).toEqual({ id: String(lone), status: 'PENDING', updatedAt: new Date(T0).toISOString() });

    const traits = [];
    for (const principle of ['Counts before it trusts', 'Keeps the ledger straight']) traits.push(await addTrait(db, soul.id, { principle, provenance: 'Seen.', citeShardIds: [lone] }));
    server.clock.advance(DAY_MS);
    expect((await fadeExhaustedShards(db)).fadedCount).toBe(1);
    expect(await representative()).toBeUndefined();
    server.clock.advance(DAY_MS);
    await unciteShard(db, lone, traits[1].id);

    const restored = await representative();
    expect(restored).toEqual({ id: String(lone), status: 'PENDING', updatedAt: new Date(T0 + 2 * DAY_MS).toISOString() });
    expect(restored).toEqual((await server.data('query ($id: ID!) { shard(id: $id) { id status updatedAt } }', { id: String(lone) })).shard);
  });
});
