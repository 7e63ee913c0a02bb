// SSE through graphql-sse, the client library, in both of its modes: distinct connections (Yoga's SSE) and the single
// connection mode (src/server/sse.ts: a reserved stream, operations sent beside it). Errors reach the client at once
// and without Yoga's internals, refusals of a token included when the client is configured as docs/api.md says.
import { createClient, type Client, type ExecutionResult } from 'graphql-sse';
import { afterEach, describe, expect, it } from 'vitest';
import { soulsSseClient } from '../examples/clients/graphql-sse.ts';
import type { TokenEntry } from '../src/server/auth.ts';
import { STREAM_TOKEN_HEADER } from '../src/server/sse.ts';
import { serverPerTest, type LiveServer } from './support/server.ts';

const start = serverPerTest(afterEach);
const clients: Client[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.dispose();
});

const READER = 'sse-reader-token-4f2a9c1e7b';
const OTHER = 'sse-other-token-8d3b6e0a5c';
const tokens: TokenEntry[] = [
  { name: 'reader', token: READER, scopes: ['read', 'admin'] },
  { name: 'other', token: OTHER, scopes: ['read'] },
];
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const SOUL_CHANGED = 'subscription { soulChanged { kind soul { name } } }';

function client(server: LiveServer, options: Partial<Parameters<typeof createClient>[0]> = {}): Client {
  const made = createClient({ url: server.url, retryAttempts: 0, ...options });
  clients.push(made);
  return made;
}

/** The first result of an operation (the operation is then completed or cancelled). */
async function first(client: Client, query: string, variables?: Record<string, unknown>): Promise<ExecutionResult> {
  for await (const result of client.iterate({ query, variables })) return result as ExecutionResult;
  throw new Error(`no result for ${query}`);
}

/**
 * The first event of a subscription: writes (each changing the soul) until it arrives, since the client cannot say
 * when the server has subscribed; waits for a state, not for a time.
 */
async function firstEvent(server: LiveServer, client: Client, auth: Record<string, string> = {}): Promise<ExecutionResult> {
  const events = client.iterate({ query: SOUL_CHANGED });
  const next = events.next();
  let arrived: IteratorResult<unknown> | null = null;
  void next.then((result) => (arrived = result));
  for (let write = 1; arrived === null; write++) {
    await server.data('mutation($essence: String!) { updateSoul(id: "1", input: { essence: $essence }) { __typename } }', { essence: `Reads the room (${write}).` }, auth);
    await new Promise((resolve) => setImmediate(resolve));
    if (write > 2000) throw new Error('no event arrived after 2,000 writes');
  }
  await events.return?.();
  return (await next).value as ExecutionResult;
}

/** Priced over maxSubscriptionCost (100,000): 500 clusters of up to 500 members each. */
const WIDE_SUBSCRIPTION = 'subscription { soulChanged { soul { evidence { clusters(first: 500) { members(first: 500) { id } } } } } }';

const createMira = 'mutation { createSoul(input: { name: "Mira", essence: "Reads the room." }) { __typename } }';

describe('graphql-sse in distinct connections mode (its default)', () => {
  it('runs a query and follows a subscription', async () => {
    const server = await start();
    await server.data(createMira);
    const sse = client(server);
    expect(await first(sse, '{ souls { name } }')).toEqual({ data: { souls: [{ name: 'Mira' }] } });
    expect(await firstEvent(server, sse)).toEqual({ data: { soulChanged: { kind: 'UPDATED', soul: { name: 'Mira' } } } });
  });

  it("answers a refused subscription with its error, without Yoga's extensions.http", async () => {
    const server = await start();
    const result = await first(client(server), WIDE_SUBSCRIPTION);
    expect(result.errors?.[0].extensions).toMatchObject({ code: 'COST_LIMIT' });
    expect(result.errors?.[0].extensions).not.toHaveProperty('http');
  });
});

describe('graphql-sse in single connection mode', () => {
  it('runs queries, mutations and a subscription over one reserved stream', async () => {
    const server = await start();
    const sse = client(server, { singleConnection: true });
    expect(await first(sse, createMira)).toEqual({ data: { createSoul: { __typename: 'SoulPayload' } } });
    expect(await first(sse, '{ souls { name } }')).toEqual({ data: { souls: [{ name: 'Mira' }] } });
    expect(await firstEvent(server, sse)).toEqual({ data: { soulChanged: { kind: 'UPDATED', soul: { name: 'Mira' } } } });
  });

  it("reports a refused operation at once (validation, a limit), without Yoga's extensions.http", async () => {
    const server = await start();
    const sse = client(server, { singleConnection: true });
    const invalid = await first(sse, '{ nope }');
    expect(invalid.errors?.[0]).toMatchObject({ message: 'Cannot query field "nope" on type "Query".', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } });
    const costly = await first(sse, WIDE_SUBSCRIPTION);
    expect(costly.errors?.[0].extensions).toMatchObject({ code: 'COST_LIMIT', setting: 'maxSubscriptionCost' });
    const deep = await first(sse, `{ ${'souls { traits { soul { '.repeat(5)}id${' } } }'.repeat(5)} }`);
    expect(deep.errors?.[0].message).toMatch(/depth limit of 12 exceeded/);
    for (const error of [...(invalid.errors ?? []), ...(costly.errors ?? [])]) expect(error.extensions).not.toHaveProperty('http');
  });

  it('works with tokens, and only the caller that reserved a stream may open it or send operations on it', async () => {
    const server = await start({ app: { tokens } });
    const sse = client(server, { singleConnection: true, headers: bearer(READER) });
    expect(await first(sse, createMira)).toEqual({ data: { createSoul: { __typename: 'SoulPayload' } } });
    expect(await firstEvent(server, sse, bearer(READER))).toMatchObject({ data: { soulChanged: { soul: { name: 'Mira' } } } });

    const reserved = await fetch(server.url, { method: 'PUT', headers: bearer(READER) });
    expect(reserved.status).toBe(201);
    const token = await reserved.text();
    const stolen = await fetch(server.url, { headers: { ...bearer(OTHER), accept: 'text/event-stream', [STREAM_TOKEN_HEADER]: token } });
    expect(stolen.status).toBe(403);
    expect((await stolen.json()).errors[0].extensions.code).toBe('FORBIDDEN');
    const anonymous = await fetch(`${server.url}?token=${token}`, { headers: { accept: 'text/event-stream' } });
    expect(anonymous.status).toBe(401);
    await anonymous.body?.cancel();
  });

  it('answers mistakes plainly: an unknown token 404, an operation before the stream is open 409, one without an id 400', async () => {
    const server = await start();
    const unknown = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json', [STREAM_TOKEN_HEADER]: 'not-a-reservation' }, body: '{"query":"{ souls { id } }"}' });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).errors[0].extensions.code).toBe('STREAM_NOT_FOUND');
    const token = await (await fetch(server.url, { method: 'PUT' })).text();
    const operation = (extensions: object) => fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json', [STREAM_TOKEN_HEADER]: token }, body: JSON.stringify({ query: '{ souls { id } }', extensions }) });
    const early = await operation({ operationId: 'a' });
    expect(early.status).toBe(409);
    expect((await early.json()).errors[0].extensions.code).toBe('STREAM_NOT_OPEN');
    const stream = new AbortController();
    const opened = await fetch(server.url, { headers: { accept: 'text/event-stream', [STREAM_TOKEN_HEADER]: token }, signal: stream.signal });
    try {
      expect(opened.status).toBe(200);
      const again = await fetch(server.url, { headers: { accept: 'text/event-stream', [STREAM_TOKEN_HEADER]: token } });
      expect(again.status).toBe(409);
      const nameless = await operation({});
      expect(nameless.status).toBe(400);
      expect((await nameless.json()).errors[0].message).toContain('operationId');
      expect((await operation({ operationId: 'a' })).status).toBe(202);
    } finally {
      stream.abort();
    }
  });

  it('serves a page of an allowed origin: its preflight may PUT, DELETE and send the stream token, and it can read the answers', async () => {
    const ops = 'https://ops.example';
    const server = await start({ app: { corsOrigins: [ops] } });
    const preflight = await fetch(server.url, { method: 'OPTIONS', headers: { origin: ops, 'access-control-request-method': 'PUT', 'access-control-request-headers': STREAM_TOKEN_HEADER } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('PUT');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('DELETE');
    expect(preflight.headers.get('access-control-allow-headers')).toContain(STREAM_TOKEN_HEADER);
    const reserved = await fetch(server.url, { method: 'PUT', headers: { origin: ops } });
    expect(reserved.status).toBe(201);
    expect(reserved.headers.get('access-control-allow-origin')).toBe(ops);
    const elsewhere = await fetch(server.url, { method: 'PUT', headers: { origin: 'https://evil.example' } });
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('lets a reservation lapse when its stream is not opened in time, and bounds the streams of the server', async () => {
    const server = await start({ app: { sseReservationTimeoutMs: 50, limits: { maxSubscriptions: 2 } } });
    const lapsing = await (await fetch(server.url, { method: 'PUT' })).text();
    const openWith = (token: string) => fetch(server.url, { method: 'DELETE', headers: { [STREAM_TOKEN_HEADER]: token } }).then((r) => r.status);
    // A DELETE answers 400 (no operationId) while the stream is reserved, 404 once it has lapsed.
    expect(await openWith(lapsing)).toBe(400);
    for (let polls = 0; (await openWith(lapsing)) !== 404; polls++) {
      if (polls > 1000) throw new Error('the reservation never lapsed');
      await new Promise((resolve) => setImmediate(resolve));
    }
    const held = [await fetch(server.url, { method: 'PUT' }), await fetch(server.url, { method: 'PUT' })];
    expect(held.map((r) => r.status)).toEqual([201, 201]);
    const over = await fetch(server.url, { method: 'PUT' });
    expect(over.status).toBe(503);
    expect((await over.json()).errors[0]).toMatchObject({ extensions: { code: 'TOO_MANY_STREAMS' } });
  });
});

describe('a refused token, as docs/api.md configures graphql-sse (examples/clients/graphql-sse.ts)', () => {
  for (const singleConnection of [false, true]) {
    const mode = singleConnection ? 'single connection' : 'distinct connections';

    it(`reaches the client at once with retryAttempts: 0, the server's answer readable (${mode})`, async () => {
      const server = await start({ app: { tokens } });
      const sse = client(server, { singleConnection, headers: bearer('sse-not-a-known-token-000') });
      const error = await first(sse, '{ souls { id } }').then(() => null, (refused: Error & { response?: Response }) => refused);
      expect(error?.response?.status).toBe(401);
      expect(error?.response?.headers.get('www-authenticate')).toContain('error="invalid_token"');
      // The single connection mode aborts the reservation's request, body and all.
      if (!singleConnection) expect(await error?.response?.text()).toContain('"UNAUTHENTICATED"');
    });

    it(`reaches the client at once with a retry that gives up after a refusal, network failures still retried (${mode})`, async () => {
      const server = await start({ app: { tokens } });
      const sse = soulsSseClient(server.url, 'sse-not-a-known-token-000', { singleConnection });
      clients.push(sse);
      await expect(first(sse, '{ souls { id } }')).rejects.toThrow('refused with HTTP 401: check the token');
    });
  }
});
