// One write of 10,000 shards delivered to many reading subscribers, over SSE and graphql-ws, some sharing one
// resolution and some with their own: every subscriber gets every shard, in order; and the server answers other
// requests while the events go out (a /metrics asked during the delivery shows it unfinished), rather than after.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { metricSample, serverPerTest, type LiveServer } from './support/server.ts';
import { sseData } from './support/sse.ts';

const start = serverPerTest(afterEach);
const sockets: WebSocket[] = [];
const aborts: AbortController[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.terminate();
  for (const abort of aborts.splice(0)) abort.abort();
});

const BATCH = 10_000;

async function until(done: () => boolean | Promise<boolean>, what: () => string, waitMs = 120_000): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`waited ${waitMs / 1000} s for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const metrics = async (server: LiveServer) => (await fetch(server.url.replace(/graphql$/, 'metrics'))).text();
const listening = async (server: LiveServer, transport: 'websocket' | 'sse', n: number) => metricSample(await metrics(server), 'souls_subscriptions_active', { transport }) === n;
const delivered = (text: string) => metricSample(text, 'souls_events_delivered_total', { topic: 'shardDropped', transport: 'sse' }) + metricSample(text, 'souls_events_delivered_total', { topic: 'shardDropped', transport: 'websocket' });

async function newSoul(server: LiveServer, name: string): Promise<string> {
  const data = await server.data('mutation($input: CreateSoulInput!) { createSoul(input: $input) { ... on SoulPayload { soul { id } } } }', { input: { name, essence: `${name} keeps the ledger.` } });
  return data.createSoul.soul.id;
}

/** The write of BATCH shards, not awaited by the caller that watches its delivery; resolves to the shard ids in order. */
async function dropBatch(server: LiveServer, soulId: string): Promise<string[]> {
  const inputs = Array.from({ length: BATCH }, (_, i) => ({ soulIds: [soulId], content: `Entry ${i} of the ledger: counted the crates at the north gate.`, source: 'ledger' }));
  const data = await server.data('mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { ... on DropShardsPayload { shards { id } } } }', { inputs });
  return data.dropShards.shards.map((shard: { id: string }) => shard.id);
}

/** An SSE subscription read as it streams: the shard ids of its `next` events, in order. */
async function sseSubscriber(server: LiveServer, query: string): Promise<string[]> {
  const abort = new AbortController();
  aborts.push(abort);
  const response = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ query }), signal: abort.signal });
  expect(response.status).toBe(200);
  const ids: string[] = [];
  void (async () => {
    try {
      for await (const event of sseData(response.body!)) ids.push(event.data.shardDropped.shard.id);
    } catch {
      // aborted after the test
    }
  })();
  return ids;
}

/** A graphql-ws socket with these subscriptions: the shard ids each receives, in order. */
async function wsSubscriber(server: LiveServer, subscriptions: Record<string, string>): Promise<Record<string, string[]>> {
  const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws');
  sockets.push(socket);
  const ids: Record<string, string[]> = Object.fromEntries(Object.keys(subscriptions).map((id) => [id, []]));
  let acknowledged = false;
  socket.on('message', (raw) => {
    const message = JSON.parse(String(raw));
    if (message.type === 'connection_ack') acknowledged = true;
    if (message.type === 'next') ids[message.id].push(message.payload.data.shardDropped.shard.id);
  });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  socket.send(JSON.stringify({ type: 'connection_init' }));
  await until(() => acknowledged, () => 'connection_ack');
  for (const [id, query] of Object.entries(subscriptions)) socket.send(JSON.stringify({ id, type: 'subscribe', payload: { query } }));
  return ids;
}

describe('one write of 10,000 shards to many reading subscribers', { timeout: 240_000 }, () => {
  it('reaches every subscriber over SSE and graphql-ws, sharing a resolution or not, every shard in order', async () => {
    const server = await start();
    const soul = await newSoul(server, 'Ferrin');
    const other = await newSoul(server, 'Sela');
    const shared = `subscription { shardDropped(soulId: "${soul}") { shard { id content } } }`;
    const own = (alias: string) => `subscription { shardDropped(soulId: "${soul}") { shard { id ${alias}: source } } }`;
    const sse = [await sseSubscriber(server, shared), await sseSubscriber(server, shared), await sseSubscriber(server, own('a'))];
    const ws = [await wsSubscriber(server, { shared, own: own('b'), elsewhere: `subscription { shardDropped(soulId: "${other}") { shard { id } } }` }), await wsSubscriber(server, { shared })];
    await until(async () => (await listening(server, 'sse', 3)) && (await listening(server, 'websocket', 4)), () => 'seven subscriptions listening');

    const dropped = await dropBatch(server, soul);
    const streams = [...sse, ws[0].shared, ws[0].own, ws[1].shared];
    await until(() => streams.every((ids) => ids.length >= BATCH), () => `every subscriber's ${BATCH} shards (${streams.map((ids) => ids.length).join(', ')} so far)`);
    for (const ids of streams) expect(ids).toEqual(dropped);
    expect(ws[0].elsewhere).toEqual([]);
  });

  it('answers a request made while the events go out before the last of them is sent', async () => {
    const server = await start();
    const soul = await newSoul(server, 'Tamsin');
    const sse = await Promise.all(Array.from({ length: 4 }, (_, i) => sseSubscriber(server, `subscription { shardDropped(soulId: "${soul}") { shard { id c${i % 2}: content } } }`)));
    await until(() => listening(server, 'sse', 4), () => 'four subscriptions listening');
    const before = delivered(await metrics(server));

    const write = dropBatch(server, soul);
    // The delivery has begun once a subscriber has its first shard: then another request is asked.
    await until(() => sse.some((ids) => ids.length > 0), () => 'a first shard');
    const during = delivered(await metrics(server)) - before;
    const dropped = await write;
    await until(() => sse.every((ids) => ids.length >= BATCH), () => `every subscriber's ${BATCH} shards (${sse.map((ids) => ids.length).join(', ')} so far)`);
    for (const ids of sse) expect(ids).toEqual(dropped);

    // Answered with the events only partly sent: the server took the request between slices of the delivery.
    expect(during).toBeLessThan(4 * BATCH);
    expect(delivered(await metrics(server)) - before).toBe(4 * BATCH);
  });
});
