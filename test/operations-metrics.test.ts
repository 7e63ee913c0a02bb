import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadTokens } from '../src/server/auth.ts';
import { serverPerTest } from './support/server.ts';

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

/** The sample's value; 0 when the series is absent (a counter not yet moved). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = match[2] ? match[2].split(',') : [];
    if (wanted.every((label) => have.includes(label)) && have.length === wanted.length) return Number(match[3]);
  }
  return 0;
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
    const ok = { operation: 'MakeMira', type: 'mutation', outcome: 'ok' };
    expect(sample(before, 'souls_graphql_operations_total', ok)).toBe(0);
    const made = await server.request('mutation MakeMira { createSoul(input: { name: "Mira", essence: "Calm." }) { __typename } }');
    expect(made.status).toBe(200);
    const read = await server.request('query Roster { souls { id } }');
    expect(read.status).toBe(200);
    const invalid = await server.request('query Broken { noSuchField }');
    expect(invalid.status).toBe(400);
    const after = await scrape(server.url);
    expect(sample(after, 'souls_graphql_operations_total', ok)).toBe(1);
    expect(sample(after, 'souls_graphql_operations_total', { operation: 'Roster', type: 'query', outcome: 'ok' })).toBe(1);
    expect(sample(after, 'souls_graphql_operations_total', { operation: 'Broken', type: 'query', outcome: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(sample(after, 'souls_graphql_operation_duration_seconds_count', { operation: 'MakeMira', type: 'mutation' })).toBe(1);
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
