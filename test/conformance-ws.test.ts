import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { TokenEntry } from '../src/server/auth.ts';
import { SUBPROTOCOL_REFUSAL } from '../src/server/websocket.ts';
import { startServer, type LiveServer } from './support/server.ts';

/**
 * The GraphQL over WebSocket protocol (graphql-transport-ws) spoken by hand over a raw socket:
 * what the server answers, and with which close code it ends a connection that breaks the protocol.
 */

const PROTOCOL = 'graphql-transport-ws';
const WAIT_MS = 3_000;
const INIT_TIMEOUT_MS = 300;

type Message = { type: string; id?: string; payload?: any };
type Closed = { code: number; reason: string };

function bounded<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const opened = new Set<WebSocket>();

/** A raw socket: messages queue up for `next()`; `closed` settles with the close code and reason. */
class RawSocket {
  readonly ws: WebSocket;
  readonly closed: Promise<Closed>;
  private readonly queue: Message[] = [];
  private wake: (() => void) | null = null;
  private ended: Closed | null = null;

  constructor(url: string, protocol: string | string[] = PROTOCOL) {
    this.ws = new WebSocket(url, protocol);
    opened.add(this.ws);
    this.ws.on('message', (data) => {
      this.queue.push(JSON.parse(String(data)));
      this.wake?.();
    });
    this.closed = new Promise((resolve) => {
      this.ws.once('close', (code, reason) => {
        this.ended = { code, reason: String(reason) };
        this.wake?.();
        resolve(this.ended);
      });
    });
    // A refused handshake or a reset surfaces as 'close' too; without a listener 'error' would throw.
    this.ws.on('error', () => {});
  }

  async open(): Promise<this> {
    if (this.ws.readyState !== WebSocket.OPEN) await bounded(new Promise((resolve) => this.ws.once('open', resolve)), 'socket open');
    return this;
  }

  send(message: Message | string): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** The next message from the server; fails (bounded) if none comes or the socket closes first. */
  async next(what = 'a message'): Promise<Message> {
    const deadline = Date.now() + WAIT_MS;
    while (this.queue.length === 0) {
      if (this.ended) throw new Error(`waiting for ${what}, the socket closed: ${this.ended.code} ${this.ended.reason}`);
      if (Date.now() > deadline) throw new Error(`waiting for ${what}: nothing within ${WAIT_MS} ms`);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, 50);
      });
      this.wake = null;
    }
    return this.queue.shift()!;
  }

  /** Resolves with the close code the server ends the socket with (bounded). */
  closeCode(what: string): Promise<Closed> {
    return bounded(this.closed, `waiting for the server to close the socket (${what})`);
  }

  /** connection_init (with connectionParams, when given) then the connection_ack. */
  async init(payload?: Record<string, unknown>): Promise<Message> {
    this.send(payload === undefined ? { type: 'connection_init' } : { type: 'connection_init', payload });
    const ack = await this.next('connection_ack');
    expect(ack.type).toBe('connection_ack');
    return ack;
  }
}

async function connect(server: LiveServer): Promise<RawSocket> {
  return new RawSocket(server.wsUrl).open();
}

/** A fresh connection still gets acknowledged and answers a ping: the server outlived the last socket it closed. */
async function expectStillAccepting(server: LiveServer, payload?: Record<string, unknown>): Promise<void> {
  const socket = await connect(server);
  await socket.init(payload);
  socket.send({ type: 'ping' });
  expect(await socket.next('pong')).toEqual({ type: 'pong' });
  socket.ws.close(1000);
}

/** Resolves once a subscription on `topic` really listens (the pubsub repeater attaches on its first next()). */
function whenListening(server: LiveServer, topic: string): Promise<void> {
  const pubsub = server.app.pubsub as any;
  const original = pubsub.subscribe;
  return bounded(
    new Promise<void>((resolve) => {
      pubsub.subscribe = (name: string, ...rest: unknown[]) => {
        const inner = original.call(pubsub, name, ...rest);
        if (name !== topic) return inner;
        pubsub.subscribe = original;
        const iterator = {
          next: (...args: unknown[]) => {
            const result = inner.next(...args);
            resolve();
            return result;
          },
          return: (value?: unknown) => inner.return(value),
          throw: (error?: unknown) => inner.throw(error),
          [Symbol.asyncIterator]: () => iterator,
        };
        return iterator;
      };
    }),
    `a subscription listening on ${topic}`,
  ).finally(() => {
    pubsub.subscribe = original;
  });
}

afterEach(() => {
  for (const ws of opened) ws.terminate();
  opened.clear();
});

const soulChanged = 'subscription { soulChanged { kind soul { name } } }';

describe('graphql-transport-ws, server without tokens', () => {
  let server: LiveServer;
  beforeAll(async () => {
    server = await startServer({ app: { wsInitTimeoutMs: INIT_TIMEOUT_MS } });
  });
  afterAll(() => server.stop());

  it('closes a connection that sends no connection_init within the init timeout with 4408', async () => {
    const socket = await connect(server);
    expect(await socket.closeCode('no connection_init')).toEqual({ code: 4408, reason: 'Connection initialisation timeout' });
    await expectStillAccepting(server);
  });

  it('does not time out a connection that sent connection_init in time', async () => {
    const socket = await connect(server);
    await socket.init();
    // Well past the init timeout (a wait cannot be avoided to show that nothing happens), the connection still answers.
    await new Promise((resolve) => setTimeout(resolve, INIT_TIMEOUT_MS * 2));
    socket.send({ type: 'ping' });
    expect(await socket.next('pong')).toEqual({ type: 'pong' });
  });

  it('closes a subscribe sent before connection_ack with 4401', async () => {
    const socket = await connect(server);
    socket.send({ id: '1', type: 'subscribe', payload: { query: '{ souls { id } }' } });
    expect(await socket.closeCode('subscribe before ack')).toEqual({ code: 4401, reason: 'Unauthorized' });
    await expectStillAccepting(server);
  });

  it('closes a second connection_init with 4429', async () => {
    const socket = await connect(server);
    await socket.init();
    socket.send({ type: 'connection_init' });
    expect(await socket.closeCode('second connection_init')).toEqual({ code: 4429, reason: 'Too many initialisation requests' });
    await expectStillAccepting(server);
  });

  it('closes a second subscription under the id of an active one with 4409', async () => {
    const socket = await connect(server);
    await socket.init();
    const listening = whenListening(server, 'soulChanged');
    socket.send({ id: 'one', type: 'subscribe', payload: { query: soulChanged } });
    await listening;
    socket.send({ id: 'one', type: 'subscribe', payload: { query: soulChanged } });
    expect(await socket.closeCode('duplicate id')).toEqual({ code: 4409, reason: 'Subscriber for one already exists' });
    await expectStillAccepting(server);
  });

  const malformed: [string, string | Message][] = [
    ['invalid JSON', '{"type": "subscribe", '],
    ['a JSON value that is not an object', '"ping"'],
    ['a message without a type', { id: '1', payload: {} } as unknown as Message],
    ['an unknown message type', { type: 'unsubscribe', id: '1' }],
    ['a subscribe without payload', { id: '1', type: 'subscribe' }],
    ['a subscribe without id', { type: 'subscribe', payload: { query: '{ souls { id } }' } }],
    ['a subscribe whose query is not a string', { id: '1', type: 'subscribe', payload: { query: { souls: 'id' } } }],
    ['a ping whose payload is not an object', { type: 'ping', payload: 'hello' }],
  ];
  for (const [label, message] of malformed) {
    it(`closes ${label} with 4400`, async () => {
      const socket = await connect(server);
      await socket.init();
      socket.send(message);
      expect(await socket.closeCode(label)).toEqual({ code: 4400, reason: 'Invalid message received' });
      await expectStillAccepting(server);
    });
  }

  it('closes a socket that names no subprotocol with 4406, naming the one to use', async () => {
    const socket = new RawSocket(server.wsUrl, []);
    await socket.open();
    expect(await socket.closeCode('no subprotocol')).toEqual({ code: 4406, reason: SUBPROTOCOL_REFUSAL });
    expect(SUBPROTOCOL_REFUSAL).toContain('use graphql-transport-ws');
    await expectStillAccepting(server);
  });

  it('lets a socket that offers only the legacy graphql-ws (subscriptions-transport-ws) open, then closes it with 4406 naming graphql-transport-ws', async () => {
    const socket = new RawSocket(server.wsUrl, 'graphql-ws');
    await socket.open();
    expect(socket.ws.protocol).toBe('graphql-ws');
    expect(await socket.closeCode('the legacy subprotocol')).toEqual({ code: 4406, reason: SUBPROTOCOL_REFUSAL });
    await expectStillAccepting(server);
  });

  it('prefers graphql-transport-ws when a client offers both', async () => {
    const socket = new RawSocket(server.wsUrl, ['graphql-ws', 'graphql-transport-ws']);
    await socket.open();
    expect(socket.ws.protocol).toBe('graphql-transport-ws');
    await socket.init();
    await expectStillAccepting(server);
  });

  it('answers ping with pong, echoing the payload', async () => {
    const socket = await connect(server);
    await socket.init();
    socket.send({ type: 'ping' });
    expect(await socket.next('pong')).toEqual({ type: 'pong' });
    socket.send({ type: 'ping', payload: { n: 1 } });
    expect(await socket.next('pong')).toEqual({ type: 'pong', payload: { n: 1 } });
  });

  it('answers ping even before connection_init (the protocol allows it at any time)', async () => {
    const socket = await connect(server);
    socket.send({ type: 'ping' });
    expect(await socket.next('pong')).toEqual({ type: 'pong' });
  });

  it('answers a syntax error, a validation error or a limit with an error message for that id, and keeps the socket', async () => {
    const socket = await connect(server);
    await socket.init();
    const deep = `{ ${'souls { traits { soul { '.repeat(5)}id${' } } }'.repeat(5)} }`;
    for (const [id, query, message] of [
      ['syntax', 'subscription {', /^Syntax Error: Expected Name, found <EOF>\.$/],
      ['validation', 'subscription { nope }', /^Cannot query field "nope" on type "Subscription"\.$/],
      ['depth', deep, /depth limit of 12 exceeded/],
    ] as const) {
      socket.send({ id, type: 'subscribe', payload: { query } });
      const answer = await socket.next(`the error for ${id}`);
      expect(answer).toMatchObject({ id, type: 'error' });
      expect(answer.payload.map((e: any) => e.message)).toEqual([expect.stringMatching(message)]);
    }
    socket.send({ type: 'ping' });
    expect(await socket.next('pong')).toEqual({ type: 'pong' });
  });

  it("sends errors without Yoga's HTTP internals: no extensions.http on a refusal, a validation error or a coercion failure", async () => {
    const socket = await connect(server);
    await socket.init();
    // Priced over maxSubscriptionCost (100,000): 500 clusters of up to 500 members each.
    const evidence = 'soul { evidence { clusters(first: 500) { members(first: 500) { id } } } }';
    const cases = [
      ['validation', 'subscription { nope }', {}, 'error', 'GRAPHQL_VALIDATION_FAILED'],
      ['nesting', `{ souls(orderBy: ${'['.repeat(150)}) { id } }`, {}, 'error', 'BAD_REQUEST'],
      ['coercion', 'query($id: ID!) { soul(id: $id) { id } }', { id: {} }, 'next', undefined],
      ['cost', `subscription { soulChanged { ${evidence} } }`, {}, 'next', 'COST_LIMIT'],
    ] as const;
    for (const [id, query, variables, type, code] of cases) {
      socket.send({ id, type: 'subscribe', payload: { query, variables } });
      const answer = await socket.next(`the answer to ${id}`);
      expect(answer, id).toMatchObject({ id, type });
      const errors: Array<{ extensions?: Record<string, unknown> }> = type === 'error' ? answer.payload : answer.payload.errors;
      expect(errors.length, id).toBeGreaterThan(0);
      for (const error of errors) {
        expect(error.extensions?.http, `${id}: ${JSON.stringify(error)}`).toBeUndefined();
        if (code) expect(error.extensions?.code, id).toBe(code);
      }
      if (type === 'next') expect(await socket.next(`complete of ${id}`)).toEqual({ id, type: 'complete' });
    }
  });

  it('runs a query over the socket: next, then complete from the server', async () => {
    const socket = await connect(server);
    await socket.init();
    socket.send({ id: 'q', type: 'subscribe', payload: { query: '{ souls { id } }' } });
    expect(await socket.next('next')).toEqual({ id: 'q', type: 'next', payload: { data: { souls: [] } } });
    expect(await socket.next('complete')).toEqual({ id: 'q', type: 'complete' });
  });
});

describe('graphql-transport-ws, server with tokens', () => {
  const tokens: TokenEntry[] = [
    { name: 'studio', token: 'studio-token-0123456789abcdef', scopes: ['read', 'admin'] },
    { name: 'observer', token: 'observer-token-0123456789abc', scopes: ['observe'] },
  ];
  const studio = { authorization: `Bearer ${tokens[0].token}` };
  let server: LiveServer;
  beforeAll(async () => {
    server = await startServer({ app: { tokens, wsInitTimeoutMs: INIT_TIMEOUT_MS } });
  });
  afterAll(() => server.stop());

  for (const [label, payload] of [
    ['an unknown token', { authorization: 'Bearer not-a-token-of-this-server' }],
    ['a token without the Bearer scheme', { authorization: tokens[0].token }],
    ['no connectionParams', undefined],
    ['connectionParams without authorization', { token: tokens[0].token }],
  ] as const) {
    it(`refuses connection_init with ${label}: 4403, no connection_ack`, async () => {
      const socket = await connect(server);
      socket.send(payload === undefined ? { type: 'connection_init' } : { type: 'connection_init', payload });
      expect(await socket.closeCode(label)).toEqual({ code: 4403, reason: 'Forbidden' });
      await expect(socket.next()).rejects.toThrow(/socket closed: 4403/);
      await expectStillAccepting(server, studio);
    });
  }

  it('acknowledges a good token; a subscription streams next and stops on complete, freeing its id', async () => {
    const socket = await connect(server);
    expect(await socket.init(studio)).toEqual({ type: 'connection_ack' });

    const listening = whenListening(server, 'soulChanged');
    socket.send({ id: 'sub', type: 'subscribe', payload: { query: soulChanged } });
    await listening;
    const created = await server.request('mutation { createSoul(input: { name: "Ada", essence: "x" }) { __typename } }', {}, studio);
    expect(created.body).toEqual({ data: { createSoul: { __typename: 'SoulPayload' } } });
    expect(await socket.next('next')).toEqual({ id: 'sub', type: 'next', payload: { data: { soulChanged: { kind: 'CREATED', soul: { name: 'Ada' } } } } });

    // Completed by the client: no complete echoed back, and no further next for that id.
    socket.send({ id: 'sub', type: 'complete' });
    const second = await server.request('mutation { createSoul(input: { name: "Bo", essence: "y" }) { __typename } }', {}, studio);
    expect(second.body).toEqual({ data: { createSoul: { __typename: 'SoulPayload' } } });
    socket.send({ id: 'after', type: 'subscribe', payload: { query: '{ souls(orderBy: NAME) { name } }' } });
    expect(await socket.next('next')).toEqual({ id: 'after', type: 'next', payload: { data: { souls: [{ name: 'Ada' }, { name: 'Bo' }] } } });
    expect(await socket.next('complete')).toEqual({ id: 'after', type: 'complete' });
  });

  it('answers a subscription from a token without the read scope with FORBIDDEN, keeping the socket', async () => {
    const socket = await connect(server);
    await socket.init({ authorization: `Bearer ${tokens[1].token}` });
    socket.send({ id: 's', type: 'subscribe', payload: { query: soulChanged } });
    const answer = await socket.next('the refusal');
    expect(answer).toMatchObject({ id: 's', type: 'next' });
    expect(answer.payload).not.toHaveProperty('data');
    expect(answer.payload.errors.map((e: any) => [e.extensions?.code, e.path])).toEqual([['FORBIDDEN', ['soulChanged']]]);
    expect(await socket.next('complete')).toEqual({ id: 's', type: 'complete' });
    socket.send({ type: 'ping' });
    expect(await socket.next('pong')).toEqual({ type: 'pong' });
  });
});
