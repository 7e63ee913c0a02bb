// The token budget: the largest response of each tool on the demo data, and on data built to be too large, stays
// under MAX_RESPONSE_TOKENS (characters ÷ 4) and says how to get the rest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listShards, listTraits, type SoulsDb } from '../src/engine/index.ts';
import { estimateTokens, MAX_RESPONSE_TOKENS } from '../src/mcp/results.ts';
import { tools } from '../src/mcp/server.ts';
import { call, connect, demoDb, type Connected } from './support/mcp.ts';

let db: SoulsDb;
let ids: Record<string, number>;
let session: Connected;
const largest = new Map<string, { tokens: number; args: Record<string, unknown> }>();

async function measure(name: string, args: Record<string, unknown>) {
  const r = await call(session.client, name, args);
  const tokens = estimateTokens(r.result);
  if (tokens > (largest.get(name)?.tokens ?? -1)) largest.set(name, { tokens, args });
  return r;
}

beforeAll(async () => {
  const demo = await demoDb();
  db = demo.db;
  ids = demo.summary.souls;
  session = await connect(db);
});
afterAll(async () => {
  await session.close();
});

describe('the largest response of each tool on the demo data', () => {
  it('stays under the token budget', async () => {
    const soulIds = Object.values(ids);
    for (const orderBy of ['READINESS', 'NAME', 'LEVEL', 'UPDATED']) await measure('soul_read', { orderBy, limit: 50 });
    await measure('soul_read', { dormant: true, limit: 50 });
    for (const soulId of soulIds) {
      await measure('soul_read', { soulId, render: 'full', sections: ['traits', 'inactiveTraits', 'crystallization', 'levels', 'shardCounts'] });
      await measure('shard_search', { soulId, limit: 50 });
      await measure('soul_evidence', { soulId });
      await measure('soul_evidence', { soulId, format: 'json', limit: 30 });
    }
    await measure('shard_search', { limit: 50 });
    await measure('shard_search', { status: 'faded', limit: 50 });
    for (const query of ['the', 'ledger', 'steel', 'agent']) await measure('shard_search', { query, limit: 50 });
    const twenty = (await listShards(db, { first: 20 })).items.map((s) => s.id);
    await measure('shard_search', { ids: twenty });

    const shards = Array.from({ length: 100 }, (_, i) => ({ content: `Budget shard ${i}: Sela kept watch at the tower.`, source: `source-${i % 7}`, soulIds: [ids.Sela], tags: [`t${i % 5}`] }));
    const { shardIds: budgetShards } = (await measure('shard_observe', { shards })).data;
    const judged = { action: 'assign', soulId: ids.Sela, assignments: Array.from({ length: 20 }, (_, i) => ({ shardIds: budgetShards.slice(i * 5, i * 5 + 5), newThemeName: `Budget theme ${i} ${'of the tower watch '.repeat(8)}` })) };
    for (const args of [{ ...judged, dryRun: true }, judged, { action: 'unassign', soulId: ids.Sela, shardIds: budgetShards }]) {
      const r = await measure('evidence_judge', args);
      expect(r.isError, r.text).toBe(false);
    }
    await measure('shard_observe', { reveal: (await measure('shard_observe', { shards: shards.slice(0, 3).map((s) => ({ ...s, sealed: true })) })).data.shardIds });

    const mira = await listTraits(db, ids.Mira, { status: 'active' });
    await measure('trait_change', { action: 'add', soulId: ids.Mira, principle: 'Count the arrows at dusk.', provenance: 'Budget test.', dryRun: true });
    const added = await measure('trait_change', { action: 'add', soulId: ids.Mira, principle: 'Count the arrows at dusk.', provenance: 'Budget test.' });
    await measure('trait_change', { action: 'revise', traitId: added.data.trait.id, principle: 'Count the arrows at dusk and dawn.', dryRun: true });
    await measure('trait_change', { action: 'cite', traitId: mira[0].id, citeShardIds: twenty.slice(0, 5) });
    await measure('trait_change', { action: 'revert', traitId: added.data.trait.id });

    const relay = await listTraits(db, ids.Relay, { status: 'active' });
    const plan = { soulId: ids.Relay, newEssence: 'Relay plans small, verifiable work for a team of coding agents.', consolidations: [], promotedTraitIds: [], carriedTraitIds: relay.map((t) => t.id) };
    await measure('levelup', { ...plan, dryRun: true });
    await measure('levelup', { ...plan, carriedTraitIds: [], dryRun: true });
    await measure('levelup', plan);
    await measure('levelup_revert', { soulId: ids.Relay });
    await measure('soul_attune', { soulId: ids.Mira, fadeExhaustedShards: true });
    await measure('soul_manage', { action: 'create', name: 'Budget', essence: 'A soul made by the budget test.' });

    for (const t of tools) expect(largest.has(t.name), t.name).toBe(true);
    for (const [name, { tokens, args }] of largest) expect(tokens, `${name} ${JSON.stringify(args)}`).toBeLessThanOrEqual(MAX_RESPONSE_TOKENS);
    // The figures docs/agents.md quotes (npx vitest run test/mcp-budget.test.ts).
    console.log(['tool | largest response (tokens ≈ chars ÷ 4)', ...tools.map((t) => `${t.name} | ${largest.get(t.name)!.tokens}`)].join('\n'));
  });
});

describe('data built to overflow', () => {
  it('clips a huge soul and a huge shard, and says where the rest is', async () => {
    const essence = 'An essence that goes on and on about the old keep and its stores. '.repeat(900);
    const created = await call(session.client, 'soul_manage', { action: 'create', name: 'Verbose', essence });
    const soulId = created.data.soul.id;
    const content = 'A very long observation about the stores of the keep. '.repeat(140);
    await call(session.client, 'shard_observe', { shards: Array.from({ length: 30 }, (_, i) => ({ content: `${i} ${content}`, source: `s${i % 3}`, soulIds: [soulId] })) });
    for (let i = 0; i < 10; i++) {
      const r = await call(session.client, 'trait_change', { action: 'add', soulId, principle: `Principle ${i}: ${'keep the stores in order '.repeat(60)}`, provenance: 'p '.repeat(3000) });
      expect(r.isError).toBe(false);
    }
    const read = await call(session.client, 'soul_read', { soulId, render: 'full', sections: ['traits', 'crystallization', 'levels', 'shardCounts'] });
    expect(estimateTokens(read.result)).toBeLessThanOrEqual(MAX_RESPONSE_TOKENS);
    expect(read.data.soul.renderedClipped).toBe(true);
    expect(read.result.structuredContent).toBeDefined();
    expect(read.text).toContain('renderedClipped');

    const listed = await call(session.client, 'shard_search', { soulId, limit: 50 });
    expect(estimateTokens(listed.result)).toBeLessThanOrEqual(MAX_RESPONSE_TOKENS);
    expect(listed.data.shards.length).toBeLessThan(30);
    expect(listed.data.nextCursor).toEqual(expect.any(String));
    const one = await call(session.client, 'shard_search', { ids: [listed.data.shards[0].id] });
    expect(estimateTokens(one.result)).toBeLessThanOrEqual(MAX_RESPONSE_TOKENS);
    expect(one.data.shards[0].content.length).toBeGreaterThan(5000);

    for (const format of ['markdown', 'json']) {
      const evidence = await call(session.client, 'soul_evidence', { soulId, format, limit: 30 });
      expect(estimateTokens(evidence.result), format).toBeLessThanOrEqual(MAX_RESPONSE_TOKENS);
    }
    const preview = await call(session.client, 'trait_change', { action: 'revert', traitId: (await listTraits(db, soulId))[0].id, dryRun: true });
    expect(estimateTokens(preview.result)).toBeLessThanOrEqual(MAX_RESPONSE_TOKENS);
  });
});
