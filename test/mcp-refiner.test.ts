// The refiner soul: outcome shards for what it applies through the tools, regret shards when people take it back,
// and the same gates, evidence and level-ups as any soul.
import { afterEach, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { DAY_MS, getCrystallization, listShards, listTraits, type Shard, type SoulsDb } from '../src/engine/index.ts';
import { findRefiner, initRefiner, isRefiner, OUTCOME_SOURCE, REFINER_TRAITS, REGRET_SOURCE } from '../src/mcp/refiner.ts';
import { seedDemo } from '../scripts/demo.ts';
import { call, connect, demoDb, DEMO_NOW, type Connected } from './support/mcp.ts';
import { serverPerTest } from './support/server.ts';

const sessions: Connected[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

async function shardsOf(db: SoulsDb, soulId: number, source: string): Promise<Shard[]> {
  return (await listShards(db, { soulId, source, includeExpired: true, first: 500 })).items.reverse();
}

describe('souls refiner init (initRefiner)', () => {
  it('creates a soul with an essence and starting traits with provenance, marked by its slug, once per name', async () => {
    const { db } = await demoDb();
    const { soul, traits } = await initRefiner(db);
    expect(soul).toMatchObject({ name: 'Refiner', slug: 'refiner', level: 0 });
    expect(isRefiner(soul)).toBe(true);
    expect(traits.map((t) => t.principle)).toEqual(REFINER_TRAITS.map((t) => t.principle));
    for (const t of traits) expect(t.provenance).toContain('souls refiner init');
    await expect(initRefiner(db)).rejects.toThrow('already has the refiner "Refiner"');
    const named = await initRefiner(db, { name: 'Scout' });
    expect(named.soul).toMatchObject({ name: 'Refiner Scout', slug: 'refiner-scout' });
    expect((await findRefiner(db, 'Scout'))!.id).toBe(named.soul.id);
    expect((await findRefiner(db))!.id).toBe(soul.id);
  });
});

describe('a scripted refiner through two refinements and one revert', () => {
  it('deposits outcome shards, a regret shard for the revert, and becomes ready with a report of its own', async () => {
    const { db, clock, summary } = await demoDb();
    const { soul: refiner } = await initRefiner(db);
    const agent = await connect(db, { refinerId: refiner.id });
    const person = await connect(db, { pubsub: agent.pubsub });
    sessions.push(agent, person);
    const sela = summary.souls.Sela;
    const relay = summary.souls.Relay;

    // Refinement 1: a trait for Sela from her shards.
    const evidence = await call(agent.client, 'soul_evidence', { soulId: sela, format: 'json' });
    const cited = evidence.data.report.clusters[0].memberIds;
    const added = await call(agent.client, 'trait_change', { action: 'add', soulId: sela, principle: 'Count the watch twice before the report.', provenance: 'Two tower reports.', citeShardIds: cited });
    expect(added.isError).toBe(false);
    await call(agent.client, 'soul_attune', { soulId: sela });

    // Refinement 2, two days later: Relay's overlapping split traits consolidated.
    clock.advance(2 * DAY_MS);
    const active = await listTraits(db, relay, { status: 'active' });
    const splits = active.filter((t) => t.principle.startsWith('Split'));
    const plan = {
      soulId: relay,
      newEssence: 'Relay plans work for a small team of coding agents, hands out small tasks and reviews what comes back.',
      consolidations: [{ sourceTraitIds: splits.map((t) => t.id), mergedPrinciple: 'Split work into small tasks before delegating it.', mergedProvenance: 'Two delegation habits.' }],
      promotedTraitIds: [],
      carriedTraitIds: active.filter((t) => !splits.includes(t)).map((t) => t.id),
    };
    expect((await call(agent.client, 'levelup', { ...plan, dryRun: true })).isError).toBe(false);
    const levelled = await call(agent.client, 'levelup', plan);
    expect(levelled.data.applied).toBe(true);

    // A person takes the trait back a day later, through their own session.
    clock.advance(DAY_MS);
    const reverted = await call(person.client, 'trait_change', { action: 'revert', traitId: added.data.trait.id });
    expect(reverted.isError).toBe(false);

    const outcomes = await shardsOf(db, refiner.id, OUTCOME_SOURCE);
    expect(outcomes.map((s) => s.tags.find((t) => t.startsWith('action:')))).toEqual(['action:add', 'action:attune', 'action:levelup']);
    expect(outcomes[0].content).toBe(`Added trait #${added.data.trait.id} to Sela (soul #${sela}): "Count the watch twice before the report." Citing shards ${cited.map((id: number) => `#${id}`).join(', ')}.`);
    expect(outcomes[0].tags).toEqual(expect.arrayContaining([`soul:${sela}`, `trait:${added.data.trait.id}`]));
    expect(outcomes[2].tags).toContain(`level:${levelled.data.levelEventId}`);
    const regrets = await shardsOf(db, refiner.id, REGRET_SOURCE);
    expect(regrets.map((s) => s.content)).toEqual([`Regret: the trait #${added.data.trait.id} I added to Sela (soul #${sela}) was reverted: "Count the watch twice before the report."`]);
    // The person's session acts as no refiner: nothing of theirs lands on the refiner.
    expect(outcomes.some((s) => s.content.startsWith('Reverted'))).toBe(false);

    // The refiner crystallizes like any soul: four shards, two sources, three days apart, distinct clusters.
    expect((await getCrystallization(db, [refiner.id])).get(refiner.id)).toMatchObject({ ready: true, unmet: [] });
    const report = await call(agent.client, 'soul_evidence', { soulId: refiner.id });
    expect(report.data.verdict.ready).toBe(true);
    const [markdown] = report.blocks;
    expect(markdown).toContain('# Evidence: Refiner');
    expect(markdown).toContain(REGRET_SOURCE);
    expect(markdown).toContain(OUTCOME_SOURCE);
    const roster = await call(agent.client, 'soul_read', {});
    expect(roster.data.souls.find((s: { id: number }) => s.id === refiner.id)).toMatchObject({ ready: true });
  });

  it('regrets a level-up it planned when it is rolled back, once', async () => {
    const { db, summary } = await demoDb();
    const { soul: refiner } = await initRefiner(db);
    const agent = await connect(db, { refinerId: refiner.id });
    const person = await connect(db, { pubsub: agent.pubsub });
    sessions.push(agent, person);
    const relay = summary.souls.Relay;
    const active = await listTraits(db, relay, { status: 'active' });
    const levelled = await call(agent.client, 'levelup', { soulId: relay, newEssence: 'Relay delegates small tasks.', carriedTraitIds: active.map((t) => t.id) });
    await call(person.client, 'levelup_revert', { soulId: relay });
    await call(person.client, 'soul_attune', { soulId: relay });
    const regrets = await shardsOf(db, refiner.id, REGRET_SOURCE);
    expect(regrets).toHaveLength(1);
    expect(regrets[0].content).toBe(`Regret: the level-up of soul #${relay} to level 1 that I planned was rolled back`);
    expect(regrets[0].tags).toEqual(expect.arrayContaining([`level:${levelled.data.levelEventId}`, 'regret:levelup']));
  });
});

describe('the refiner over HTTP and GraphQL', () => {
  const start = serverPerTest(afterEach);

  it('a token named like the refiner acts as it at /mcp; other tokens do not', async () => {
    const tokens = [
      { name: 'refiner', token: 'refiner-token-0123456789', scopes: ['read' as const, 'refine' as const] },
      { name: 'editor', token: 'editor-token-0123456789', scopes: ['read' as const, 'refine' as const] },
    ];
    const server = await start({ start: DEMO_NOW, app: { tokens } });
    const { souls } = await seedDemo(server.app.db, server.clock, { now: DEMO_NOW });
    const { soul: refiner } = await initRefiner(server.app.db);
    for (const [token, principle] of [['refiner-token-0123456789', 'Watch the north road.'], ['editor-token-0123456789', 'Watch the south road.']]) {
      const client = new Client({ name: 'refiner-http', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url.replace(/graphql$/, 'mcp')), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      const added = await call(client, 'trait_change', { action: 'add', soulId: souls.Sela, principle, provenance: 'HTTP test.' });
      expect(added.isError).toBe(false);
      await client.close();
    }
    const outcomes = await shardsOf(server.app.db, refiner.id, OUTCOME_SOURCE);
    expect(outcomes.map((s) => s.content)).toEqual([expect.stringContaining('"Watch the north road."')]);
  });

  it('a trait the refiner added and a person reverts in the API deposits a regret shard', async () => {
    const server = await start({ start: DEMO_NOW });
    const { souls } = await seedDemo(server.app.db, server.clock, { now: DEMO_NOW });
    const { soul: refiner } = await initRefiner(server.app.db);
    const agent = await connect(server.app.db, { refinerId: refiner.id, pubsub: server.app.pubsub });
    sessions.push(agent);
    const added = await call(agent.client, 'trait_change', { action: 'add', soulId: souls.Sela, principle: 'Sleep in the tower on watch nights.', provenance: 'A scouting report.' });
    const result = await server.request('mutation($id: ID!) { revertTrait(id: $id) { __typename } }', { id: String(added.data.trait.id) });
    expect(result.body.errors).toBeUndefined();
    for (let i = 0; i < 100 && (await shardsOf(server.app.db, refiner.id, REGRET_SOURCE)).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    const regrets = await shardsOf(server.app.db, refiner.id, REGRET_SOURCE);
    expect(regrets.map((s) => s.tags)).toEqual([expect.arrayContaining([`trait:${added.data.trait.id}`, 'regret:trait'])]);
  });
});
