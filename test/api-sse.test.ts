import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startServer, type LiveServer } from './support/server.ts';
import { trackListeners, type Topic } from './support/listeners.ts';

const DAY_MS = 86_400_000;
const WAIT_MS = 3_000;

/** Sentences about unrelated things: pairwise below the default clusteringThreshold, so each is its own cluster. */
const distinct = [
  'Reviewed the pull request carefully before merging it',
  'Cooked a spicy curry for the whole team on friday',
  'Jogged five kilometres along the river at dawn',
  'Sketched a floor plan for the new community library',
];


/** Resolves when `done()` holds, polling; fails with `describe()` after WAIT_MS. */
async function until(done: () => boolean, describe: () => string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`after ${WAIT_MS} ms: ${describe()}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

type SseMessage = { event: string; data: any };

/** One subscription over Server-Sent Events ("distinct connections" mode): reads and parses the response body as it streams. */
class SseStream {
  readonly messages: SseMessage[] = [];
  status = 0;
  contentType = '';
  ended = false;
  failure: unknown = null;
  private consumed = 0;
  private readonly controller = new AbortController();
  private pump: Promise<void> = Promise.resolve();

  readonly label: string;

  constructor(label: string) {
    this.label = label;
  }

  async open(url: string, init: RequestInit): Promise<this> {
    const response = await fetch(url, { ...init, signal: this.controller.signal });
    this.status = response.status;
    this.contentType = response.headers.get('content-type') ?? '';
    this.pump = this.read(response.body!);
    return this;
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        let boundary: number;
        while ((boundary = buffer.indexOf('\n\n')) >= 0) {
          this.parse(buffer.slice(0, boundary));
          buffer = buffer.slice(boundary + 2);
        }
      }
    } catch (error) {
      if (!this.controller.signal.aborted) this.failure = error;
    } finally {
      this.ended = true;
    }
  }

  /** One SSE block: `event:` and `data:` lines; comment lines (keep-alive pings) start with a colon. */
  private parse(block: string): void {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length === 0 && event === 'message') return;
    const text = data.join('\n');
    this.messages.push({ event, data: text === '' ? null : JSON.parse(text) });
  }

  /** The payloads of the next n `next` events for a subscription field, each without errors. */
  async events(field: string, n = 1): Promise<any[]> {
    await until(
      () => this.messages.length >= this.consumed + n || this.ended,
      () => `${this.label}: wanted ${n} more event(s); received ${JSON.stringify(this.messages.slice(this.consumed))}`,
    );
    const taken = this.messages.slice(this.consumed, this.consumed + n);
    if (taken.length < n) throw new Error(`${this.label}: the stream ended (${String(this.failure ?? 'closed')}) after ${JSON.stringify(this.messages)}`);
    this.consumed += n;
    for (const message of taken) {
      if (message.event !== 'next' || message.data.errors) throw new Error(`${this.label}: unexpected message ${JSON.stringify(message)}`);
    }
    return taken.map((message) => message.data.data[field]);
  }

  get unread(): SseMessage[] {
    return this.messages.slice(this.consumed);
  }

  /** Aborts the request and waits until the body reader has stopped. */
  async abort(): Promise<void> {
    this.controller.abort();
    await this.pump;
  }
}

let server: LiveServer;
let listeners: ReturnType<typeof trackListeners>;
let streams: SseStream[] = [];

beforeEach(async () => {
  server = await startServer();
  listeners = trackListeners(server);
});

afterEach(async () => {
  await Promise.all(streams.map((stream) => stream.abort()));
  streams = [];
  await server.stop();
});

/** POSTs a subscription with `accept: text/event-stream`; resolves once the server listens on the topic. */
async function ssePost(topic: Topic, label: string, query: string, variables?: Record<string, unknown>): Promise<SseStream> {
  const before = listeners.count(topic);
  const stream = new SseStream(label);
  streams.push(stream);
  await stream.open(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ query, variables }),
  });
  await listeners.until(topic, before + 1);
  return stream;
}

/** The same over GET, the operation in the query string. */
async function sseGet(topic: Topic, label: string, query: string, variables?: Record<string, unknown>): Promise<SseStream> {
  const before = listeners.count(topic);
  const stream = new SseStream(label);
  streams.push(stream);
  const params = new URLSearchParams({ query });
  if (variables) params.set('variables', JSON.stringify(variables));
  await stream.open(`${server.url}?${params}`, { method: 'GET', headers: { accept: 'text/event-stream', 'x-graphql-yoga-csrf': '1' } });
  await listeners.until(topic, before + 1);
  return stream;
}

function gql(query: string, variables?: Record<string, unknown>): Promise<any> {
  return server.data(query, variables);
}

async function createSoul(name: string): Promise<string> {
  const data = await gql(`mutation($input: CreateSoulInput!) { createSoul(input: $input) { __typename ... on SoulPayload { soul { id } } } }`, {
    input: { name, essence: `The essence of ${name}.` },
  });
  expect(data.createSoul.__typename).toBe('SoulPayload');
  return data.createSoul.soul.id;
}

/** Drops one shard created `daysAgo` before the server clock's now. */
async function drop(soulIds: string[], content: string, source: string, daysAgo: number): Promise<{ shardId: string; ready: string[] }> {
  const createdAt = new Date(server.clock.now() - daysAgo * DAY_MS).toISOString();
  const data = await gql(
    `mutation($input: DropShardInput!) { dropShard(input: $input) { __typename ... on DropShardPayload { shard { id } readySouls { id } } } }`,
    { input: { soulIds, content, source, createdAt } },
  );
  expect(data.dropShard.__typename).toBe('DropShardPayload');
  return { shardId: data.dropShard.shard.id, ready: data.dropShard.readySouls.map((s: { id: string }) => s.id) };
}

/** Three shards, three sources, 3, 2 and 1 days old: the third moves the soul to ready (priority 3 × 3 × 2 × 1 = 18). */
async function crossReady(soulId: string): Promise<string[]> {
  const shards = [await drop([soulId], distinct[0], 'chat', 3), await drop([soulId], distinct[1], 'journal', 2), await drop([soulId], distinct[2], 'email', 1)];
  expect(shards.map((s) => s.ready)).toEqual([[], [], [soulId]]);
  return shards.map((s) => s.shardId);
}

describe('subscriptions over Server-Sent Events', () => {
  it('delivers shardDropped and crystallizationReady over POST, and the server keeps serving after the client aborts', async () => {
    const a = await createSoul('Ada');
    const dropped = await ssePost('shardDropped', 'shardDropped', `subscription { shardDropped { shard { id content source souls { id } } at } }`);
    const ready = await ssePost('crystallizationReady', 'crystallizationReady', `subscription { crystallizationReady { soul { id name } priority } }`);
    expect(dropped.status).toBe(200);
    expect(dropped.contentType).toMatch(/^text\/event-stream/);

    const shardIds = await crossReady(a);

    const shards = await dropped.events('shardDropped', 3);
    expect(shards.map((e) => e.shard.id)).toEqual(shardIds);
    expect(shards[0].shard).toEqual({ id: shardIds[0], content: distinct[0], source: 'chat', souls: [{ id: a }] });
    expect(shards[2].at).toBe(new Date(server.clock.now()).toISOString());

    const [crossing] = await ready.events('crystallizationReady');
    const verdict = (await gql(`query($id: ID!) { soul(id: $id) { crystallization { priority } } }`, { id: a })).soul.crystallization;
    expect(crossing).toEqual({ soul: { id: a, name: 'Ada' }, priority: verdict.priority });
    expect(crossing.priority).toBe(18);
    expect(ready.unread).toEqual([]);

    await dropped.abort();
    await ready.abort();
    expect(dropped.failure).toBeNull();
    // The server notices the clients are gone and stops listening for them.
    await listeners.until('shardDropped', 0);
    await listeners.until('crystallizationReady', 0);

    const after = await drop([a], distinct[3], 'forum', 0);
    expect(after.shardId).toBeTruthy();
    expect(await gql(`query($id: ID!) { soul(id: $id) { pendingShardCount } }`, { id: a })).toEqual({ soul: { pendingShardCount: 4 } });
  });

  it('applies the filter argument of a subscription sent over GET', async () => {
    const a = await createSoul('Ada');
    const b = await createSoul('Bo');
    const forA = await sseGet('shardDropped', 'shardDropped(a) over GET', `subscription($soulId: ID) { shardDropped(soulId: $soulId) { shard { id souls { id } } } }`, {
      soulId: a,
    });
    const c = await createSoul('Cy');
    const d = await createSoul('Di');
    const readyC = await sseGet('crystallizationReady', 'crystallizationReady([c]) over GET', `subscription($ids: [ID!]) { crystallizationReady(soulIds: $ids) { soul { id } } }`, {
      ids: [c],
    });

    const toB = await drop([b], distinct[0], 'chat', 1);
    const toBoth = await drop([a, b], distinct[1], 'journal', 0);
    const [event] = await forA.events('shardDropped');
    expect(event.shard.id).toBe(toBoth.shardId);
    expect(event.shard.id).not.toBe(toB.shardId);

    await crossReady(d);
    await crossReady(c);
    expect((await readyC.events('crystallizationReady')).map((e) => e.soul.id)).toEqual([c]);
    expect(readyC.unread).toEqual([]);
    expect(forA.unread).toEqual([]);
  });

  it('answers an invalid subscription with errors instead of a stream', async () => {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: 'subscription { nope }' }),
    });
    const text = await response.text();
    expect(text).toContain('Cannot query field \\"nope\\" on type \\"Subscription\\"');
    expect(await gql(`query { settings { traitLimit } }`)).toEqual({ settings: { traitLimit: expect.any(Number) } });
  });
});
