// The transports: stdio through a child process (`souls mcp`), and Streamable HTTP at /mcp on the API's own port
// behind the same bearer tokens, Origin policy and body limit; resource updates on both.
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { closeSoulsDb, listTraits, manualClock, openSoulsDb } from '../src/engine/index.ts';
import { seedDemo } from '../scripts/demo.ts';
import { cleanEnv } from './support/cli.ts';
import { call, connect, demoDb, DEMO_NOW } from './support/mcp.ts';
import { serverPerTest } from './support/server.ts';

const CLI = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
let dir: string;
let dbFile: string;
const clients: Client[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'souls-mcp-'));
  dbFile = join(dir, 'souls.db');
  const clock = manualClock(DEMO_NOW);
  const db = openSoulsDb({ path: dbFile, clock });
  await seedDemo(db, clock, { now: DEMO_NOW });
  closeSoulsDb(db);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

async function stdioClient(args: string[] = []) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--db', dbFile, ...args], env: cleanEnv() as Record<string, string>, stderr: 'pipe' });
  const client = new Client({ name: 'stdio-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

function updates(client: Client): string[] {
  const seen: string[] = [];
  client.setNotificationHandler('notifications/resources/updated', (notification) => {
    seen.push(notification.params.uri);
  });
  return seen;
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  if (!check()) throw new Error(`never happened: ${what}`);
}

describe('stdio: souls mcp --db FILE', { timeout: 30_000 }, () => {
  it('serves every tool, the resources and the skill prompts to a client that starts it', async () => {
    const client = await stdioClient();
    expect((await client.listTools()).tools).toHaveLength(10);
    const roster = await call(client, 'soul_read', {});
    expect(roster.data.souls.map((s: { name: string }) => s.name)).toContain('Mira');
    const mira = roster.data.souls.find((s: { name: string }) => s.name === 'Mira').id;
    const resource = await client.readResource({ uri: `souls://${mira}/soul.md` });
    expect((resource.contents[0] as { text: string }).text).toMatch(/^# Mira\n/);
    const evidence = await client.readResource({ uri: `souls://${mira}/evidence.md` });
    expect((evidence.contents[0] as { text: string }).text).toMatch(/^# Evidence: Mira/);
    const listed = await client.listResources();
    expect(listed.resources.map((r) => r.uri)).toContain(`souls://${mira}/soul.md`);
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['judge-level-up', 'maintenance-pass', 'plan-level-up', 'propose-traits']);
  });

  it('tells a subscribed client when the soul changes, and only for what it subscribed to', async () => {
    const client = await stdioClient();
    const seen = updates(client);
    const soulId = (await call(client, 'soul_read', { name: 'Sela' })).data.soul.id;
    const other = (await call(client, 'soul_read', { name: 'Mira' })).data.soul.id;
    await client.subscribeResource({ uri: `souls://${soulId}/soul.md` });
    await call(client, 'soul_attune', { soulId: other });
    const added = await call(client, 'trait_change', { action: 'add', soulId, principle: 'Keep watch from the north tower.', provenance: 'Transport test.' });
    expect(added.isError).toBe(false);
    await until(() => seen.includes(`souls://${soulId}/soul.md`), 'the resource update');
    expect(seen.every((uri) => uri === `souls://${soulId}/soul.md`)).toBe(true);
  });

  it('limits a session to --scopes', async () => {
    const client = await stdioClient(['--scopes', 'read']);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['soul_read', 'shard_search', 'soul_evidence']);
    const refused = await call(client, 'levelup_revert', { soulId: 1 });
    expect(refused.text).toContain('needs the "refine" scope');
  });
});

describe('in process (the SDK in-memory transport)', () => {
  it('tells a client subscribed to evidence.md of new shards, once per batch, and nothing after it unsubscribes', async () => {
    const { db, summary } = await demoDb();
    const session = await connect(db);
    try {
      const seen = updates(session.client);
      const uri = `souls://${summary.souls.Sela}/evidence.md`;
      await session.client.subscribeResource({ uri });
      const shards = Array.from({ length: 50 }, (_, i) => ({ content: `Sela watched the road, night ${i}.`, source: 'log', soulIds: [summary.souls.Sela, summary.souls.Mira] }));
      expect((await call(session.client, 'shard_observe', { shards })).isError).toBe(false);
      await until(() => seen.length > 0, 'the evidence update');
      await call(session.client, 'soul_read', {});
      expect(seen).toEqual([uri]);
      await session.client.unsubscribeResource({ uri });
      await call(session.client, 'shard_observe', { shards: shards.slice(0, 1) });
      await call(session.client, 'soul_read', {});
      expect(seen).toEqual([uri]);
    } finally {
      await session.close();
    }
  });
});

describe('Streamable HTTP at /mcp', { timeout: 30_000 }, () => {
  const start = serverPerTest(afterEach);
  const tokens = [
    { name: 'reader', token: 'reader-token-0123456789', scopes: ['read' as const] },
    { name: 'refiner', token: 'refiner-token-0123456789', scopes: ['read' as const, 'refine' as const] },
    { name: 'observer', token: 'observer-token-0123456789', scopes: ['observe' as const] },
  ];

  async function httpClient(url: string, token: string | null, modern = false) {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    const transport = new StreamableHTTPClientTransport(new URL(url.replace(/graphql$/, 'mcp')), { requestInit: { headers } });
    const client = new Client({ name: 'http-test', version: '1.0.0' }, modern ? { versionNegotiation: { mode: 'auto' } } : {});
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  async function seeded() {
    const server = await start({ start: DEMO_NOW, app: { tokens } });
    await seedDemo(server.app.db, server.clock, { now: DEMO_NOW });
    return server;
  }

  it('lists for each token only the tools its scopes allow, and refuses the others by scope', async () => {
    const server = await seeded();
    const reader = await httpClient(server.url, 'reader-token-0123456789');
    expect((await reader.listTools()).tools.map((t) => t.name)).toEqual(['soul_read', 'shard_search', 'soul_evidence']);
    const mira = (await call(reader, 'soul_read', { name: 'Mira' })).data.soul;
    expect(mira.name).toBe('Mira');
    const [trait] = await listTraits(server.app.db, mira.id, { status: 'active' });
    const refused = await call(reader, 'trait_change', { action: 'revert', traitId: trait.id });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('the tool trait_change needs the "refine" scope, and this caller (reader) has read');

    const refiner = await httpClient(server.url, 'refiner-token-0123456789');
    expect((await refiner.listTools()).tools.map((t) => t.name)).toEqual(['soul_read', 'shard_search', 'soul_evidence', 'evidence_judge', 'trait_change', 'levelup', 'levelup_revert', 'soul_attune']);
    const reverted = await call(refiner, 'trait_change', { action: 'revert', traitId: trait.id });
    expect(reverted.data.trait.status).toBe('reverted');

    const observer = await httpClient(server.url, 'observer-token-0123456789');
    expect((await observer.listTools()).tools.map((t) => t.name)).toEqual(['shard_observe']);
    expect((await observer.listResources()).resources).toEqual([]);
    const dropped = await call(observer, 'shard_observe', { shards: [{ content: 'Seen over HTTP.', source: 'http', soulIds: [mira.id] }] });
    expect(dropped.data.shardIds).toHaveLength(1);
  });

  it('answers 401 without a valid token, and the SDK client fails to connect', async () => {
    const server = await seeded();
    const mcpUrl = server.url.replace(/graphql$/, 'mcp');
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const bare = await fetch(mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe('Bearer realm="souls"');
    const wrong = await fetch(mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer not-a-known-token-123' }, body });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toContain('invalid_token');
    await expect(httpClient(server.url, null)).rejects.toThrow();
  });

  it('applies the Origin policy and the body limit to /mcp as to /graphql', async () => {
    const server = await start({ start: DEMO_NOW, app: { tokens, limits: { maxBodyBytes: 2048 } } });
    const mcpUrl = server.url.replace(/graphql$/, 'mcp');
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer reader-token-0123456789' };
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    const foreign = await fetch(mcpUrl, { method: 'POST', headers: { ...headers, origin: 'https://evil.example' }, body });
    expect(foreign.status).toBe(403);
    expect((await foreign.json()).errors[0].extensions.code).toBe('FORBIDDEN_ORIGIN');
    const big = await fetch(mcpUrl, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { pad: 'x'.repeat(4096) } }) });
    expect(big.status).toBe(413);
  });

  it('serves a server without tokens on loopback only, with every scope', async () => {
    const server = await start({ start: DEMO_NOW });
    await seedDemo(server.app.db, server.clock, { now: DEMO_NOW });
    const local = await httpClient(server.url, null);
    expect((await local.listTools()).tools).toHaveLength(10);
    // fetch will not send a Host of its own choosing; node:http will, as a rebinding page's browser does.
    const { port } = new URL(server.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': 2, host: `attacker.example:${port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end('{}');
    });
    expect(status).toBe(403);
  });

  it('refuses a 2025-era resources/subscribe over stateless HTTP instead of promising updates that never come', async () => {
    const server = await seeded();
    const client = await httpClient(server.url, 'reader-token-0123456789');
    await expect(client.subscribeResource({ uri: 'souls://1/soul.md' })).rejects.toThrow('listen for them with subscriptions/listen');
  });

  it('tells a 2026-era client listening on a soul when a GraphQL mutation changes it', async () => {
    const server = await seeded();
    const client = await httpClient(server.url, 'reader-token-0123456789', true);
    const seen = updates(client);
    const mira = (await call(client, 'soul_read', { name: 'Mira' })).data.soul.id;
    const subscription = await client.listen({ resourceSubscriptions: [`souls://${mira}/soul.md`] });
    expect(subscription.honoredFilter.resourceSubscriptions).toEqual([`souls://${mira}/soul.md`]);
    const result = await server.request('mutation($id: ID!) { stampAttuned(soulId: $id) { __typename } }', { id: String(mira) }, { authorization: 'Bearer refiner-token-0123456789' });
    expect(result.body.errors).toBeUndefined();
    await until(() => seen.includes(`souls://${mira}/soul.md`), 'the resource update over HTTP');
    await subscription.close();
  });
});
