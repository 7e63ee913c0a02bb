// Request bodies the server will not hold: an unauthenticated one is refused from its headers before any of it is
// read (GraphQL, MCP, any path), and one that arrives too slowly is cut by the body timeout.
import { request, type IncomingHttpHeaders } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { TokenEntry } from '../src/server/auth.ts';
import { serverPerTest, type LiveServer } from './support/server.ts';

const start = serverPerTest(afterEach);
const TOKEN = 'tok-bodies-8d2f4a6c1e3b5d7f9a0c';
const tokens: TokenEntry[] = [{ name: 'writer', token: TOKEN, scopes: ['read', 'observe', 'refine', 'admin'] }];

type Answer = { status: number; headers: IncomingHttpHeaders; text: string; sent: number };

/**
 * POSTs headers announcing `declared` bytes, then writes `send` bytes of body and nothing more, and waits for the
 * server's answer: a server that reads bodies before deciding would wait for the rest of it.
 */
function postHeadersFirst(server: LiveServer, path: string, headers: Record<string, string>, declared: number, send = 0): Promise<Answer> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': String(declared), ...headers } });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode!, headers: res.headers, text, sent: send });
        req.destroy();
      });
    });
    req.on('error', reject);
    req.flushHeaders();
    if (send > 0) req.write('x'.repeat(send));
  });
}

describe('bodies from callers without a valid token', () => {
  const bodyBytes = 15 * 1024 * 1024;

  it('refuses a GraphQL POST from its headers, before any of its body is sent', async () => {
    const server = await start({ app: { tokens: tokens } });
    for (const headers of [{}, { authorization: 'Bearer tok-not-one-of-ours-0000000000' }] as Record<string, string>[]) {
      const answer = await postHeadersFirst(server, '/graphql', headers, bodyBytes);
      expect(answer.status, answer.text).toBe(401);
      expect(answer.headers['www-authenticate']).toMatch(/^Bearer realm="souls"/);
      expect(answer.headers.connection).toBe('close');
      expect(JSON.parse(answer.text)).toEqual({ errors: [{ message: 'a valid bearer token is required (Authorization: Bearer <token>)', extensions: { code: 'UNAUTHENTICATED' } }] });
    }
  });

  it('refuses an MCP POST from its headers too, with a JSON-RPC error', async () => {
    const server = await start({ app: { tokens: tokens } });
    const answer = await postHeadersFirst(server, '/mcp', { accept: 'application/json, text/event-stream' }, bodyBytes);
    expect(answer.status, answer.text).toBe(401);
    expect(JSON.parse(answer.text)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32001 } });
  });

  it('refuses a POST to any other path the same way', async () => {
    const server = await start({ app: { tokens: tokens } });
    const answer = await postHeadersFirst(server, '/anything', {}, bodyBytes);
    expect(answer.status, answer.text).toBe(401);
  });

  it('answers an SSE client in its own form', async () => {
    const server = await start({ app: { tokens: tokens } });
    const answer = await postHeadersFirst(server, '/graphql', { accept: 'text/event-stream' }, bodyBytes);
    expect(answer.status).toBe(401);
    expect(answer.headers['content-type']).toMatch(/^text\/event-stream/);
    const next = answer.text.split('\n\n').find((block) => block.startsWith('event: next'))!;
    expect(JSON.parse(next.slice(next.indexOf('data:') + 5)).errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });

  it('applies the body limit to /mcp as to /graphql, from the declared length', async () => {
    const server = await start({ app: { tokens: tokens, limits: { maxBodyBytes: 4096 } } });
    for (const path of ['/graphql', '/mcp']) {
      const answer = await postHeadersFirst(server, path, { authorization: `Bearer ${TOKEN}`, accept: 'application/json, text/event-stream' }, 4097);
      expect(answer.status, `${path}: ${answer.text}`).toBe(413);
      expect(JSON.parse(answer.text).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
    }
  });
});

describe('the body timeout', () => {
  it('answers 408 and closes the connection when a body stops arriving', async () => {
    const server = await start({ app: { tokens: tokens, limits: { bodyTimeoutMs: 300 } } });
    const answer = await postHeadersFirst(server, '/graphql', { authorization: `Bearer ${TOKEN}` }, 100_000, 1000);
    expect(answer.status).toBe(408);
    expect(answer.headers.connection).toBe('close');
  });

  it('cuts a slow body on a server without tokens too', async () => {
    const server = await start({ app: { limits: { bodyTimeoutMs: 300 } } });
    const answer = await postHeadersFirst(server, '/mcp', { accept: 'application/json, text/event-stream' }, 100_000, 10);
    expect(answer.status).toBe(408);
  });

  it('leaves a body that arrives in time alone', async () => {
    const server = await start({ app: { tokens: tokens, limits: { bodyTimeoutMs: 300 } } });
    const { status, body } = await server.request('{ settings { traitLimit } }', undefined, { authorization: `Bearer ${TOKEN}` });
    expect(status).toBe(200);
    expect(body.data.settings.traitLimit).toBeGreaterThan(0);
  });
});
