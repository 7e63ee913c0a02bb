// A big write with subscribers that never read: the server stays up, a subscriber that reads gets every event of
// the batch, and one that falls too far behind is closed with SUBSCRIBER_TOO_SLOW, never the process. On every
// transport (graphql-ws, SSE, MCP subscriptions/listen), through importSoulMd, and with Redis unreachable.
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { serverPerTest, type LiveServer } from './support/server.ts';
import { cliRunner } from './support/cli.ts';
import { sseData } from './support/sse.ts';

const start = serverPerTest(afterEach);
const { cli, printed, killAll } = cliRunner();
const sockets: WebSocket[] = [];
const aborts: AbortController[] = [];
afterEach(() => {
  killAll();
  for (const socket of sockets.splice(0)) socket.terminate();
  for (const abort of aborts.splice(0)) abort.abort();
});

const BATCH = 10_000;
const TOKENS = [{ name: 'tester', token: 'reader-token-0123456789', scopes: ['read' as const, 'observe' as const, 'refine' as const, 'admin' as const] }];
const AUTH = { authorization: 'Bearer reader-token-0123456789' };

// A bound for a hang, under the describe's 240 s: at load 20 on two cores the 10,000 events took over 60 s.
async function until(done: () => boolean | Promise<boolean>, what: () => string, waitMs = 200_000): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`waited ${waitMs / 1000} s for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A server in this process, or `souls serve` in a child process (where a crash ends it, as in production). */
type Api = Pick<LiveServer, 'url' | 'wsUrl' | 'request'>;

async function newSoul(server: Api, name: string): Promise<string> {
  const created = await server.request(
    'mutation($input: CreateSoulInput!) { createSoul(input: $input) { ... on SoulPayload { soul { id } } ... on Error { message } } }',
    { input: { name, description: `Test soul ${name}`, essence: `${name} is here so that the test has somebody to watch.` } },
    AUTH,
  );
  return created.body.data.createSoul.soul.id;
}

/** One write of `count` shards for a soul; the shards' ids in order. */
async function dropMany(server: Api, soulId: string, count = BATCH, padding = 400): Promise<string[]> {
  const inputs = Array.from({ length: count }, (_, i) => ({ soulIds: [soulId], content: `Entry ${i} of the ledger: ${'tally '.repeat(padding / 6)}`, source: 'ledger' }));
  const answer = await server.request(
    'mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename ... on DropShardsPayload { shards { id } } ... on Error { message } } }',
    { inputs },
    AUTH,
  );
  expect(answer.body.errors).toBeUndefined();
  expect(answer.body.data.dropShards.__typename).toBe('DropShardsPayload');
  return answer.body.data.dropShards.shards.map((shard: { id: string }) => shard.id);
}

/** The server is up and answers. */
async function answers(server: Api): Promise<void> {
  const read = await server.request('{ souls { id } }', undefined, AUTH);
  expect(read.status).toBe(200);
  expect(read.body.errors).toBeUndefined();
}

const metric = async (server: LiveServer, pattern: RegExp) => pattern.test(await (await fetch(server.url.replace(/graphql$/, 'metrics'), { headers: AUTH })).text());
const listening = (server: LiveServer, transport: 'websocket' | 'sse', n: number) => metric(server, new RegExp(`^souls_subscriptions_active\\{transport="${transport}"\\} ${n}$`, 'm'));

type Message = { id?: string; type: string; payload?: any };

/** graphql-transport-ws by hand, so that the test can stop reading the socket (pause) and start again (resume). */
async function rawSubscriber(server: LiveServer, subscriptions: Record<string, string>): Promise<{ socket: WebSocket; messages: Message[] }> {
  const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws');
  sockets.push(socket);
  const messages: Message[] = [];
  socket.on('message', (data) => messages.push(JSON.parse(String(data))));
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  socket.send(JSON.stringify({ type: 'connection_init', payload: AUTH }));
  await until(() => messages.some((m) => m.type === 'connection_ack'), () => 'connection_ack');
  for (const [id, query] of Object.entries(subscriptions)) socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query } }));
  return { socket, messages };
}

// A paused socket answers no ping: graphql-ws would close it after its keep-alive (12 s), sooner than a loaded machine delivers the batch.
const PAUSED_KEEP_ALIVE = { wsKeepAliveMs: 600_000 };
const pause = (socket: WebSocket) => (socket as unknown as { _socket: { pause(): void } })._socket.pause();
const resume = (socket: WebSocket) => (socket as unknown as { _socket: { resume(): void } })._socket.resume();
// Large results: the never-read socket fills its buffers long before the batch is through.
const bulky = 'subscription($soulId: ID) { shardDropped(soulId: $soulId) { shard { id a: content b: content c: content d: content } } }';
const shardIds = (messages: Message[], id: string) => messages.filter((m) => m.id === id && m.type === 'next').map((m) => m.payload.data.shardDropped.shard.id);

describe('10,000 shards in one write, with subscribers that never read', { timeout: 240_000 }, () => {
  it('graphql-ws: the server stays up; a reader gets every shard of the batch in order, and so does the stalled one once it reads again', async () => {
    const server = await start({ app: { tokens: TOKENS, ...PAUSED_KEEP_ALIVE } });
    const watched = await newSoul(server, 'Ferrin');
    const other = await newSoul(server, 'Sela');
    const reader = await rawSubscriber(server, { all: 'subscription { shardDropped { shard { id } } }' });
    const stalled = await rawSubscriber(server, { mine: bulky.replace('($soulId: ID)', '').replace('(soulId: $soulId)', `(soulId: "${watched}")`), theirs: `subscription { shardDropped(soulId: "${other}") { shard { id } } }` });
    await until(() => listening(server, 'websocket', 3), () => 'three subscriptions listening');
    pause(stalled.socket);

    const dropped = await dropMany(server, watched);
    await answers(server);
    await until(() => shardIds(reader.messages, 'all').length === BATCH, () => `the reader's ${BATCH} events (${shardIds(reader.messages, 'all').length} so far)`);
    expect(shardIds(reader.messages, 'all')).toEqual(dropped);

    resume(stalled.socket);
    await until(() => shardIds(stalled.messages, 'mine').length === BATCH, () => `the stalled subscriber's ${BATCH} events (${shardIds(stalled.messages, 'mine').length} so far)`);
    expect(shardIds(stalled.messages, 'mine')).toEqual(dropped);
    expect(shardIds(stalled.messages, 'theirs')).toEqual([]);
    expect(stalled.messages.filter((m) => m.type === 'error' || m.payload?.errors)).toEqual([]);
    await answers(server);
  });

  it('graphql-ws, two subscribers sharing one resolution: the one 10,000 results behind the other gets what it was owed, then SUBSCRIBER_TOO_SLOW', async () => {
    const server = await start({ app: { tokens: TOKENS, ...PAUSED_KEEP_ALIVE } });
    const watched = await newSoul(server, 'Tamsin');
    const shared = bulky.replace('($soulId: ID)', '').replace('(soulId: $soulId)', `(soulId: "${watched}")`);
    const reader = await rawSubscriber(server, { same: shared });
    const stalled = await rawSubscriber(server, { same: shared });
    await until(() => listening(server, 'websocket', 2), () => 'two subscriptions listening');
    pause(stalled.socket);

    // 20,000 results: the paused socket's kernel buffers take a few thousand of them while the delivery yields to
    // I/O between slices, and it must still end up more than 10,000 behind.
    const dropped = [...(await dropMany(server, watched)), ...(await dropMany(server, watched, 10_000, 0))];
    await until(() => shardIds(reader.messages, 'same').length === dropped.length, () => `the reader's ${dropped.length} events (${shardIds(reader.messages, 'same').length} so far)`);
    expect(shardIds(reader.messages, 'same')).toEqual(dropped);
    await answers(server);

    resume(stalled.socket);
    await until(() => stalled.messages.some((m) => m.type === 'complete'), () => 'the stalled subscription to complete');
    const nexts = stalled.messages.filter((m) => m.type === 'next');
    const got = nexts.slice(0, -1).map((m) => m.payload.data.shardDropped.shard.id);
    expect(got.length).toBeGreaterThanOrEqual(10_000);
    expect(got.length).toBeLessThan(dropped.length);
    expect(got).toEqual(dropped.slice(0, got.length));
    expect(nexts.at(-1)!.payload).toMatchObject({ errors: [{ extensions: { code: 'SUBSCRIBER_TOO_SLOW', limit: 10_000 } }] });
    expect(stalled.messages.at(-1)).toEqual({ id: 'same', type: 'complete' });
    expect(await metric(server, /^souls_subscribers_too_slow_total 1$/m)).toBe(true);
    // The socket stays open: it can subscribe again.
    stalled.socket.send(JSON.stringify({ id: 'again', type: 'subscribe', payload: { query: 'subscription { soulChanged { kind } }' } }));
    await until(() => listening(server, 'websocket', 2), () => 'the new subscription listening');
  });

  it('SSE: the server stays up while a stream is not read, and the stream holds every shard when it is', async () => {
    const server = await start({ app: { tokens: TOKENS } });
    const watched = await newSoul(server, 'Ilse');
    const abort = new AbortController();
    aborts.push(abort);
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...AUTH },
      body: JSON.stringify({ query: bulky, variables: { soulId: watched } }),
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    await until(() => listening(server, 'sse', 1), () => 'the SSE subscription listening');

    const dropped = await dropMany(server, watched);
    await answers(server);

    const received: string[] = [];
    for await (const event of sseData(response.body!)) {
      received.push(event.data.shardDropped.shard.id);
      if (received.length === BATCH) break;
    }
    expect(received).toEqual(dropped);
  });

  it('MCP subscriptions/listen over HTTP, a stream never read and filtered to another soul: `souls serve` stays up', async () => {
    const child = cli(['serve', '--port', '0', '--db', ':memory:']);
    const url = (await printed(child, /Souls API on (\S+)/))[1];
    const server: Api = {
      url,
      wsUrl: url.replace(/^http/, 'ws'),
      async request(query, variables, headers) {
        const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query, variables }) });
        return { status: response.status, body: await response.json() };
      },
    };
    const watched = await newSoul(server, 'Brannoc');
    const other = await newSoul(server, 'Relay');
    const abort = new AbortController();
    aborts.push(abort);
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1' }, 'io.modelcontextprotocol/clientCapabilities': {} };
    const listen = await fetch(url.replace(/graphql$/, 'mcp'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-method': 'subscriptions/listen', 'mcp-protocol-version': '2026-07-28' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'listen:0', method: 'subscriptions/listen', params: { _meta: meta, notifications: { resourceSubscriptions: [`souls://${other}/soul.md`] } } }),
      signal: abort.signal,
    });
    expect(listen.status).toBe(200);
    expect(listen.headers.get('content-type')).toMatch(/text\/event-stream/);

    await dropMany(server, watched);
    await answers(server);
    await dropMany(server, watched, 2_000);
    await answers(server);
    expect(child.process.exitCode).toBeNull();
  });

  it('importSoulMd: a MEMORY.md log of 2,000 entries, with a subscriber that never reads', async () => {
    const server = await start({ app: { tokens: TOKENS } });
    const stalled = await rawSubscriber(server, { all: bulky.replace('($soulId: ID)', '').replace('(soulId: $soulId)', '') });
    await until(() => listening(server, 'websocket', 1), () => 'the subscription listening');
    pause(stalled.socket);
    const log = Array.from({ length: 2_000 }, (_, i) => `- 2025-11-${String(1 + (i % 28)).padStart(2, '0')}: entry ${i}, ${'a note on the weather and the tides '.repeat(8)}`);
    const text = ['# Relay', '', '## Who I Am', '', 'Relay carries messages between the towers.', '', '## Log', '', ...log].join('\n');
    const imported = await server.request(
      'mutation($input: ImportSoulMdInput!) { importSoulMd(input: $input) { __typename ... on SoulMdImportPayload { shardsAdded } ... on Error { message } } }',
      { input: { text, fileName: 'MEMORY.md', format: 'SOULMD', apply: true } },
      AUTH,
    );
    expect(imported.body.data.importSoulMd).toEqual({ __typename: 'SoulMdImportPayload', shardsAdded: 2_000 });
    await answers(server);
    resume(stalled.socket);
    await until(() => shardIds(stalled.messages, 'all').length === 2_000, () => `the 2,000 events (${shardIds(stalled.messages, 'all').length} so far)`);
  });

  it('with Redis unreachable, the events reach this replica\'s own subscribers, all of them, and the server stays up', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as { port: number };
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const server = await start({ app: { tokens: TOKENS, redis: { url: `redis://127.0.0.1:${port}`, channelPrefix: 'backpressure:' } } });
    const watched = await newSoul(server, 'Oskar');
    const reader = await rawSubscriber(server, { all: 'subscription { shardDropped { shard { id } } }' });
    const stalled = await rawSubscriber(server, { all: bulky.replace('($soulId: ID)', '').replace('(soulId: $soulId)', '') });
    await until(() => listening(server, 'websocket', 2), () => 'two subscriptions listening');
    pause(stalled.socket);

    const dropped = await dropMany(server, watched);
    await answers(server);
    await until(() => shardIds(reader.messages, 'all').length === BATCH, () => `the reader's ${BATCH} events (${shardIds(reader.messages, 'all').length} so far)`);
    expect(shardIds(reader.messages, 'all')).toEqual(dropped);
  });
});
