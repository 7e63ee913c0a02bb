import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startServer, type LiveServer } from './support/server.ts';

const GRAPHQL_RESPONSE = 'application/graphql-response+json';

let server: LiveServer;

beforeEach(async () => {
  server = await startServer();
});

afterEach(async () => {
  vi.restoreAllMocks();
  await server.stop();
});

async function raw(url: string, init: RequestInit = {}): Promise<{ status: number; contentType: string; text: string; headers: Headers }> {
  const response = await fetch(url, init);
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text(), headers: response.headers };
}

function post(body: string, accept = GRAPHQL_RESPONSE) {
  return raw(server.url, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body });
}

function get(query: string, extra: Record<string, string> = {}) {
  const params = new URLSearchParams({ query, ...extra });
  return raw(`${server.url}?${params}`, { headers: { accept: GRAPHQL_RESPONSE, 'x-graphql-yoga-csrf': '1' } });
}

/** A response body must never reveal where the code lives or how it failed inside. */
function expectNoInternals(text: string): void {
  expect(text).not.toMatch(/(?:^|\\n|\n)\s*at [^\n]*?:\d+:\d+/); // stack frames, raw or JSON-escaped
  expect(text).not.toMatch(/\.ts\b/); // source paths
  expect(text).not.toMatch(/\/work\/|file:\/\/|node_modules/);
  expect(text).not.toMatch(/"stack"/);
}

async function soulCount(): Promise<number> {
  const { body } = await server.request('{ souls { id } dormantSouls { id } }');
  return body.data.souls.length + body.data.dormantSouls.length;
}

describe('GraphQL over HTTP', () => {
  it('serves a query sent with GET and a query string, variables included', async () => {
    const plain = await get('{ settings { traitLimit crystallizationThreshold } }');
    expect(plain.status).toBe(200);
    expect(plain.contentType).toContain(GRAPHQL_RESPONSE);
    expect(JSON.parse(plain.text)).toEqual({ data: { settings: { traitLimit: 10, crystallizationThreshold: 3 } } });

    await server.request('mutation { createSoul(input: { name: "Ada", essence: "Calm." }) { __typename } }');
    const withVariables = await get('query Find($name: String!) { soulByName(name: $name) { id name } }', { variables: JSON.stringify({ name: 'Ada' }) });
    expect(withVariables.status).toBe(200);
    expect(JSON.parse(withVariables.text)).toEqual({ data: { soulByName: { id: '1', name: 'Ada' } } });
  });

  it('refuses a mutation sent with GET (405, Allow: POST) and writes nothing', async () => {
    const response = await get('mutation { createSoul(input: { name: "Ada", essence: "Calm." }) { __typename } }');
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
    const body = JSON.parse(response.text);
    expect(body.data).toBeUndefined();
    expect(body.errors).toHaveLength(1);
    expect(body.errors[0].message).toMatch(/mutation.*POST/i);
    expectNoInternals(response.text);
    expect(await soulCount()).toBe(0);
  });

  it('answers a malformed JSON body with 400 and a GraphQL error, never a 500', async () => {
    for (const body of ['{"query": ', 'not json at all', '{"query": "{ settings { traitLimit } }",}']) {
      const response = await post(body);
      expect(response.status, body).toBe(400);
      const parsed = JSON.parse(response.text);
      expect(parsed.errors[0].message).toBe('POST body sent invalid JSON.');
      expect(parsed.errors[0].extensions.code).toBe('BAD_REQUEST');
      expect(parsed.data).toBeUndefined();
      expectNoInternals(response.text);
    }
  });

  it('answers a body without a query with 400', async () => {
    const response = await post('{}');
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text).errors[0].message).toBe('Must provide query string.');
  });

  it('answers a syntax error with a parse error naming the location', async () => {
    const response = await post(JSON.stringify({ query: '{ settings { traitLimit ' }));
    expect(response.status).toBe(400);
    const body = JSON.parse(response.text);
    expect(body.data).toBeUndefined();
    expect(body.errors).toEqual([{ message: 'Syntax Error: Expected Name, found <EOF>.', locations: [{ line: 1, column: 25 }], extensions: { code: 'GRAPHQL_PARSE_FAILED' } }]);
  });

  it('answers an unknown field with a validation error', async () => {
    const response = await post(JSON.stringify({ query: '{ souls { id horoscope } }' }));
    expect(response.status).toBe(400);
    const body = JSON.parse(response.text);
    expect(body.data).toBeUndefined();
    expect(body.errors).toEqual([
      { message: 'Cannot query field "horoscope" on type "Soul".', locations: [{ line: 1, column: 14 }], extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } },
    ]);
  });

  it('answers a wrong argument type with a validation error, not an execution error', async () => {
    const response = await post(JSON.stringify({ query: '{ souls(orderBy: SIZE) { id } }' }));
    expect(response.status).toBe(400);
    expect(JSON.parse(response.text).errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  it('serves GraphQL only at /graphql, the web app at /, and nothing else', async () => {
    const base = server.url.replace(/\/graphql$/, '');
    expect((await raw(`${base}/nothing-here`)).status).toBe(404);
    expect((await raw(`${base}/assets/../../package.json`)).status).toBe(404);
    const app = await raw(`${base}/`);
    // 200 once `npm run build:web` has run (npm install does it), 503 with instructions before.
    expect([200, 503]).toContain(app.status);
    if (app.status === 200) expect(app.contentType).toContain('text/html');
  });
});

describe('errors', () => {
  it('masks an unexpected error (the store fails): generic message, INTERNAL_SERVER_ERROR, no stack, no paths', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    await server.request('mutation { createSoul(input: { name: "Ada", essence: "Calm." }) { __typename } }');
    server.app.db.store.close();

    const query = await post(JSON.stringify({ query: '{ souls { id name } }' }));
    // Yoga answers a field error with data: null as 200 (GraphQL over HTTP allows it): the error is data, not a crash.
    expect(query.status).toBe(200);
    expect(JSON.parse(query.text)).toEqual({
      data: null,
      errors: [{ message: 'Unexpected error.', locations: [{ line: 1, column: 3 }], path: ['souls'], extensions: { code: 'INTERNAL_SERVER_ERROR' } }],
    });
    expectNoInternals(query.text);
    expect(query.text).not.toContain('database is not open');

    const mutation = await post(JSON.stringify({ query: 'mutation { createSoul(input: { name: "Bo", essence: "x" }) { __typename } }' }));
    expect(mutation.status).toBe(200);
    const body = JSON.parse(mutation.text);
    expect(body.errors.map((e: any) => [e.message, e.extensions.code])).toEqual([['Unexpected error.', 'INTERNAL_SERVER_ERROR']]);
    expectNoInternals(mutation.text);

    // The server log keeps what the client does not see.
    expect(logged).toHaveBeenCalled();
    expect(logged.mock.calls.flat().map(String).join('\n')).toContain('database is not open');
  });

  it('answers domain errors on result unions as data (200), without stack or paths', async () => {
    await server.request('mutation { createSoul(input: { name: "Ada", essence: "Calm." }) { __typename } }');
    const response = await post(
      JSON.stringify({ query: 'mutation { createSoul(input: { name: "Ada", essence: "x" }) { __typename ... on ConflictError { field message } } }' }),
    );
    expect(response.status).toBe(200);
    expect(JSON.parse(response.text)).toEqual({
      data: { createSoul: { __typename: 'ConflictError', field: 'input.name', message: 'an awake soul is already named "Ada"' } },
    });
    expectNoInternals(response.text);
  });

  it('raises domain errors on other fields as coded GraphQL errors with their message, path and field', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const missing = await post(JSON.stringify({ query: '{ previewTraitChanges(soulId: "42") { before } }' }));
    expect(missing.status).toBe(200);
    expect(JSON.parse(missing.text)).toEqual({
      data: null,
      errors: [{ message: 'Soul 42 not found', locations: [{ line: 1, column: 3 }], path: ['previewTraitChanges'], extensions: { code: 'NOT_FOUND' } }],
    });
    expectNoInternals(missing.text);

    const badId = await post(JSON.stringify({ query: '{ shards(soulId: "abc") { totalCount } }' }));
    expect(JSON.parse(badId.text).errors).toEqual([
      {
        message: 'must be a positive row id, got "abc"',
        locations: [{ line: 1, column: 3 }],
        path: ['shards'],
        extensions: { code: 'BAD_USER_INPUT', field: 'soulId' },
      },
    ]);
    expectNoInternals(badId.text);
    // Expected errors are answers, not failures: nothing for the server log.
    expect(logged).not.toHaveBeenCalled();
  });
});

describe('GraphiQL', () => {
  it('answers a browser (accept: text/html) with GraphiQL and the roster as default query', async () => {
    const page = await raw(server.url, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.contentType).toContain('text/html');
    expect(page.text).toMatch(/graphiql/i);
    expect(page.text).toContain('souls(orderBy: READINESS)');
    expect(page.text).toContain('<title>Souls</title>');
  });

  it('names no other host: every asset, its icon included, comes from this server', async () => {
    const page = await raw(server.url, { headers: { accept: 'text/html' } });
    expect(page.text).not.toMatch(/(https?:)?\/\/(?!127\.0\.0\.1)[a-z0-9.-]+\.[a-z]{2,}\//i);
    const icon = /<link rel=icon href=([^ >]+)/.exec(page.text)?.[1];
    expect(icon).toBe('/graphiql-assets/favicon.svg');
    const served = await raw(new URL(icon!, server.url).href);
    expect(served.status).toBe(200);
    expect(served.contentType).toBe('image/svg+xml');
    expect(served.text).toMatch(/^<svg /);
    for (const src of [...page.text.matchAll(/(?:src|href)=([^ >]+)/g)].map((m) => m[1])) {
      expect((await raw(new URL(src, server.url).href, { method: 'HEAD' })).status, src).toBe(200);
    }
  });

  it('still answers GraphQL to a client that asks for JSON on the same path', async () => {
    const response = await raw(`${server.url}?query=${encodeURIComponent('{ settings { staleDays } }')}`, { headers: { accept: 'application/json', 'x-graphql-yoga-csrf': '1' } });
    expect(response.status).toBe(200);
    expect(JSON.parse(response.text)).toEqual({ data: { settings: { staleDays: 90 } } });
  });
});
