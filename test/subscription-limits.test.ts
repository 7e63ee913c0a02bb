import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { createSoul, dropShard, DAY_MS, type SoulsDb } from '../src/engine/index.ts';
import { loadConfig } from '../src/server/config.ts';
import { defaultLimits } from '../src/server/limits.ts';
import { trackListeners } from './support/listeners.ts';
import { serverPerTest, type LiveServer } from './support/server.ts';

const WAIT_MS = 5_000;

async function until(done: () => boolean, what: () => string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`after ${WAIT_MS} ms: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A graphql-transport-ws client written by hand: what the server sends, per operation id, and how the socket closed. */
class RawSocket {
  readonly socket: WebSocket;
  readonly messages = new Map<string, any[]>();
  closed: number | null = null;
  acked = false;

  constructor(url: string) {
    this.socket = new WebSocket(url, 'graphql-transport-ws');
    this.socket.on('message', (data) => {
      const message = JSON.parse(String(data));
      if (message.type === 'connection_ack') this.acked = true;
      if (message.id) this.messages.set(message.id, [...(this.messages.get(message.id) ?? []), message]);
    });
    this.socket.on('close', (code) => (this.closed = code));
  }

  async open(): Promise<this> {
    await new Promise((resolve, reject) => this.socket.once('open', resolve).once('error', reject));
    this.send({ type: 'connection_init', payload: {} });
    await until(() => this.acked || this.closed !== null, () => 'no connection_ack');
    return this;
  }

  send(message: unknown): void {
    this.socket.send(JSON.stringify(message));
  }

  subscribe(id: string, query: string, variables?: Record<string, unknown>): void {
    this.send({ id, type: 'subscribe', payload: { query, variables } });
  }

  of(id: string): any[] {
    return this.messages.get(id) ?? [];
  }

  close(): void {
    this.socket.close();
  }
}

let sockets: RawSocket[] = [];
async function connect(target: LiveServer): Promise<RawSocket> {
  const socket = await new RawSocket(target.wsUrl).open();
  sockets.push(socket);
  return socket;
}
afterEach(() => {
  for (const socket of sockets) socket.close();
  sockets = [];
});
const server = serverPerTest(afterEach);

const changed = 'subscription { soulChanged { kind } }';
const attune = (target: LiveServer, soulId: number) => target.request(`mutation { stampAttuned(soulId: "${soulId}") { __typename } }`);

/** A soul with enough evidence that its report has clusters to compute. */
async function soulWithEvidence(db: SoulsDb, name = 'Ada') {
  const soul = await createSoul(db, { name, essence: 'Calm, curious and careful.' });
  const observations = ['Reviewed the pull request carefully', 'Cooked a spicy curry for the team', 'Jogged along the river at dawn', 'Sketched a floor plan for the library'];
  for (const [i, content] of observations.entries()) await dropShard(db, content, i % 2 ? 'chat' : 'review', [soul.id], { createdAt: Date.UTC(2026, 0, 1) - (i + 1) * DAY_MS });
  return soul;
}

describe('subscription caps', () => {
  it('refuses the subscription over maxSubscriptionsPerConnection with TOO_MANY_SUBSCRIPTIONS, keeps the socket, and frees a slot on complete', async () => {
    const target = await server({ app: { limits: { maxSubscriptionsPerConnection: 5 } } });
    const ws = await connect(target);
    for (let i = 1; i <= 6; i++) ws.subscribe(String(i), changed);
    await until(() => ws.of('6').length === 2, () => `the sixth got ${JSON.stringify(ws.of('6'))}`);
    expect(ws.of('6')).toEqual([
      { id: '6', type: 'next', payload: { errors: [expect.objectContaining({ message: expect.stringMatching(/this connection has 5 live subscriptions, the most allowed/), extensions: { code: 'TOO_MANY_SUBSCRIPTIONS', limit: 5, setting: 'maxSubscriptionsPerConnection' } })] } },
      { id: '6', type: 'complete' },
    ]);
    // The five are live: one event reaches each.
    const soul = await createSoul(target.app.db, { name: 'Ada', essence: 'Calm.' });
    await attune(target, soul.id);
    await until(() => ['1', '2', '3', '4', '5'].every((id) => ws.of(id).length === 1), () => JSON.stringify([...ws.messages]));
    expect(ws.of('1')).toEqual([{ id: '1', type: 'next', payload: { data: { soulChanged: { kind: 'ATTUNED' } } } }]);
    // Completing one frees its slot on this connection.
    ws.send({ id: '1', type: 'complete' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    ws.subscribe('7', changed);
    await attune(target, soul.id);
    await until(() => ws.of('7').length === 1, () => `the seventh got ${JSON.stringify(ws.of('7'))}`);
    expect(ws.of('7')[0].payload).toEqual({ data: { soulChanged: { kind: 'ATTUNED' } } });
    expect(ws.closed).toBeNull();
  });

  it('refuses the subscription over maxSubscriptions across connections and SSE, until one ends', async () => {
    const target = await server({ app: { limits: { maxSubscriptions: 3 } } });
    const listeners = trackListeners(target);
    const first = await connect(target);
    first.subscribe('a', changed);
    first.subscribe('b', 'subscription { shardDropped { at } }');
    const abort = new AbortController();
    const sse = await fetch(target.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: 'subscription { levelChanged { kind } }' }),
      signal: abort.signal,
    });
    expect(sse.status).toBe(200);
    await until(() => listeners.count('levelChanged') === 1 && listeners.count('shardDropped') === 1 && listeners.count('soulChanged') === 1, () => 'three subscriptions not listening');
    const second = await connect(target);
    second.subscribe('c', changed);
    await until(() => second.of('c').length === 2, () => `c got ${JSON.stringify(second.of('c'))}`);
    expect(second.of('c')[0].payload.errors[0]).toMatchObject({ extensions: { code: 'TOO_MANY_SUBSCRIPTIONS', limit: 3, setting: 'maxSubscriptions' } });
    abort.abort();
    await until(() => listeners.count('levelChanged') === 0, () => 'the SSE subscription did not end');
    second.subscribe('d', changed);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const soul = await createSoul(target.app.db, { name: 'Ada', essence: 'Calm.' });
    await attune(target, soul.id);
    await until(() => second.of('d').length === 1, () => `d got ${JSON.stringify(second.of('d'))}`);
    expect(second.of('d')[0].payload).toEqual({ data: { soulChanged: { kind: 'ATTUNED' } } });
  });

  it('prices a subscription against maxSubscriptionCost: one evidence report, not every member of 500 clusters', async () => {
    const target = await server();
    const ws = await connect(target);
    // 500 clusters of up to 500 members: 500 × (2 + 500 × 3) before the report itself, over 100,000.
    const wide = 'subscription { soulChanged { soul { evidence { clusters(first: 500) { members(first: 500) { id } } } } } }';
    ws.subscribe('wide', wide);
    await until(() => ws.of('wide').length === 2, () => JSON.stringify(ws.of('wide')));
    expect(ws.of('wide')[0].payload.errors[0]).toMatchObject({
      message: expect.stringMatching(/^Subscription Cost limit of 100000 exceeded, found \d+\.$/),
      extensions: { code: 'COST_LIMIT', setting: 'maxSubscriptionCost', limit: 100_000 },
    });
    ws.subscribe('one', 'subscription { soulChanged { soul { evidence { markdown } } } }');
    const soul = await soulWithEvidence(target.app.db);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await attune(target, soul.id);
    await until(() => ws.of('one').length === 1, () => JSON.stringify(ws.of('one')));
    expect(ws.of('one')[0].payload.data.soulChanged.soul.evidence.markdown).toContain('Ada');
    // The same selection in a query is within maxCost.
    const query = await target.request(`{ soul(id: "${soul.id}") { evidence { clusters(first: 500) { members(first: 500) { id } } } } }`);
    expect(query.body.data.soul.evidence.clusters.flatMap((c: { members: unknown[] }) => c.members)).toHaveLength(4);
  });

  it('takes the caps from flags and the environment', () => {
    expect(loadConfig([], {}).limits).toMatchObject({ maxSubscriptions: 2000, maxSubscriptionsPerConnection: 100, maxSubscriptionCost: 100_000 });
    const config = loadConfig(['--max-subscriptions-per-connection', '7'], { SOULS_MAX_SUBSCRIPTIONS: '50', SOULS_MAX_SUBSCRIPTION_COST: '900' });
    expect(config.limits).toMatchObject({ maxSubscriptions: 50, maxSubscriptionsPerConnection: 7, maxSubscriptionCost: 900 });
    expect(defaultLimits.maxSubscriptions).toBeGreaterThanOrEqual(defaultLimits.maxSubscriptionsPerConnection);
  });
});

describe('one resolution per event for subscribers asking the same thing', () => {
  const evidence = 'subscription($id: ID) { soulChanged(soulId: $id) { kind soul { name evidence { shardCount markdown } } } }';

  /** SQL statements the event costs with `n` identical subscribers on one socket, and what each got. */
  async function eventWith(n: number) {
    const target = await server();
    const listeners = trackListeners(target);
    const soul = await soulWithEvidence(target.app.db);
    const ws = await connect(target);
    for (let i = 0; i < n; i++) ws.subscribe(`s${i}`, evidence, { id: String(soul.id) });
    await until(() => listeners.count('soulChanged') >= 1, () => 'not listening');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = await target.app.db.store.statementsExecuted();
    await attune(target, soul.id);
    await until(() => [...Array(n).keys()].every((i) => ws.of(`s${i}`).length === 1), () => `${[...ws.messages.values()].filter((m) => m.length > 0).length} of ${n} delivered`);
    const statements = await target.app.db.store.statementsExecuted() - before;
    return { statements, listening: listeners.count('soulChanged'), payloads: [...Array(n).keys()].map((i) => ws.of(`s${i}`)[0].payload) };
  }

  it('50 identical subscriptions cost the event what one does, and each gets the same correct result', async () => {
    const one = await eventWith(1);
    const fifty = await eventWith(50);
    expect(fifty.statements).toBe(one.statements);
    expect(fifty.listening).toBe(1);
    expect(one.payloads[0].data.soulChanged).toMatchObject({ kind: 'ATTUNED', soul: { name: 'Ada', evidence: { shardCount: 4 } } });
    for (const payload of fifty.payloads) expect(payload).toEqual(one.payloads[0]);
  });

  it('different variables are not shared: each subscriber gets its own soul', async () => {
    const target = await server();
    const ada = await soulWithEvidence(target.app.db, 'Ada');
    const bo = await soulWithEvidence(target.app.db, 'Bo');
    const ws = await connect(target);
    ws.subscribe('ada', evidence, { id: String(ada.id) });
    ws.subscribe('bo', evidence, { id: String(bo.id) });
    ws.subscribe('all', evidence, {});
    await new Promise((resolve) => setTimeout(resolve, 50));
    await attune(target, bo.id);
    await until(() => ws.of('bo').length === 1 && ws.of('all').length === 1, () => JSON.stringify([...ws.messages]));
    expect(ws.of('bo')[0].payload.data.soulChanged.soul.name).toBe('Bo');
    expect(ws.of('all')[0].payload.data.soulChanged.soul.name).toBe('Bo');
    expect(ws.of('ada')).toEqual([]);
  });

  it('the shared stream ends when its last subscriber leaves, and a new one starts fresh', async () => {
    const target = await server();
    const listeners = trackListeners(target);
    const soul = await createSoul(target.app.db, { name: 'Ada', essence: 'Calm.' });
    const a = await connect(target);
    const b = await connect(target);
    a.subscribe('1', changed);
    b.subscribe('1', changed);
    await until(() => listeners.count('soulChanged') === 1, () => 'not listening once');
    a.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await attune(target, soul.id);
    await until(() => b.of('1').length === 1, () => 'b lost its events when a left');
    b.send({ id: '1', type: 'complete' });
    await until(() => listeners.count('soulChanged') === 0, () => 'still listening after the last subscriber left');
    b.subscribe('2', changed);
    await until(() => listeners.count('soulChanged') === 1, () => 'a new subscriber did not listen');
    await attune(target, soul.id);
    await until(() => b.of('2').length === 1, () => 'the new subscriber got nothing');
  });
});
