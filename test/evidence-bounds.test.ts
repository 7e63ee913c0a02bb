import { afterEach, describe, expect, it } from 'vitest';
import { DAY_MS, createSoul, dropShard, dropShards, formatEvidence, getCrystallization, manualClock, openSoulsDb, similarity, type SoulsDb } from '../src/engine/index.ts';
import { lowVarietyText } from '../bench/evidence-attack.ts';
import { makeRng } from '../bench/corpus.ts';
import { clusterTextsNaive } from './support/naive-clustering.ts';
import { startServer, type LiveServer } from './support/server.ts';
import { EVIDENCE_PRICES } from '../src/server/price-list.ts';

const T0 = Date.UTC(2026, 2, 1);
const ago = (days: number) => T0 - days * DAY_MS;

const ledger = 'Counted every sack of grain in the northern keep twice';
const forge = 'Hammered every blade at the forge until the dawn bell';
/** Similar to both: the only link between the two groups. */
const bridge = `${ledger} and ${forge}`;

/** Five shards over two sources and days: the oldest (dropped first) is the bridge, then two ledger and two forge shards. */
async function bridgedSoul(maxClusteredShards?: number) {
  const db = openSoulsDb({ clock: manualClock(T0), settings: { maxClusteredShards } });
  const soul = await createSoul(db, { name: 'Mira', essence: 'Keeps the records.' });
  const contents = [bridge, `${ledger}.`, `${ledger}!`, `${forge}.`, `${forge}!`];
  const ids: number[] = [];
  for (const [i, content] of contents.entries()) ids.push((await dropShard(db, content, i % 2 === 0 ? 'ledger' : 'forge', [soul.id], { createdAt: ago(5 - i) })).shardId);
  return { db, soul, ids, contents };
}

describe('maxClusteredShards: clustering covers the most recently dropped shards, and says so', () => {
  it('the texts link as the test needs: the bridge resembles both groups, the groups not each other', () => {
    expect(similarity(bridge, ledger)).toBeGreaterThanOrEqual(0.4);
    expect(similarity(bridge, forge)).toBeGreaterThanOrEqual(0.4);
    expect(similarity(ledger, forge)).toBeLessThan(0.4);
  });

  it('under the bound every shard is clustered: the bridge makes one cluster, so the soul is not ready', async () => {
    const { db, soul } = await bridgedSoul();
    const verdict = (await getCrystallization(db, [soul.id])).get(soul.id)!;
    expect(verdict).toMatchObject({ clusterCount: 1, clusteredShardCount: 5, unmet: ['MIN_CLUSTERS'] });
    const report = await formatEvidence(db, soul.id);
    expect(report).toMatchObject({ shardCount: 5, clusteredShardCount: 5 });
    expect(report.clusters).toHaveLength(1);
    expect(report.markdown).not.toContain('maxClusteredShards');
  });

  it('over it, the gate and the report cluster exactly the newest shards, and the report and verdict say how many', async () => {
    const { db, soul, ids, contents } = await bridgedSoul(4);
    const verdict = (await getCrystallization(db, [soul.id])).get(soul.id)!;
    expect(verdict).toMatchObject({ ready: true, clusterCount: 2, clusteredShardCount: 4, pendingCount: 5, unmet: [] });
    const report = await formatEvidence(db, soul.id);
    expect(report).toMatchObject({ shardCount: 5, clusteredShardCount: 4 });
    // Exactly the naive all-pairs partition of the four newest shards.
    const naive = clusterTextsNaive(contents.slice(1), 0.4).map((c) => c.map((i) => ids[i + 1]));
    expect(report.clusters.map((c) => [...c.memberIds].sort((a, b) => a - b)).sort((a, b) => a[0] - b[0])).toEqual(naive);
    expect(report.markdown).toContain('Clusters cover the 4 most recently dropped shards of 5 (maxClusteredShards)');
    // Scoped reports are bounded the same way.
    const scoped = await formatEvidence(db, soul.id, { query: 'every' });
    expect(scoped).toMatchObject({ shardCount: 5, clusteredShardCount: 4 });
  });

  it('is a setting with a floor of 2', () => {
    expect(() => openSoulsDb({ settings: { maxClusteredShards: 1 } })).toThrow(expect.objectContaining({ field: 'maxClusteredShards' }));
    expect(() => openSoulsDb({ settings: { maxClusteredShards: 1 } })).toThrow(/must be >= 2/);
  });
});

/** A soul with `count` low-variety shards (20 words, 1,400 characters each) over two sources and thirty days. */
async function lowVarietySoul(count: number): Promise<{ db: SoulsDb; soulId: number }> {
  const db = openSoulsDb({ clock: manualClock(T0) });
  const soul = await createSoul(db, { name: 'Target', essence: 'Counts everything.' });
  const rng = makeRng(9);
  await dropShards(
    db,
    Array.from({ length: count }, (_, i) => ({ content: lowVarietyText(rng, 1400), source: i % 2 === 0 ? 'dialogue' : 'quest', soulIds: [soul.id], createdAt: ago(1 + (i % 30)) })),
  );
  return { db, soulId: soul.id };
}

describe('evidence reports reuse their work while the shards stay the same', () => {
  it('a second report reads no shard rows again and is the same, byte for byte; a new shard is in the next one', async () => {
    const statements = async (db: SoulsDb, work: () => Promise<unknown>) => {
      const before = await db.store.statementsExecuted();
      await work();
      return await db.store.statementsExecuted() - before;
    };
    // Warm, a report costs the same statements for 30 shards as for 300: no shard row is read again.
    const warmCounts: number[] = [];
    for (const count of [30, 300]) {
      const { db, soulId } = await lowVarietySoul(count);
      let first: Awaited<ReturnType<typeof formatEvidence>> | undefined;
      const cold = await statements(db, async () => (first = await formatEvidence(db, soulId)));
      let second: Awaited<ReturnType<typeof formatEvidence>> | undefined;
      const warm = await statements(db, async () => (second = await formatEvidence(db, soulId)));
      expect(cold).toBeGreaterThan(warm);
      warmCounts.push(warm);
      expect(second!.markdown).toBe(first!.markdown);
      expect(second).toEqual(first);
      if (count === 300) {
        const { shardId } = await dropShard(db, 'Asked for proof before believing the raid rumour', 'dialogue', [soulId]);
        const third = await formatEvidence(db, soulId);
        expect(third.shardCount).toBe(301);
        expect(third.clusters.some((c) => c.memberIds.includes(shardId))).toBe(true);
      }
    }
    expect(warmCounts[1]).toBe(warmCounts[0]);
  });

  it('a large report hands the event loop back while it is built, and comes out the same', async () => {
    const { db, soulId } = await lowVarietySoul(2000);
    // Another database over the same rows would do; a fresh one has nothing cached.
    const reference = await formatEvidence(db, soulId);
    const cold = openSoulsDb({ store: db.store, clock: db.clock });
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 0);
    try {
      const report = await formatEvidence(cold, soulId);
      expect(ticks).toBeGreaterThan(0);
      expect(report).toEqual(reference);
    } finally {
      clearInterval(ticker);
    }
  });
});

describe('evidence and crystallization count in the cost limit', () => {
  let server: LiveServer;
  afterEach(() => server?.stop());

  /** A soul of 100 pending shards whose partition the server holds: each report of it is charged 150 + 5 × 100 = 650. */
  async function heldSoul(db: SoulsDb, name: string): Promise<number> {
    const soul = await createSoul(db, { name, essence: 'Keeps the records.' });
    await dropShards(db, Array.from({ length: 100 }, (_, i) => ({ content: `${name} filed record ${i} of the harbour ledger`, source: 'ledger', soulIds: [soul.id] })));
    await formatEvidence(db, soul.id);
    return soul.id;
  }

  it('charges every evidence report by its shards, per alias and per soul in a list, and refuses those past maxCost with COST_LIMIT_EXCEEDED', async () => {
    server = await startServer({ app: { limits: { maxCost: 1500 } } });
    const ids = [await heldSoul(server.app.db, 'Ada'), await heldSoul(server.app.db, 'Bram'), await heldSoul(server.app.db, 'Cole')];
    const one = await server.request(`{ soul(id: "${ids[0]}") { evidence { shardCount } } }`);
    expect(one.body).toEqual({ data: { soul: { evidence: { shardCount: 100 } } } });

    // Estimated at 461 before running (each report at its reading price, 150); metered, the third report passes 1500.
    const aliased = await server.request(`{ soul(id: "${ids[0]}") { ${[1, 2, 3].map((i) => `e${i}: evidence { shardCount }`).join(' ')} } }`);
    expect(aliased.body.errors).toHaveLength(1);
    expect(aliased.body.errors[0]).toMatchObject({ path: ['soul', 'e3'], extensions: { code: 'COST_LIMIT_EXCEEDED', cost: 1961, limit: 1500, setting: 'maxCost' } });
    expect(aliased.body.errors[0].message).toBe(`Query cost limit of 1500 exceeded (maxCost): the evidence report of soul ${ids[0]} (100 shards) costs 650, and this operation has used 1311`);

    const listed = await server.request('{ souls(orderBy: NAME, first: 3) { name evidence { shardCount } } }');
    expect(listed.body.errors).toEqual([expect.objectContaining({ path: ['souls', 2, 'evidence'], extensions: expect.objectContaining({ code: 'COST_LIMIT_EXCEEDED', limit: 1500, setting: 'maxCost' }) })]);
  });

  it('charges a report analysed afresh for its analysis, one whose analysis the cache holds only its reading', async () => {
    server = await startServer({ app: { limits: { maxCost: 1500 } } });
    const soulId = await heldSoul(server.app.db, 'Ada');
    const query = `{ soul(id: "${soulId}") { evidence { shardCount } } }`;
    const reading = EVIDENCE_PRICES.reportRead + EVIDENCE_PRICES.reportShard * 100;
    const analysing = reading + EVIDENCE_PRICES.analysisShard * 100;
    expect(analysing).toBeGreaterThan(1500);
    // Its partition held, its analysis forgotten: analysed afresh, past the limit, refused before any of it is made.
    server.app.db.evidence.forgetAnalyses();
    const refused = await server.request(query);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: ['soul', 'evidence'], extensions: expect.objectContaining({ code: 'COST_LIMIT_EXCEEDED', limit: 1500 }) })]);
    expect(refused.body.errors[0].message).toContain(`the evidence report of soul ${soulId} (100 shards) costs ${analysing},`);
    // Analysed once (as the engine's own reader does), it is served from the cache at its reading price.
    await formatEvidence(server.app.db, soulId);
    expect((await server.request(query)).body).toEqual({ data: { soul: { evidence: { shardCount: 100 } } } });
    expect(reading).toBeLessThan(1500);
  });

  it('charges a crystallization verdict for every soul judged, those an order by readiness judges included', async () => {
    server = await startServer({ app: { limits: { maxCost: 800 } } });
    const names = ['Ada', 'Bram', 'Cole', 'Dara', 'Edda', 'Finn', 'Gwen', 'Hale', 'Ines', 'Jory'];
    for (const name of names.slice(0, 9)) await createSoul(server.app.db, { name, essence: 'Keeps the records.' });
    // One soul listed (3), nine judged to order them: 3 + 9 × 85 fits 800, 3 + 10 × 85 does not.
    const first = '{ souls(orderBy: READINESS, first: 1) { name } }';
    expect((await server.request(first)).body).toEqual({ data: { souls: [{ name: 'Ada' }] } });
    await createSoul(server.app.db, { name: names[9], essence: 'Keeps the records.' });
    const refused = await server.request(first);
    expect(refused.body.errors).toEqual([expect.objectContaining({ path: ['souls'], extensions: expect.objectContaining({ code: 'COST_LIMIT_EXCEEDED', cost: 853, limit: 800, setting: 'maxCost' }) })]);
    expect(refused.body.errors[0].message).toContain('10 crystallization verdict(s) costs 850');
  });
});
