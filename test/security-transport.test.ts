// Attacks on the transport, from outside, as a hostile page or client would make them: cross-origin requests and
// WebSocket upgrades, DNS rebinding (a foreign Host), oversized WebSocket messages before and after connection_ack,
// deeply nested documents, malformed URLs and ids that are not canonical decimals.
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../src/server/config.ts';
import { PRE_ACK_MAX_BYTES, type AppOptions } from '../src/server/app.ts';
import { ValidationError } from '../src/engine/index.ts';
import { nestingDepth } from '../src/server/limits.ts';
import { startServer, type LiveServer } from './support/server.ts';

const EVIL = 'https://evil.example';
const TOKEN = 'transport-test-token-51c9e2';
const servers: LiveServer[] = [];
const sockets: WebSocket[] = [];

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function serve(app: Omit<AppOptions, 'db'> = {}): Promise<LiveServer> {
  const server = await startServer({ app });
  servers.push(server);
  return server;
}

type Raw = { status: number; headers: Record<string, string | string[] | undefined>; body: string };

/** One HTTP request with exactly these headers (fetch would not let a test set Host or Origin). */
function raw(url: string, options: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Raw> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: target.hostname, port: target.port, method: options.method ?? 'GET', path: options.path ?? target.pathname, headers: options.headers },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

function post(server: LiveServer, query: string, headers: Record<string, string> = {}, variables?: Record<string, unknown>): Promise<Raw> {
  const body = JSON.stringify({ query, variables });
  return raw(server.url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } });
}

const hostOf = (server: LiveServer) => new URL(server.url).host;
const soulCount = async (server: LiveServer) => (await server.request('{ souls { id } }')).body.data.souls.length;
const createSoul = `mutation { createSoul(input: { name: "Stolen", essence: "Made by another site." }) { __typename } }`;

/** How a WebSocket upgrade ends: open, or refused with an HTTP status. */
function upgrade(url: string, headers: Record<string, string>): Promise<{ open: true; socket: WebSocket } | { open: false; status: number }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(url, 'graphql-transport-ws', { headers });
    sockets.push(socket);
    socket.on('error', () => {});
    socket.once('open', () => resolve({ open: true, socket }));
    socket.once('unexpected-response', (_, res) => resolve({ open: false, status: res.statusCode ?? 0 }));
  });
}

function closed(socket: WebSocket): Promise<number> {
  return new Promise((resolve) => socket.once('close', (code) => resolve(code)));
}

function nextMessage(socket: WebSocket): Promise<any> {
  return new Promise((resolve) => socket.once('message', (data) => resolve(JSON.parse(String(data)))));
}

describe('cross-origin pages', () => {
  it('refuses a preflight and a write from another site, and writes nothing', async () => {
    const server = await serve();
    const preflight = await raw(server.url, {
      method: 'OPTIONS',
      headers: { origin: EVIL, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, x-graphql-yoga-csrf' },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    expect(preflight.headers['access-control-allow-credentials']).toBeUndefined();

    const write = await post(server, createSoul, { origin: EVIL, 'x-graphql-yoga-csrf': '1' });
    expect(write.status).toBe(403);
    expect(write.headers['access-control-allow-origin']).toBeUndefined();
    expect(JSON.parse(write.body).errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN_ORIGIN' } });
    expect(JSON.parse(write.body).errors[0].message).toContain('--cors-origin https://evil.example');
    // A simple (unpreflighted) form post from the site, and a sandboxed page's "null" origin, are refused too.
    expect((await post(server, createSoul, { origin: EVIL, 'content-type': 'text/plain' })).status).toBe(403);
    expect((await post(server, createSoul, { origin: 'null' })).status).toBe(403);
    expect(await soulCount(server)).toBe(0);
  });

  it('serves pages of its own origin, and clients that send no Origin, without CORS headers', async () => {
    const server = await serve();
    const own = await post(server, createSoul, { origin: `http://${hostOf(server)}` });
    expect(own.status).toBe(200);
    expect(own.headers['access-control-allow-origin']).toBeUndefined();
    expect((await post(server, '{ souls { id } }')).status).toBe(200);
    expect(await soulCount(server)).toBe(1);
  });

  it('lets an allow-listed origin in with CORS headers for bearer tokens, and no credentials', async () => {
    const allowed = 'https://ops.example';
    const server = await serve({ corsOrigins: [allowed] });
    const preflight = await raw(server.url, {
      method: 'OPTIONS',
      headers: { origin: allowed, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(allowed);
    expect(String(preflight.headers['access-control-allow-headers'])).toContain('authorization');
    expect(preflight.headers['access-control-allow-credentials']).toBeUndefined();
    const write = await post(server, createSoul, { origin: allowed });
    expect(write.status).toBe(200);
    expect(write.headers['access-control-allow-origin']).toBe(allowed);
    expect((await post(server, createSoul, { origin: 'https://ops.example.evil.example' })).status).toBe(403);
  });

  it('refuses SSE subscriptions from another site', async () => {
    const server = await serve();
    const path = `/graphql?query=${encodeURIComponent('subscription { soulChanged(soulId: "1") { soul { id } } }')}`;
    const refused = await raw(server.url, { path, headers: { accept: 'text/event-stream', origin: EVIL, 'x-graphql-yoga-csrf': '1' } });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).errors[0].extensions.code).toBe('FORBIDDEN_ORIGIN');
  });

  it('refuses WebSocket upgrades from another site; its own pages connect', async () => {
    const server = await serve();
    expect(await upgrade(server.wsUrl, { origin: EVIL })).toEqual({ open: false, status: 403 });
    const own = await upgrade(server.wsUrl, { origin: `http://${hostOf(server)}` });
    expect(own.open).toBe(true);
    const allowed = await serve({ corsOrigins: [EVIL] });
    expect((await upgrade(allowed.wsUrl, { origin: EVIL })).open).toBe(true);
  });
});

describe('GET without a browser (SPEC §13: clients without a browser need no CSRF header)', () => {
  const query = '{ souls { id } }';
  const getQuery = (server: LiveServer, headers: Record<string, string> = {}, text = query) =>
    raw(server.url, { path: `/graphql?query=${encodeURIComponent(text)}`, headers: { accept: 'application/json', ...headers } });

  it('answers a GET query that carries no Origin, no cookie and no Sec-Fetch-Site, as urql and curl send it', async () => {
    const server = await serve();
    const answer = await getQuery(server);
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ data: { souls: [] } });
  });

  it("answers a browser's GET from a page of this origin (Sec-Fetch-Site: same-origin) or typed in the address bar (none)", async () => {
    const server = await serve();
    for (const site of ['same-origin', 'none']) expect((await getQuery(server, { 'sec-fetch-site': site })).status, site).toBe(200);
  });

  it("refuses what a page of another site can send: its Origin, Sec-Fetch-Site cross-site or same-site, or the browser's cookies", async () => {
    const server = await serve();
    const origin = await getQuery(server, { origin: EVIL });
    expect(origin.status).toBe(403);
    expect(JSON.parse(origin.body).errors[0].extensions.code).toBe('FORBIDDEN_ORIGIN');
    for (const headers of [{ 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }, { cookie: 'session=1' }, { cookie: 'session=1', 'sec-fetch-site': 'same-origin' }] as Record<string, string>[]) {
      const refused = await getQuery(server, headers);
      expect(refused.status, JSON.stringify(headers)).toBe(403);
      const [error] = JSON.parse(refused.body).errors;
      expect(error.extensions.code).toBe('CSRF_HEADER_REQUIRED');
      expect(error.message).toContain('x-graphql-yoga-csrf');
      expect(JSON.parse(refused.body)).not.toHaveProperty('data');
      // The header a page cannot add without a preflight lets the same request through.
      expect((await getQuery(server, { ...headers, 'x-graphql-yoga-csrf': '1' })).status, JSON.stringify(headers)).toBe(200);
    }
  });

  it('never runs a mutation over GET, and a cross-site form post still writes nothing', async () => {
    const server = await serve();
    const mutation = await getQuery(server, {}, createSoul);
    expect(mutation.status).toBe(405);
    const form = await raw(server.url, {
      method: 'POST',
      body: `query=${encodeURIComponent(createSoul)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
    });
    expect(form.status).toBe(403);
    expect(await soulCount(server)).toBe(0);
  });

  it('answers an SSE subscription over GET without the header, as a browser EventSource of this origin sends it', async () => {
    const server = await serve();
    const path = `/graphql?query=${encodeURIComponent('subscription { soulChanged { kind } }')}`;
    const controller = new AbortController();
    try {
      const response = await fetch(new URL(path, server.url), { headers: { accept: 'text/event-stream', 'sec-fetch-site': 'same-origin' }, signal: controller.signal });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream');
    } finally {
      controller.abort();
    }
  });
});

describe('tokens: no valid token is 401 on every path and method', () => {
  const tokens = [{ name: 'ops', token: TOKEN, scopes: ['read' as const] }];
  const expect401 = (answer: Raw, what: string) => {
    expect(answer.status, `${what}: ${answer.body}`).toBe(401);
    expect(String(answer.headers['www-authenticate']), what).toMatch(/^Bearer realm="souls"/);
  };

  it('answers a GET query and an SSE GET without a token 401 with the challenge, not 403', async () => {
    const server = await serve({ tokens });
    const path = `/graphql?query=${encodeURIComponent('{ souls { id } }')}`;
    const query = await raw(server.url, { path, headers: { accept: 'application/json' } });
    expect401(query, 'GET query');
    expect(JSON.parse(query.body).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const sse = await raw(server.url, { path: `/graphql?query=${encodeURIComponent('subscription { soulChanged { kind } }')}`, headers: { accept: 'text/event-stream' } });
    expect401(sse, 'SSE GET');
    expect(sse.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(sse.body).toContain('"UNAUTHENTICATED"');
    const wrong = await raw(server.url, { path, headers: { accept: 'application/json', authorization: 'Bearer transport-test-not-a-token' } });
    expect401(wrong, 'GET with an unknown token');
    expect(wrong.headers['www-authenticate']).toContain('error="invalid_token"');
    expect((await raw(server.url, { path, headers: { accept: 'application/json', authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });

  it('answers every method on the API, /mcp, /metrics and unknown paths 401', async () => {
    const server = await serve({ tokens });
    for (const path of ['/graphql', '/mcp', '/metrics', '/nothing-here']) {
      for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
        const answer = await raw(server.url, { method, path, headers: { accept: 'application/json', 'content-length': '0' } });
        expect401(answer, `${method} ${path}`);
      }
    }
  });

  it('still serves what a browser fetches without a token: the web app, GraphiQL, probes and CORS preflights', async () => {
    const server = await serve({ tokens, corsOrigins: ['https://ops.example'] });
    expect((await raw(server.url, { path: '/', headers: { accept: 'text/html' } })).status).toBe(200);
    const graphiql = await raw(server.url, { path: '/graphql', headers: { accept: 'text/html' } });
    expect(graphiql.status).toBe(200);
    expect(graphiql.headers['content-type']).toContain('text/html');
    expect((await raw(server.url, { path: '/health' })).status).toBe(200);
    const preflight = await raw(server.url, { method: 'OPTIONS', headers: { origin: 'https://ops.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
    expect(preflight.status).toBe(204);
  });
});

describe('Host names (DNS rebinding)', () => {
  it('without tokens serves only loopback names, plus --allowed-host', async () => {
    const server = await serve();
    const port = new URL(server.url).port;
    const rebound = await post(server, createSoul, { host: `evil.example:${port}` });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN_HOST' } });
    expect((await raw(server.url, { path: '/', headers: { host: `evil.example:${port}` } })).status).toBe(403);
    expect(await upgrade(server.wsUrl, { host: `evil.example:${port}` })).toEqual({ open: false, status: 403 });
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'LOCALHOST']) {
      expect((await post(server, '{ souls { id } }', { host })).status, host).toBe(200);
    }
    expect(await soulCount(server)).toBe(0);

    const named = await serve({ allowedHosts: ['souls.internal'] });
    expect((await post(named, '{ souls { id } }', { host: `souls.internal:${port}` })).status).toBe(200);
    expect((await post(named, '{ souls { id } }', { host: `evil.example:${port}` })).status).toBe(403);
  });

  it('with tokens serves any Host, since a page cannot hold the token', async () => {
    const server = await serve({ tokens: [{ name: 'ops', token: TOKEN, scopes: ['read'] }] });
    const answer = await post(server, '{ souls { id } }', { host: 'souls.example.com', authorization: `Bearer ${TOKEN}` });
    expect(answer.status).toBe(200);
  });
});

describe('settings for the origin policy', () => {
  it('reads --cors-origin (repeatable), SOULS_CORS_ORIGINS and --allowed-host, normalized', () => {
    const config = loadConfig(['--cors-origin', 'https://ops.example/', '--cors-origin', 'http://localhost:5173', '--allowed-host', 'Souls.Internal'], {});
    expect(config.corsOrigins).toEqual(['https://ops.example', 'http://localhost:5173']);
    expect(config.allowedHosts).toEqual(['souls.internal']);
    expect(loadConfig([], { SOULS_CORS_ORIGINS: 'https://a.example, https://b.example', SOULS_ALLOWED_HOSTS: 'x.lan' })).toMatchObject({
      corsOrigins: ['https://a.example', 'https://b.example'],
      allowedHosts: ['x.lan'],
    });
    expect(loadConfig([], {})).toMatchObject({ corsOrigins: [], allowedHosts: [] });
  });

  it('refuses what is not an origin or a host name, naming the setting', () => {
    for (const [argv, env, where] of [
      [['--cors-origin', 'https://ops.example/path'], {}, '--cors-origin'],
      [['--cors-origin', '*'], {}, '--cors-origin'],
      [[], { SOULS_CORS_ORIGINS: 'ftp://files.example' }, 'SOULS_CORS_ORIGINS'],
      [['--allowed-host', 'http://souls.internal'], {}, '--allowed-host'],
      [[], { SOULS_ALLOWED_HOSTS: 'souls.internal:4000' }, 'SOULS_ALLOWED_HOSTS'],
    ] as const) {
      let error: unknown;
      try {
        loadConfig([...argv], env);
      } catch (e) {
        error = e;
      }
      expect(error, String(argv)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).field).toBe(where);
    }
  });
});

describe('WebSocket message sizes', () => {
  it('closes a socket that sends more than a connection_init needs before connection_ack (1009), token or not', async () => {
    const server = await serve({ tokens: [{ name: 'ops', token: TOKEN, scopes: ['read'] }] });
    const opened = await upgrade(server.wsUrl, {});
    if (!opened.open) throw new Error('the upgrade was refused');
    const code = closed(opened.socket);
    opened.socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: 'Bearer nope', padding: 'x'.repeat(4 * PRE_ACK_MAX_BYTES) } }));
    expect(await code).toBe(1009);
  });

  it('accepts messages up to the body limit after connection_ack, and closes one over it (1009)', async () => {
    const server = await serve({ limits: { maxBodyBytes: 300_000 } });
    const opened = await upgrade(server.wsUrl, {});
    if (!opened.open) throw new Error('the upgrade was refused');
    const { socket } = opened;
    socket.send(JSON.stringify({ type: 'connection_init' }));
    expect((await nextMessage(socket)).type).toBe('connection_ack');
    // 200 KB of variables: over the pre-ack bound, under the body limit, answered.
    socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: '{ souls { id } }', variables: { pad: 'y'.repeat(200_000) } } }));
    expect(await nextMessage(socket)).toMatchObject({ id: '1', type: 'next', payload: { data: { souls: [] } } });
    const code = closed(socket);
    socket.send(JSON.stringify({ id: '2', type: 'subscribe', payload: { query: '{ souls { id } }', variables: { pad: 'z'.repeat(400_000) } } }));
    expect(await code).toBe(1009);
  });
});

describe('deeply nested documents', () => {
  const nested = (depth: number) => `{ souls(orderBy: ${'['.repeat(depth)}READINESS${']'.repeat(depth)}) { id } }`;

  it('measures nesting outside strings and comments', () => {
    expect(nestingDepth('{ a { b(x: [[1]]) } }')).toBe(5);
    expect(nestingDepth('{ a(s: "{{{[[[") # ((((\n }')).toBe(2);
    expect(nestingDepth('{ a(s: """ {{{ \\""" [[[ """) }')).toBe(2);
    expect(nestingDepth('['.repeat(10_000), 100)).toBe(101);
  });

  it('refuses a 2,500-deep list literal as a request error, without a stack in the log', async () => {
    const server = await serve();
    const logged = vi.spyOn(console, 'error');
    try {
      const answer = await post(server, nested(2_500), { accept: 'application/graphql-response+json' });
      expect(answer.status).toBe(400);
      const error = JSON.parse(answer.body).errors[0];
      expect(error.message).toBe('the document nests brackets, braces or parentheses more than 100 deep');
      expect(error.extensions.code).toBe('BAD_REQUEST');
      expect(logged).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
    }
    // Under application/json, a request error is 200 with errors and no data (GraphQL over HTTP).
    const plain = await post(server, nested(2_500));
    expect(plain.status).toBe(200);
    expect(JSON.parse(plain.body).data).toBeUndefined();
  });

  it('refuses it over WebSocket as an error of that operation, and the socket stays open', async () => {
    const server = await serve();
    const opened = await upgrade(server.wsUrl, {});
    if (!opened.open) throw new Error('the upgrade was refused');
    const { socket } = opened;
    socket.send(JSON.stringify({ type: 'connection_init' }));
    await nextMessage(socket);
    socket.send(JSON.stringify({ id: 'deep', type: 'subscribe', payload: { query: nested(2_500) } }));
    const answer = await nextMessage(socket);
    expect(answer).toMatchObject({ id: 'deep', type: 'error' });
    expect(answer.payload[0].message).toContain('more than 100 deep');
    socket.send(JSON.stringify({ id: 'after', type: 'subscribe', payload: { query: '{ souls { id } }' } }));
    expect(await nextMessage(socket)).toMatchObject({ id: 'after', type: 'next' });
  });

  it('still runs documents within the bound, and the bound is a setting', async () => {
    const server = await serve({ limits: { maxNesting: 8 } });
    expect(JSON.parse((await post(server, nested(4))).body).errors[0].message).not.toContain('deep');
    expect(JSON.parse((await post(server, nested(8))).body).errors[0].message).toContain('more than 8 deep');
    expect(loadConfig(['--max-nesting', '40'], {}).limits.maxNesting).toBe(40);
  });
});

describe('malformed URLs and ids', () => {
  it('answers 400 to a malformed percent escape, not 500', async () => {
    const server = await serve();
    const answer = await raw(server.url, { path: '/assets/%E0%A4%A' });
    expect(answer.status).toBe(400);
  });

  it('treats ids with leading zeros as naming nothing', async () => {
    const server = await serve();
    await server.request('mutation { createSoul(input: { name: "Mira", essence: "Counts." }) { __typename } }');
    const found = await server.request('{ a: soul(id: "1") { id } b: soul(id: "01") { id } c: soul(id: "001") { id } }');
    expect(found.body.data).toEqual({ a: { id: '1' }, b: null, c: null });
    const retired = await server.request('mutation { retireSoul(id: "01") { __typename ... on Error { message } } }');
    expect(retired.body.data.retireSoul.__typename).not.toBe('SoulPayload');
    expect((await server.request('{ soul(id: "1") { dormant } }')).body.data.soul.dormant).toBe(false);
  });
});
