import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Worker } from 'node:worker_threads';
import WebSocket from 'ws';
import { openSoulsDb, openSqliteStore } from '../src/engine/index.ts';
import { buildApp } from '../src/server/app.ts';
import { loadTokens } from '../src/server/auth.ts';
import { metricSample as sample, serverPerTest } from './support/server.ts';

const start = serverPerTest(afterEach);
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-metrics-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const metricsUrl = (url: string) => url.replace(/\/graphql$/, '/metrics');

async function scrape(url: string, headers: Record<string, string> = {}): Promise<string> {
  const response = await fetch(metricsUrl(url), { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}


async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the condition never held');
}

describe('/metrics', () => {
  it('shows process memory, event-loop lag and zeroed gauges in Prometheus text', async () => {
    const server = await start();
    const text = await scrape(server.url);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \S+$/m);
    expect(text).toMatch(/^# TYPE souls_http_request_duration_seconds histogram$/m);
    expect(text).toContain('souls_subscriptions_active{transport="websocket"} 0');
    expect(text).toContain('souls_subscriptions_active{transport="sse"} 0');
    expect(text).toContain('souls_websocket_connections_active 0');
  });

  it('counts operations by name and outcome, their latency and the events published: scrape, act, scrape', async () => {
    const server = await start();
    const before = await scrape(server.url);
    const ok = { operation: 'MakeMira', type: 'mutation', transport: 'http', outcome: 'ok' };
    expect(sample(before, 'souls_graphql_operations_total', ok)).toBe(0);
    const made = await server.request('mutation MakeMira { createSoul(input: { name: "Mira", essence: "Calm." }) { __typename } }');
    expect(made.status).toBe(200);
    const read = await server.request('query Roster { souls { id } }');
    expect(read.status).toBe(200);
    const invalid = await server.request('query Broken { noSuchField }');
    expect(invalid.status).toBe(400);
    const after = await scrape(server.url);
    expect(sample(after, 'souls_graphql_operations_total', ok)).toBe(1);
    expect(sample(after, 'souls_graphql_operations_total', { operation: 'Roster', type: 'query', transport: 'http', outcome: 'ok' })).toBe(1);
    expect(sample(after, 'souls_graphql_operations_total', { operation: 'Broken', type: 'query', transport: 'http', outcome: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(sample(after, 'souls_graphql_operation_duration_seconds_count', { operation: 'MakeMira', type: 'mutation', transport: 'http' })).toBe(1);
    expect(sample(after, 'souls_events_published_total', { topic: 'soulChanged' })).toBeGreaterThan(sample(before, 'souls_events_published_total', { topic: 'soulChanged' }));
    expect(sample(after, 'souls_http_requests_total', { route: '/graphql', method: 'POST', status: '200' })).toBe(2);
    // The first scrape is counted by the time of the second.
    expect(sample(after, 'souls_http_requests_total', { route: '/metrics', method: 'GET', status: '200' })).toBe(1);
    expect(sample(after, 'souls_http_request_duration_seconds_count', { route: '/graphql' })).toBe(3);
  });

  it('tracks live WebSocket connections and subscriptions, and their end', async () => {
    const server = await start();
    const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws');
    await new Promise((resolve) => socket.once('open', resolve));
    const messages: any[] = [];
    socket.on('message', (data) => messages.push(JSON.parse(String(data))));
    socket.send(JSON.stringify({ type: 'connection_init' }));
    await until(async () => messages.some((m) => m.type === 'connection_ack'));
    socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription Changes { soulChanged { kind } }' } }));
    await until(async () => sample(await scrape(server.url), 'souls_subscriptions_active', { transport: 'websocket' }) === 1);
    expect(sample(await scrape(server.url), 'souls_websocket_connections_active')).toBe(1);
    await server.request('mutation { createSoul(input: { name: "Ada", essence: "Sharp." }) { __typename } }');
    await until(async () => messages.some((m) => m.type === 'next' && m.payload.data.soulChanged.kind));
    socket.send(JSON.stringify({ id: '1', type: 'complete' }));
    await until(async () => sample(await scrape(server.url), 'souls_subscriptions_active', { transport: 'websocket' }) === 0);
    socket.close();
    await until(async () => sample(await scrape(server.url), 'souls_websocket_connections_active') === 0);
  });

  it('tracks live SSE subscriptions until the client goes away', async () => {
    const server = await start();
    const abort = new AbortController();
    const response = await fetch(`${server.url}?query=${encodeURIComponent('subscription { soulChanged { kind } }')}`, { headers: { accept: 'text/event-stream', 'x-graphql-yoga-csrf': '1' }, signal: abort.signal });
    expect(response.status).toBe(200);
    await until(async () => sample(await scrape(server.url), 'souls_subscriptions_active', { transport: 'sse' }) === 1);
    abort.abort();
    await until(async () => sample(await scrape(server.url), 'souls_subscriptions_active', { transport: 'sse' }) === 0);
  });

  it('with tokens: 401 without a valid one, 403 without the admin scope, 200 with it', async () => {
    const file = join(dir, 'tokens.json');
    writeFileSync(file, JSON.stringify([
      { name: 'reader', token: 'tok-reader-0123456789abcdef', scopes: ['read'] },
      { name: 'root', token: 'tok-root-0123456789abcdef00', scopes: ['admin'] },
    ]), { mode: 0o600 });
    const server = await start({ app: { tokens: loadTokens(file) } });
    const none = await fetch(metricsUrl(server.url));
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
    expect((await none.json()).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const wrong = await fetch(metricsUrl(server.url), { headers: { authorization: 'Bearer tok-unknown-0123456789' } });
    expect(wrong.status).toBe(401);
    const reader = await fetch(metricsUrl(server.url), { headers: { authorization: 'Bearer tok-reader-0123456789abcdef' } });
    expect(reader.status).toBe(403);
    const body = await reader.json();
    expect(body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect(JSON.stringify(body)).not.toContain('souls_');
    expect(await scrape(server.url, { authorization: 'Bearer tok-root-0123456789abcdef00' })).toContain('souls_http_requests_total');
  });

  it('keeps the Host policy of the API and answers only GET and HEAD', async () => {
    const server = await start();
    const { port } = new URL(server.url);
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: '/metrics', headers: { host: 'evil.example' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      }).on('error', reject).end();
    });
    expect(status).toBe(403);
    const post = await fetch(metricsUrl(server.url), { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect(post.status).toBe(405);
    const head = await fetch(metricsUrl(server.url), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });
});

/** A graphql-ws connection past connection_ack; `messages` holds what the server sent. */
async function wsConnect(url: string) {
  const socket = new WebSocket(url, 'graphql-transport-ws');
  await new Promise((resolve) => socket.once('open', resolve));
  const messages: any[] = [];
  socket.on('message', (data) => messages.push(JSON.parse(String(data))));
  socket.send(JSON.stringify({ type: 'connection_init' }));
  await until(async () => messages.some((m) => m.type === 'connection_ack'));
  return {
    socket,
    messages,
    subscribe: (id: string, query: string) => socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query } })),
    ended: (id: string) => until(async () => messages.some((m) => m.id === id && (m.type === 'complete' || m.type === 'error'))),
  };
}

const DAY_MS = 86_400_000;

describe('/metrics after real work', () => {
  it('counts operations on a WebSocket by name, type and outcome, and a subscription when it ends', async () => {
    const server = await start();
    const ws = await wsConnect(server.wsUrl);
    ws.subscribe('1', 'mutation MakeAda { createSoul(input: { name: "Ada", essence: "Sharp." }) { __typename } }');
    ws.subscribe('2', 'query Roster { souls { id } }');
    ws.subscribe('3', 'query Broken { noSuchField }');
    ws.subscribe('4', 'query Unclosed { souls { id }');
    for (const id of ['1', '2', '3', '4']) await ws.ended(id);
    ws.subscribe('5', 'subscription Changes { soulChanged { kind } }');
    await until(async () => sample(await scrape(server.url), 'souls_subscriptions_active', { transport: 'websocket' }) === 1);
    const changes = { operation: 'Changes', type: 'subscription', transport: 'websocket', outcome: 'ok' };
    expect(sample(await scrape(server.url), 'souls_graphql_operations_total', changes)).toBe(0);
    ws.socket.send(JSON.stringify({ id: '5', type: 'complete' }));
    await until(async () => sample(await scrape(server.url), 'souls_graphql_operations_total', changes) === 1);

    const text = await scrape(server.url);
    expect(sample(text, 'souls_graphql_operations_total', { operation: 'MakeAda', type: 'mutation', transport: 'websocket', outcome: 'ok' })).toBe(1);
    expect(sample(text, 'souls_graphql_operations_total', { operation: 'Roster', type: 'query', transport: 'websocket', outcome: 'ok' })).toBe(1);
    expect(sample(text, 'souls_graphql_operations_total', { operation: 'Broken', type: 'query', transport: 'websocket', outcome: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(sample(text, 'souls_graphql_operations_total', { operation: '(anonymous)', type: 'unknown', transport: 'websocket', outcome: 'GRAPHQL_PARSE_FAILED' })).toBe(1);
    expect(sample(text, 'souls_graphql_operation_duration_seconds_count', { operation: 'MakeAda', type: 'mutation', transport: 'websocket' })).toBe(1);
    expect(sample(text, 'souls_graphql_operation_duration_seconds_count', { operation: 'Changes', type: 'subscription', transport: 'websocket' })).toBe(1);
    expect(sample(text, 'souls_graphql_operations_total', { operation: 'Roster', type: 'query', transport: 'http', outcome: 'ok' })).toBe(0);
    ws.socket.close();
  });

  it('counts each event a subscriber receives, by topic and transport', async () => {
    const server = await start();
    const ws = await wsConnect(server.wsUrl);
    ws.subscribe('a', 'subscription { soulChanged { kind } }');
    ws.subscribe('b', 'subscription { changes: soulChanged { kind } }');
    ws.subscribe('c', 'subscription { shardDropped { at } }');
    const abort = new AbortController();
    const sse = await fetch(`${server.url}?query=${encodeURIComponent('subscription { soulChanged { kind } }')}`, { headers: { accept: 'text/event-stream', 'x-graphql-yoga-csrf': '1' }, signal: abort.signal });
    expect(sse.status).toBe(200);
    await until(async () => {
      const text = await scrape(server.url);
      return sample(text, 'souls_subscriptions_active', { transport: 'websocket' }) === 3 && sample(text, 'souls_subscriptions_active', { transport: 'sse' }) === 1;
    });
    expect((await server.request('mutation { createSoul(input: { name: "Ada", essence: "Sharp." }) { __typename } }')).status).toBe(200);
    await until(async () => ws.messages.filter((m) => m.type === 'next').length === 2);
    await until(async () => sample(await scrape(server.url), 'souls_events_delivered_total', { topic: 'soulChanged', transport: 'sse' }) === 1);
    const text = await scrape(server.url);
    expect(sample(text, 'souls_events_published_total', { topic: 'soulChanged' })).toBe(1);
    // Two WebSocket subscribers (one under an alias), one SSE subscriber; nobody watched shardDropped fire.
    expect(sample(text, 'souls_events_delivered_total', { topic: 'soulChanged', transport: 'websocket' })).toBe(2);
    expect(sample(text, 'souls_events_delivered_total', { topic: 'shardDropped', transport: 'websocket' })).toBe(0);
    abort.abort();
    ws.socket.close();
  });

  it('counts the gate checks of writes by outcome and times clustering by mode and purpose', async () => {
    const server = await start();
    const gql = async (query: string, variables?: Record<string, unknown>) => {
      const { status, body } = await server.request(query, variables);
      expect(status).toBe(200);
      expect(body.errors).toBeUndefined();
      return body.data;
    };
    const soul = async (name: string) => (await gql(`mutation($name: String!) { createSoul(input: { name: $name, essence: "Watched." }) { ... on SoulPayload { soul { id } } } }`, { name })).createSoul.soul.id as string;
    const drop = async (soulId: string, content: string, source: string, daysAgo: number) =>
      (await gql(`mutation($input: DropShardInput!) { dropShard(input: $input) { ... on DropShardPayload { readySouls { id } } } }`, {
        input: { soulIds: [soulId], content, source, createdAt: new Date(server.clock.now() - daysAgo * DAY_MS).toISOString() },
      })).dropShard.readySouls.map((s: { id: string }) => s.id);
    const mira = await soul('Mira');
    const echo = await soul('Echo');
    const before = await scrape(server.url);
    for (const outcome of ['below_cheap_gate', 'already_ready', 'not_ready', 'crossed']) expect(sample(before, 'souls_gate_checks_total', { outcome })).toBe(0);

    expect(await drop(mira, 'Reviewed the pull request carefully before merging it', 'chat', 3)).toEqual([]);
    expect(await drop(mira, 'Cooked a spicy curry for the whole team on friday', 'journal', 2)).toEqual([]);
    expect(await drop(mira, 'Jogged five kilometres along the river at dawn', 'email', 1)).toEqual([mira]);
    expect(await drop(mira, 'Planted tomatoes and basil in the balcony garden', 'notes', 0)).toEqual([]);
    // Enough shards, sources and spread, but all one theme: one cluster, not ready.
    expect(await drop(echo, 'Wrote the unit tests before writing the code', 'chat', 3)).toEqual([]);
    expect(await drop(echo, 'Wrote the unit tests before writing the code again', 'journal', 2)).toEqual([]);
    expect(await drop(echo, 'Wrote the unit tests before writing the code once more', 'email', 1)).toEqual([]);

    const afterWrites = await scrape(server.url);
    expect(sample(afterWrites, 'souls_gate_checks_total', { outcome: 'below_cheap_gate' })).toBe(4);
    expect(sample(afterWrites, 'souls_gate_checks_total', { outcome: 'crossed' })).toBe(1);
    expect(sample(afterWrites, 'souls_gate_checks_total', { outcome: 'already_ready' })).toBe(1);
    expect(sample(afterWrites, 'souls_gate_checks_total', { outcome: 'not_ready' })).toBe(1);
    const gateClusterings = sample(afterWrites, 'souls_clustering_duration_seconds_count', { mode: 'trigram', purpose: 'soul' });
    // One per soul past the cheap gate (Mira's third write, Echo's third); Mira's fourth found her partition remembered.
    expect(gateClusterings).toBe(2);
    expect(sample(afterWrites, 'souls_clustering_duration_seconds_count', { mode: 'trigram', purpose: 'scoped_report' })).toBe(0);

    // Unscoped, the report updates Mira's remembered partition with the fourth shard (the gate had no need to); scoped to a query, it clusters the shards found.
    await gql(`query($id: ID!) { soul(id: $id) { evidence { shardCount clusters { __typename } } } }`, { id: mira });
    expect(sample(await scrape(server.url), 'souls_clustering_duration_seconds_count', { mode: 'trigram', purpose: 'soul' })).toBe(gateClusterings + 1);
    await gql(`query($id: ID!) { soul(id: $id) { evidence { shardCount } } }`, { id: mira });
    expect(sample(await scrape(server.url), 'souls_clustering_duration_seconds_count', { mode: 'trigram', purpose: 'soul' })).toBe(gateClusterings + 1);
    const scoped = await gql(`query($id: ID!) { soul(id: $id) { evidence(query: "river") { shardCount } } }`, { id: mira });
    expect(scoped.soul.evidence.shardCount).toBe(1);
    const afterReports = await scrape(server.url);
    expect(sample(afterReports, 'souls_clustering_duration_seconds_count', { mode: 'trigram', purpose: 'scoped_report' })).toBe(1);
    expect(sample(afterReports, 'souls_clustering_duration_seconds_count', { mode: 'trigram', purpose: 'soul' })).toBe(gateClusterings + 1);
  });
});

/** Another connection (a worker thread, as another process would) takes the write lock of `file` and holds it `ms`. */
async function holdWriteLock(file: string, ms: number): Promise<{ released: Promise<unknown> }> {
  const worker = new Worker(
    `const { DatabaseSync } = require('node:sqlite');
     const { parentPort, workerData } = require('node:worker_threads');
     const db = new DatabaseSync(workerData.file);
     db.exec('BEGIN IMMEDIATE');
     parentPort.postMessage('locked');
     Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.ms);
     db.exec('COMMIT');
     db.close();`,
    { eval: true, workerData: { file, ms } },
  );
  const released = new Promise((resolve) => worker.once('exit', resolve));
  await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return { released };
}

describe('/metrics and SQLite locks', () => {
  it('times how long writes wait for the write lock another connection holds, and counts busy timeouts', async () => {
    const file = join(dir, 'souls.db');
    const observer = {};
    const app = buildApp({ db: openSoulsDb({ store: openSqliteStore({ path: file, busyTimeoutMs: 2000, observer }), observer }) });
    const { url } = await app.start(0, '127.0.0.1');
    const create = (name: string) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: `mutation { createSoul(input: { name: "${name}", essence: "Waits." }) { __typename } }` }) }).then(async (r) => ({ status: r.status, body: await r.json() }));
    /** Writes that waited longer than half a second: all of them minus those in the buckets up to 0.5 s. */
    const longWaits = (text: string) => sample(text, 'souls_sqlite_write_lock_wait_seconds_count') - sample(text, 'souls_sqlite_write_lock_wait_seconds_bucket', { le: '0.5' });
    try {
      const before = await scrape(url);
      expect(sample(before, 'souls_sqlite_busy_timeouts_total')).toBe(0);
      expect((await create('Free')).body.data.createSoul.__typename).toBe('SoulPayload');
      const free = await scrape(url);
      expect(sample(free, 'souls_sqlite_write_lock_wait_seconds_count')).toBe(sample(before, 'souls_sqlite_write_lock_wait_seconds_count') + 1);
      expect(longWaits(free)).toBe(0);

      // Held for 1.5 s from before the write is sent: the write waits for it (within the 2 s busy timeout), then succeeds.
      const held = await holdWriteLock(file, 1500);
      expect((await create('Patient')).body.data.createSoul.__typename).toBe('SoulPayload');
      await held.released;
      const waited = await scrape(url);
      expect(longWaits(waited)).toBe(1);
      expect(sample(waited, 'souls_sqlite_busy_timeouts_total')).toBe(0);

      // Held past the busy timeout: the write fails with a retryable code, nothing is written, and the timeout is counted.
      const stuck = await holdWriteLock(file, 3500);
      const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
      const refused = await create('Refused');
      await stuck.released;
      expect(refused.body.data).toBeNull();
      expect(refused.body.errors).toEqual([
        expect.objectContaining({ message: 'the database is busy: another writer held it past the busy timeout; nothing was written, retry', extensions: { code: 'STORAGE_BUSY' } }),
      ]);
      // The operator's log names the file, in one line; clients are not told it.
      expect(logged.mock.calls.map((call) => call.map(String).join(' '))).toEqual([`STORAGE_BUSY: database ${file}: the database is busy: another writer held it past the busy timeout; nothing was written, retry`]);
      logged.mockRestore();
      const query = (q: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: q }) }).then((r) => r.json());
      expect((await query('{ souls { name } }')).data.souls.map((s: { name: string }) => s.name).sort()).toEqual(['Free', 'Patient']);
      const timedOut = await scrape(url);
      expect(sample(timedOut, 'souls_sqlite_busy_timeouts_total')).toBe(1);
      expect(sample(timedOut, 'souls_sqlite_write_lock_wait_seconds_count')).toBe(sample(waited, 'souls_sqlite_write_lock_wait_seconds_count'));
    } finally {
      await app.stop();
    }
  });
});

describe('/metrics and the PostgreSQL pool', () => {
  it('shows the pool\'s connections (open, idle, held by writes, waiting), times each statement and each wait for a connection; a SQLite server has none of these', async () => {
    const server = await start({ path: 'pglite:memory' });
    const before = await scrape(server.url);
    expect(sample(before, 'souls_pg_pool_connections')).toBe(1);
    expect(sample(before, 'souls_pg_pool_idle_connections')).toBe(1);
    expect(sample(before, 'souls_pg_pool_waiting_units')).toBe(0);
    const counted = sample(before, 'souls_pg_statement_duration_seconds_count');
    await server.data('mutation { createSoul(input: { name: "Gauge", essence: "Counts." }) { __typename } }');
    expect(await server.data('{ souls { name } }')).toEqual({ souls: [{ name: 'Gauge' }] });
    const after = await scrape(server.url);
    expect(sample(after, 'souls_pg_statement_duration_seconds_count')).toBeGreaterThan(counted);
    expect(sample(after, 'souls_pg_statement_duration_seconds_bucket', { le: '+Inf' })).toBe(sample(after, 'souls_pg_statement_duration_seconds_count'));
    // Each unit of work's wait for a connection, by purpose (PGlite's one connection is taken in turns).
    expect(sample(after, 'souls_pg_pool_wait_seconds_count', { purpose: 'write' })).toBeGreaterThan(sample(before, 'souls_pg_pool_wait_seconds_count', { purpose: 'write' }));
    expect(sample(after, 'souls_pg_pool_wait_seconds_count', { purpose: 'read' })).toBeGreaterThan(sample(before, 'souls_pg_pool_wait_seconds_count', { purpose: 'read' }));
    expect(sample(after, 'souls_pg_pool_write_connections')).toBe(0);

    const sqlite = await start();
    expect(await scrape(sqlite.url)).not.toContain('souls_pg_');
  }, 120_000);
});
