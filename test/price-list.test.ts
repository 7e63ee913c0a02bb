// A request's price is its work (SPEC §13), on both doors at their default limits: the amplifying requests of the
// fixes issue are refused before anything of them runs, and the dashboard of a thousand souls answers in one request.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedRoster } from '../bench/roster.ts';
import { assignThemes, createSoul, DAY_MS, dropShards } from '../src/engine/index.ts';
import { defaultLimits } from '../src/server/limits.ts';
import { startServer, type LiveServer } from './support/server.ts';

const DASHBOARD = readFileSync(new URL('../examples/dashboard.graphql', import.meta.url), 'utf8');
const MAX_COST = defaultLimits.maxCost;

/** The statements the server's store ran while `work` did. */
async function statementsDuring(server: LiveServer, work: () => Promise<unknown>): Promise<number> {
  const before = await server.app.db.store.statementsExecuted();
  await work();
  return (await server.app.db.store.statementsExecuted()) - before;
}

/** A raw JSON-RPC POST to /mcp (a batch is an array), answered as JSON or as one SSE frame per answer. */
async function mcp(server: LiveServer, body: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(server.url.replace(/graphql$/, 'mcp'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (text.startsWith('{') || text.startsWith('[')) return { status: response.status, json: JSON.parse(text) };
  const frames = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]));
  return { status: response.status, json: frames.length === 1 ? frames[0] : frames };
}
const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

function expectRefusedBeforeRunning(body: any): void {
  expect(body).not.toHaveProperty('data');
  expect(body.errors).toHaveLength(1);
  expect(body.errors[0].extensions).toMatchObject({ code: 'COST_LIMIT', limit: MAX_COST, setting: 'maxCost' });
  expect(body.errors[0].extensions.cost).toBeGreaterThan(MAX_COST);
  expect(body.errors[0].message).toBe(`Query Cost limit of ${MAX_COST} exceeded, found ${body.errors[0].extensions.cost}.`);
}

describe('a theme of 150 shards read through its members’ souls’ themes (issue 32, item 1)', () => {
  let server: LiveServer;
  let soulId: number;
  beforeAll(async () => {
    server = await startServer({ app: { tokens: [{ name: 'reader', token: 'tok-read-0123456789abcdef', scopes: ['read'] }] } });
    const db = server.app.db;
    soulId = (await createSoul(db, { name: 'Ada', essence: 'Keeps the ledger.' })).id;
    const now = db.clock.now();
    const { shardIds } = await dropShards(db, Array.from({ length: 150 }, (_, i) => ({ content: `Ledger line ${i} checked against the manifest`, source: i % 2 ? 'dock' : 'office', soulIds: [soulId], createdAt: now - (i + 1) * 60_000 })));
    await assignThemes(db, soulId, [{ newThemeName: 'Ledger', shardIds }]);
  });
  afterAll(() => server.stop());
  const reader = { authorization: 'Bearer tok-read-0123456789abcdef' };

  it('is refused before any of it runs, with its price, the limit and the setting', async () => {
    const nested = `{ soul(id: "${soulId}") { themes { members { souls { themes { members { souls { themes { members { id } } } } } } } } } }`;
    let answer: { status: number; body: any } | undefined;
    const statements = await statementsDuring(server, async () => {
      answer = await server.request(nested, undefined, reader);
    });
    // A request error: 400 under application/graphql-response+json (GraphQL over HTTP), 200 under application/json.
    expect(answer!.status).toBe(400);
    expectRefusedBeforeRunning(answer!.body);
    expect(statements).toBe(0);
  });

  it('answers one level of it, a page of members at a time', async () => {
    const one = await server.data(`{ soul(id: "${soulId}") { themes { memberCount members { id } } } }`, undefined, reader);
    expect(one.soul.themes).toEqual([{ memberCount: 150, members: expect.any(Array) }]);
    expect(one.soul.themes[0].members).toHaveLength(100);
  });
});

describe('a thousand souls', () => {
  const start = Date.UTC(2026, 0, 1) + 400 * DAY_MS;
  const dir = mkdtempSync(join(tmpdir(), 'souls-price-list-'));
  let server: LiveServer;
  let shards = 0;
  beforeAll(async () => {
    const seeding = await startServer({ start, path: join(dir, 'roster.db') });
    shards = (await seedRoster(seeding.app.db, { souls: 1000 })).shardCount;
    await seeding.stop();
    // Another server over the same file, as after a restart: it holds no partition, every soul is clustered afresh.
    server = await startServer({ start, path: join(dir, 'roster.db') });
  }, 120_000);
  afterAll(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answer the documented dashboard, with their evidence clusters and suggested actions, in one request under the default limits, the first after a restart', { timeout: 300_000 }, async () => {
    const { status, body } = await server.request(DASHBOARD);
    expect(status).toBe(200);
    expect(body.errors).toBeUndefined();
    const souls = body.data.souls;
    expect(souls).toHaveLength(1000);
    expect(new Set(souls.map((s: { id: string }) => s.id)).size).toBe(1000);
    for (const soul of souls) {
      expect(soul.evidence.clusters.length).toBeGreaterThan(0);
      expect(soul.evidence.clusters.length).toBeLessThanOrEqual(Math.min(20, soul.evidence.clusterCount));
      expect(soul.evidence.clusters[0]).toEqual({ weight: expect.any(Number), memberCount: expect.any(Number), representative: { content: expect.any(String) }, alignment: { kind: expect.any(String) } });
    }
    expect(souls.some((s: any) => s.crystallization.ready)).toBe(true);
    expect(souls.some((s: any) => s.evidence.suggestedActions.some((a: { kind: string }) => a.kind === 'READY_FOR_REFINEMENT'))).toBe(true);
  });

  it('are too many shards for thirty aliased searches (issue 32, item 6): refused before any search runs', async () => {
    expect(shards).toBeGreaterThan(30_000);
    const thirty = `{ ${Array.from({ length: 30 }, (_, i) => `a${i}: searchShards(query: "ledger") { score shard { id } }`).join(' ')} }`;
    let answer: { status: number; body: any } | undefined;
    // Reading how many shard rows there are is the one statement pricing it needs.
    const statements = await statementsDuring(server, async () => {
      answer = await server.request(thirty);
    });
    expectRefusedBeforeRunning(answer!.body);
    expect(statements).toBe(1);
    const one = await server.request('{ searchShards(query: "ledger") { score } }');
    expect(one.body.errors).toBeUndefined();
  });

  it('are too many for a hundred shard_search, or a hundred roster reads, in one MCP batch: refused whole before anything runs', async () => {
    for (const [name, args] of [['shard_search', { query: 'ledger' }], ['soul_read', {}]] as const) {
      const batch = Array.from({ length: 100 }, (_, i) => toolCall(i + 1, name, args));
      let answer: { status: number; json: any } | undefined;
      const statements = await statementsDuring(server, async () => {
        answer = await mcp(server, batch);
      });
      expect(answer!.status, name).toBe(400);
      expect(answer!.json).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600, data: { limit: MAX_COST, setting: 'maxCost' } } });
      expect(answer!.json.error.data.cost).toBeGreaterThan(MAX_COST);
      expect(answer!.json.error.message).toContain(`the dearest ${name} at`);
      // What pricing reads: the shard rows for the searches, the awake souls for the roster.
      expect(statements, name).toBe(1);
    }
    const few = await mcp(server, [toolCall(1, 'shard_search', { query: 'ledger' }), toolCall(2, 'soul_read', {})]);
    expect(few.status).toBe(200);
    expect(few.json.map((a: { result: { isError?: boolean } }) => a.result.isError ?? false)).toEqual([false, false]);
  });
});
