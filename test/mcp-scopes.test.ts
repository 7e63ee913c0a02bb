// The GraphQL read rule over MCP, and what one token may ask of /mcp: tokens of each scope over Streamable HTTP, and
// the in-memory transport where no server is needed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { closeSoulsDb, listShards, listTraits, manualClock, openSoulsDb } from '../src/engine/index.ts';
import { seedDemo } from '../scripts/demo.ts';
import { cleanEnv } from './support/cli.ts';
import { call, callerWith, connect, demoDb, DEMO_NOW } from './support/mcp.ts';
import { serverPerTest } from './support/server.ts';

const DEMO_NAMES = ['Mira', 'Brannoc', 'Relay', 'Sela', 'Oriel'];
const tokens = [
  { name: 'reader', token: 'reader-token-0123456789', scopes: ['read' as const] },
  { name: 'refine-only', token: 'refine-token-0123456789', scopes: ['refine' as const] },
  { name: 'observe-only', token: 'observe-token-0123456789', scopes: ['observe' as const] },
  { name: 'admin-only', token: 'admin-token-01234567890', scopes: ['admin' as const] },
];
const bearer = (name: string) => `Bearer ${tokens.find((t) => t.name === name)!.token}`;

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => undefined)));
});
const start = serverPerTest(afterEach);

async function seeded(limits: Record<string, number> = {}) {
  const server = await start({ start: DEMO_NOW, app: { tokens, limits } });
  const summary = await seedDemo(server.app.db, server.clock, { now: DEMO_NOW });
  return { server, ids: summary.souls as Record<string, number>, mcpUrl: server.url.replace(/graphql$/, 'mcp') };
}

async function httpClient(mcpUrl: string, token: string, modern = false) {
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { authorization: bearer(token) } } });
  const client = new Client({ name: 'scope-test', version: '1.0.0' }, modern ? { versionNegotiation: { mode: 'auto' } } : {});
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** A raw JSON-RPC POST (2025 era, stateless): the status and the parsed answer (the SSE frame's data when streamed). */
async function post(mcpUrl: string, token: string, body: unknown) {
  const response = await fetch(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: bearer(token), 'mcp-protocol-version': '2025-11-25' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  if (text.startsWith('{') || text.startsWith('[')) return { status: response.status, json: JSON.parse(text) };
  const frames = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]));
  return { status: response.status, json: frames.length === 1 ? frames[0] : frames };
}

const mentionsAName = (text: string) => DEMO_NAMES.filter((name) => text.includes(name));

describe('the read rule on tool results and errors', { timeout: 30_000 }, () => {
  it('gives a refine-only token no rendered block from a trait_change or levelup dry run', async () => {
    const { mcpUrl, ids } = await seeded();
    const refiner = await httpClient(mcpUrl, 'refine-only');
    const dry = await call(refiner, 'trait_change', { action: 'add', soulId: ids.Mira, principle: 'Count twice.', provenance: 'Scope test.', dryRun: true });
    expect(dry.isError).toBe(true);
    expect(dry.text).toContain('dryRun: shows the names and texts a change would touch, which needs the "read" scope');
    expect(mentionsAName(dry.text)).toEqual([]);
    const plan = await call(refiner, 'levelup', { soulId: ids.Mira, newEssence: 'A new essence.', dryRun: true });
    expect(plan.isError).toBe(true);
    expect(mentionsAName(plan.text)).toEqual([]);
  });

  it('names only the ids of the traits a refine-only token left out of a levelup plan, never their principles', async () => {
    const { server, mcpUrl, ids } = await seeded();
    const active = await listTraits(server.app.db, ids.Mira, { status: 'active' });
    const refiner = await httpClient(mcpUrl, 'refine-only');
    const refused = await call(refiner, 'levelup', { soulId: ids.Mira, newEssence: 'A new essence.', carriedTraitIds: [active[0].id, 999_999] });
    expect(refused.isError).toBe(true);
    for (const trait of active.slice(1)) expect(refused.text).toContain(`#${trait.id}`);
    for (const trait of active) expect(refused.text).not.toContain(trait.principle.slice(0, 30));
    expect(refused.text).not.toContain('its active traits are');
    // A reader-refiner still gets the principles, to fix the plan with.
    const both = await connect(server.app.db, { caller: callerWith('read', 'refine') });
    try {
      const full = await call(both.client, 'levelup', { soulId: ids.Mira, newEssence: 'A new essence.', carriedTraitIds: [active[0].id] });
      expect(full.text).toContain(active[1].principle.slice(0, 30));
    } finally {
      await both.close();
    }
  });

  it('answers a refine-only token ids only: no soul name, no principle, no status', async () => {
    const { mcpUrl, ids } = await seeded();
    const refiner = await httpClient(mcpUrl, 'refine-only');
    const added = await call(refiner, 'trait_change', { action: 'add', soulId: ids.Sela, principle: 'Walk the northern ridge at dawn.', provenance: 'Scope test.' });
    expect(added.isError).toBe(false);
    expect(Object.keys(added.data.trait)).toEqual(['id']);
    expect(added.data.soul).toEqual({ id: added.data.soul.id });
    expect(String(added.data.soul.id)).toBe(String(ids.Sela));
    expect(mentionsAName(added.text)).toEqual([]);
    expect(added.text).not.toContain('active');
    const attuned = await call(refiner, 'soul_attune', { soulId: ids.Mira });
    expect(Object.keys(attuned.data)).toEqual(['attuned']);
    expect(Object.keys(attuned.data.attuned)).toEqual(['id']);
    const rolledBack = await call(refiner, 'levelup_revert', { soulId: ids.Mira });
    expect(rolledBack.isError).toBe(false);
    expect(Object.keys(rolledBack.data.soul)).toEqual(['id']);
    expect(mentionsAName(rolledBack.text)).toEqual([]);
    // The output schema listed for this token says the same, so clients that check it accept the answers.
    const listed = (await refiner.listTools()).tools.find((t) => t.name === 'trait_change')!;
    expect(Object.keys((listed.outputSchema!.properties as Record<string, { items: { properties: object } }>).readySouls.items.properties)).toEqual(['id']);
    expect(JSON.stringify(listed.outputSchema)).not.toContain('"name"');
  });

  it('gives observe-only and admin-only tokens soul ids, never soul names', async () => {
    const { mcpUrl, ids } = await seeded();
    const observer = await httpClient(mcpUrl, 'observe-only');
    const dropped = await call(observer, 'shard_observe', {
      shards: [
        { content: 'Sela counted the arrows twice before the report.', source: 'chat', soulIds: [ids.Sela] },
        { content: 'Sela refused to pass on a rumour about the bridge.', source: 'review', soulIds: [ids.Sela] },
      ],
    });
    expect(dropped.data.readySouls.map((soul: object) => Object.keys(soul))).toEqual([['id']]);
    expect(String(dropped.data.readySouls[0].id)).toBe(String(ids.Sela));
    expect(mentionsAName(dropped.text)).toEqual([]);
    const admin = await httpClient(mcpUrl, 'admin-only');
    const updated = await call(admin, 'soul_manage', { action: 'update', soulId: ids.Mira, description: 'Keeper of the stores.' });
    expect(updated.isError).toBe(false);
    expect(Object.keys(updated.data)).toEqual(['soul']);
    expect(Object.keys(updated.data.soul)).toEqual(['id']);
    expect(mentionsAName(updated.text)).toEqual([]);
  });
});

describe('listen streams', { timeout: 30_000 }, () => {
  it('follows no soul for a token without read', async () => {
    const { mcpUrl, ids } = await seeded();
    for (const token of ['observe-only', 'refine-only', 'admin-only']) {
      const client = await httpClient(mcpUrl, token, true);
      const subscription = await client.listen({ resourceSubscriptions: [`souls://${ids.Mira}/soul.md`] });
      expect(subscription.honoredFilter.resourceSubscriptions).toBeUndefined();
      await subscription.close();
    }
    const reader = await httpClient(mcpUrl, 'reader', true);
    const heard = await reader.listen({ resourceSubscriptions: [`souls://${ids.Mira}/soul.md`] });
    expect(heard.honoredFilter.resourceSubscriptions).toEqual([`souls://${ids.Mira}/soul.md`]);
    await heard.close();
  });

  it('caps the streams one token holds open (maxListenStreamsPerToken), not other tokens', async () => {
    const { mcpUrl, ids } = await seeded({ maxListenStreamsPerToken: 2 });
    const uri = `souls://${ids.Mira}/soul.md`;
    const reader = await httpClient(mcpUrl, 'reader', true);
    const first = await reader.listen({ resourceSubscriptions: [uri] });
    const second = await reader.listen({ resourceSubscriptions: [uri] });
    const refused = await reader.listen({ resourceSubscriptions: [uri] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ProtocolError);
    expect((refused as ProtocolError).message).toContain('the token "reader" has 2 open subscriptions/listen streams, the most one token may hold (maxListenStreamsPerToken)');
    const other = await httpClient(mcpUrl, 'observe-only', true);
    await (await other.listen({ resourceSubscriptions: [uri] })).close();
    await first.close();
    let again: Awaited<ReturnType<Client['listen']>> | null = null;
    for (let i = 0; i < 100 && !again; i++) {
      again = await reader.listen({ resourceSubscriptions: [uri] }).catch(async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return null;
      });
    }
    expect(again).not.toBeNull();
    await again!.close();
    await second.close();
  });

  it('bounds the URI list of a stream (maxListenUris) to resources of this server', async () => {
    const { mcpUrl } = await seeded({ maxListenUris: 3 });
    const reader = await httpClient(mcpUrl, 'reader', true);
    const many = Array.from({ length: 4 }, (_, i) => `souls://${i + 1}/soul.md`);
    await expect(reader.listen({ resourceSubscriptions: many })).rejects.toThrow('lists 4 URIs; a stream may follow at most 3 (maxListenUris)');
    await expect(reader.listen({ resourceSubscriptions: ['souls://1/soul.md', `https://example.com/${'x'.repeat(5000)}`] })).rejects.toThrow(
      'notifications.resourceSubscriptions[1]',
    );
  });
});

describe('stdio: souls mcp --scopes without read', { timeout: 60_000 }, () => {
  it('lets the session follow no soul, in either protocol era', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'souls-mcp-scopes-'));
    try {
      const dbFile = join(dir, 'souls.db');
      const clock = manualClock(DEMO_NOW);
      const db = openSoulsDb({ path: dbFile, clock });
      await seedDemo(db, clock, { now: DEMO_NOW });
      closeSoulsDb(db);
      const args = [fileURLToPath(new URL('../src/cli/index.ts', import.meta.url)), 'mcp', '--db', dbFile, '--scopes', 'observe,refine,admin'];
      const stdio = async (modern: boolean) => {
        const client = new Client({ name: 'stdio-scopes', version: '1.0.0' }, modern ? { versionNegotiation: { mode: 'auto' } } : {});
        await client.connect(new StdioClientTransport({ command: process.execPath, args, env: cleanEnv() as Record<string, string>, stderr: 'pipe' }));
        clients.push(client);
        return client;
      };
      const legacy = await stdio(false);
      await expect(legacy.subscribeResource({ uri: 'souls://1/soul.md' })).rejects.toThrow();
      const modern = await stdio(true);
      const subscription = await modern.listen({ resourceSubscriptions: ['souls://1/soul.md'] });
      expect(subscription.honoredFilter.resourceSubscriptions).toBeUndefined();
      await subscription.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('what one /mcp request may cost', { timeout: 30_000 }, () => {
  const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

  it('sums a JSON-RPC batch against maxCost as /graphql does, and refuses it whole before anything runs', async () => {
    const { server, mcpUrl, ids } = await seeded({ maxCost: 2000 });
    const before = (await listShards(server.app.db, { first: 1 })).totalCount;
    const evidence = (n: number) => Array.from({ length: n }, (_, i) => toolCall(i + 2, 'soul_evidence', { soulId: ids.Mira }));
    const drop = toolCall(1, 'shard_observe', { shards: [{ content: 'Written by a refused batch.', source: 'batch', soulIds: [ids.Mira] }] });
    // Mira's report reads her pending shards (150 + 5 a shard, the call 10): two fit 2,000, eight do not.
    const refused = await post(mcpUrl, 'reader', [drop, ...evidence(8)]);
    expect(refused.status).toBe(400);
    expect(refused.json.id).toBeNull();
    expect(refused.json.error.code).toBe(-32600);
    expect(refused.json.error.message).toContain('over the cost limit of 2000 (maxCost, as on /graphql)');
    expect(refused.json.error.data).toEqual({ cost: expect.any(Number), limit: 2000, setting: 'maxCost' });
    expect(refused.json.error.data.cost).toBeGreaterThan(2000);
    expect((await listShards(server.app.db, { first: 1 })).totalCount).toBe(before);
    const fits = await post(mcpUrl, 'reader', evidence(2));
    expect(fits.status).toBe(200);
    expect(fits.json.map((answer: { result: { isError?: boolean } }) => answer.result.isError ?? false)).toEqual(Array(2).fill(false));
  });

  it('refuses an object with more keys than maxListItems before the SDK validates it', async () => {
    const { mcpUrl, ids } = await seeded();
    const wide = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]));
    const refused = await post(mcpUrl, 'reader', toolCall(1, 'soul_read', { soulId: ids.Mira, ...wide }));
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ id: 1, error: { code: -32600, data: { limit: 1000, setting: 'maxListItems' } } });
    expect(refused.json.error.message).toContain('an object in the body has 5001 keys; at most 1000 are allowed (maxListItems)');
  });

  it('refuses a body nested deeper than maxNesting before anything parses it again', async () => {
    const { mcpUrl } = await seeded();
    const deep = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"soul_read","arguments":{"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}}}`;
    const refused = await post(mcpUrl, 'reader', deep);
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ id: 1, error: { code: -32600, data: { limit: 100, setting: 'maxNesting' } } });
  });
});

describe('errors: not found, and nothing unexpected shown', { timeout: 30_000 }, () => {
  it('answers resource-not-found for a soul that does not exist, on both templates, over HTTP', async () => {
    const { mcpUrl } = await seeded();
    const reader = await httpClient(mcpUrl, 'reader');
    for (const uri of ['souls://99/soul.md', 'souls://99/evidence.md', 'souls://abc/soul.md']) {
      const error = (await reader.readResource({ uri }).catch((e: unknown) => e)) as ProtocolError;
      expect(error).toBeInstanceOf(ProtocolError);
      expect(error.data).toEqual({ uri });
      expect(error.message).toContain(`there is no resource ${uri}`);
    }
  });

  it('masks an unexpected failure of a resource or a tool, and logs it for the operator', async () => {
    const { db, summary } = await demoDb();
    const session = await connect(db);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      closeSoulsDb(db);
      for (const uri of [`souls://${summary.souls.Mira}/evidence.md`, `souls://${summary.souls.Mira}/soul.md`]) {
        const error = (await session.client.readResource({ uri }).catch((e: unknown) => e)) as ProtocolError;
        expect(error.code).toBe(-32603);
        expect(error.message).toContain('internal error');
        expect(error.message).not.toContain('statement has been finalized');
      }
      const tool = await call(session.client, 'soul_read', { soulId: summary.souls.Mira });
      expect(tool.isError).toBe(true);
      expect(tool.text).toContain('unexpected error');
      expect(tool.text).not.toContain('statement has been finalized');
      expect(logged).toHaveBeenCalledTimes(3);
      expect(String(logged.mock.calls[0][0])).toContain('souls mcp: unexpected error');
    } finally {
      logged.mockRestore();
      await session.close().catch(() => undefined);
    }
  });
});
