// The refusals of the edge on their own (src/server/refusals.ts over a bare HTTP server): what is refused is answered
// from the headers in the form its client reads, and what may go on reaches the next handler with its body unread.
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { callersOf } from '../src/server/auth.ts';
import { createRefusals, type RefusalOptions } from '../src/server/refusals.ts';

const TOKEN = 'tok-refusals-5e1c7a9b3d2f4e6a';
const OPS = 'https://ops.example';
const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A server whose only edge is the refusals: a request they let through is answered 200 "passed" without reading its body. */
async function serve(options: Partial<RefusalOptions> = {}): Promise<{ port: number; passed: () => number }> {
  const refusals = createRefusals({
    originPolicy: { corsOrigins: [OPS], allowedHosts: null },
    callers: callersOf([{ name: 'writer', token: TOKEN, scopes: ['read', 'observe'] }]),
    maxBodyBytes: 1000,
    requestLine: { recordOf: () => undefined },
    isMcp: (req) => req.url === '/mcp',
    graphqlPath: '/graphql',
    ...options,
  });
  let passed = 0;
  const server = createServer((req, res) => {
    if (refusals.refused(req, res)) return;
    passed++;
    res.end('passed');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, passed: () => passed };
}

type Answer = { status: number; headers: IncomingHttpHeaders; text: string };

/** Sends the headers (announcing `declared` body bytes on a POST) and none of the body, and waits for the answer. */
function headersOnly(port: number, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode!, headers: res.headers, text });
        req.destroy();
      });
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

const bearer = { authorization: `Bearer ${TOKEN}` };

describe('refusals from the headers alone', () => {
  it('refuses a body over the limit (413) or without a declared length (411), token or not', async () => {
    const { port, passed } = await serve();
    const large = await headersOnly(port, 'POST', '/graphql', { ...bearer, 'content-length': '1001' });
    expect(large.status).toBe(413);
    expect(JSON.parse(large.text).errors[0]).toEqual({ message: 'request body over the limit of 1000 bytes', extensions: { code: 'PAYLOAD_TOO_LARGE' } });
    expect(large.headers.connection).toBe('close');
    const chunked = await headersOnly(port, 'POST', '/graphql', { ...bearer, 'transfer-encoding': 'chunked' });
    expect(chunked.status).toBe(411);
    expect(JSON.parse(chunked.text).errors[0].extensions.code).toBe('LENGTH_REQUIRED');
    expect(passed()).toBe(0);
  });

  it('refuses a page of another site before its token is looked at', async () => {
    const { port, passed } = await serve();
    const answer = await headersOnly(port, 'POST', '/graphql', { ...bearer, origin: 'https://evil.example', 'content-length': '10' });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.text).errors[0].extensions.code).toBe('FORBIDDEN_ORIGIN');
    expect(passed()).toBe(0);
  });

  it('answers a body without a valid token 401 in the form its client reads: JSON, an event stream, JSON-RPC at /mcp', async () => {
    const { port, passed } = await serve();
    const json = await headersOnly(port, 'POST', '/graphql', { 'content-length': '10', accept: 'application/graphql-response+json' });
    expect(json.status).toBe(401);
    expect(json.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
    expect(json.headers['www-authenticate']).toBe('Bearer realm="souls"');
    expect(JSON.parse(json.text).errors[0].extensions.code).toBe('UNAUTHENTICATED');

    const stream = await headersOnly(port, 'POST', '/graphql', { 'content-length': '10', accept: 'text/event-stream', authorization: 'Bearer tok-not-ours-00000000000' });
    expect(stream.status).toBe(401);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['www-authenticate']).toContain('error="invalid_token"');
    const [next, complete] = stream.text.split('\n\n');
    expect(next.startsWith('event: next\ndata: ')).toBe(true);
    expect(JSON.parse(next.slice('event: next\ndata: '.length)).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(complete).toBe('event: complete\ndata:');

    const mcp = await headersOnly(port, 'POST', '/mcp', { 'content-length': '10' });
    expect(mcp.status).toBe(401);
    expect(JSON.parse(mcp.text)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32001 } });
    expect(passed()).toBe(0);
  });

  it('lets a page of an allowed origin read why it was refused', async () => {
    const { port } = await serve();
    const answer = await headersOnly(port, 'POST', '/graphql', { origin: OPS, 'content-length': '10' });
    expect(answer.status).toBe(401);
    expect(answer.headers['access-control-allow-origin']).toBe(OPS);
  });

  it('lets a request with a valid token, or any request on a server without tokens, go on unread', async () => {
    const tokened = await serve();
    expect((await headersOnly(tokened.port, 'POST', '/graphql', { ...bearer, 'content-length': '10' })).text).toBe('passed');
    const open = await serve({ callers: callersOf(null), originPolicy: { corsOrigins: [], allowedHosts: [] } });
    expect((await headersOnly(open.port, 'POST', '/graphql', { 'content-length': '10' })).text).toBe('passed');
    expect((await headersOnly(open.port, 'POST', '/graphql', { 'content-length': '10', host: 'rebound.example' })).status).toBe(403);
  });
});
