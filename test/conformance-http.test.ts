import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { serverAudits } from 'graphql-http';
import type { Scope, TokenEntry } from '../src/server/auth.ts';
import { scopes } from '../src/server/auth.ts';
import { startServer, type LiveServer } from './support/server.ts';

/**
 * The GraphQL-over-HTTP conformance audits (graphql-http's serverAudits) against a live server.
 *
 * The server refuses non-JSON POSTs, and GET requests that carry what a browser sends (an
 * Origin, a cookie, Sec-Fetch-Site naming another site), without a CSRF-prevention header
 * (`x-graphql-yoga-csrf`, or `authorization`): browsers cannot add a custom header to a
 * cross-site form post. The audits' own requests do not send it, so the fetch they use adds
 * it, the way a client that also posts forms would.
 */
function fetchWith(headers: Record<string, string>): typeof fetch {
  return (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [name, value] of Object.entries(headers)) merged.set(name, value);
    return fetch(input, { ...init, headers: merged });
  };
}

const CSRF = { 'x-graphql-yoga-csrf': '1' };

/** One vitest test per audit: each must pass outright (no error, no warning, no notice). */
function auditEach(serverOf: () => LiveServer, headers: Record<string, string>) {
  for (const audit of serverAudits({ url: () => serverOf().url, fetchFn: fetchWith({ ...CSRF, ...headers }) })) {
    it(`${audit.id} ${audit.name}`, async () => {
      const result = await audit.fn();
      expect(result.status, result.status === 'ok' ? '' : result.reason).toBe('ok');
    });
  }
}

describe('GraphQL over HTTP audits, server without tokens', () => {
  let server: LiveServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.stop());

  auditEach(() => server, {});
});

const tokens: TokenEntry[] = [
  { name: 'reader', token: 'reader-token-0123456789abcdef', scopes: ['read'] },
  { name: 'everything', token: 'everything-token-0123456789ab', scopes: [...scopes] as Scope[] },
];

for (const entry of tokens) {
  describe(`GraphQL over HTTP audits, server with tokens, bearer of "${entry.name}" (${entry.scopes.join(', ')})`, () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startServer({ app: { tokens } });
    });
    afterAll(() => server.stop());

    it('is really guarded: the same request without the bearer token is refused (401 UNAUTHENTICATED)', async () => {
      const { status, body } = await server.request('{ __typename }');
      expect(status).toBe(401);
      expect(body.errors.map((e: any) => e.extensions?.code)).toEqual(['UNAUTHENTICATED']);
      expect(body).not.toHaveProperty('data');
    });

    auditEach(() => server, { authorization: `Bearer ${entry.token}` });
  });
}

describe('GraphQL over HTTP, beyond the audits', () => {
  let server: LiveServer;
  beforeAll(async () => {
    server = await startServer({ app: { tokens } });
  });
  afterAll(() => server.stop());
  afterEach(() => {
    vi.restoreAllMocks();
  });

  const reader = { authorization: `Bearer ${tokens[0].token}` };

  async function post(accept: string, query: string, variables: Record<string, unknown>, headers: Record<string, string> = reader) {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept, ...headers },
      body: JSON.stringify({ query, variables }),
    });
    return { status: response.status, type: response.headers.get('content-type'), body: await response.json() };
  }

  it('needs the CSRF header the audits are given only for what a browser sends: a cookie or a cross-site page', async () => {
    const open = await startServer();
    try {
      const url = `${open.url}?query=${encodeURIComponent('{ __typename }')}`;
      expect((await fetch(url)).status).toBe(200);
      expect((await fetch(url, { headers: { cookie: 'session=1' } })).status).toBe(403);
      const allowed = await fetch(url, { headers: { cookie: 'session=1', ...CSRF } });
      expect(allowed.status).toBe(200);
      expect(await allowed.json()).toEqual({ data: { __typename: 'Query' } });
    } finally {
      await open.stop();
    }
  });

  // The audits' coercion cases (7B9B, 86EE) declare a variable they never use: a validation error. These are real coercion failures.
  const coercion = 'query One($id: ID!) { soul(id: $id) { id } }';
  for (const [label, value, message] of [
    ['null for a non-null type', null, 'Variable "$id" of non-null type "ID!" must not be null.'],
    ['an object for an ID', {}, 'Variable "$id" got invalid value {}; ID cannot represent value: {}'],
    ['a list for an ID', [1], 'Variable "$id" got invalid value [1]; ID cannot represent value: [1]'],
  ] as const) {
    it(`answers a variable coercion failure (${label}) with 400 under application/graphql-response+json, 200 under application/json, and no data`, async () => {
      const strict = await post('application/graphql-response+json', coercion, { id: value });
      expect(strict.status).toBe(400);
      expect(strict.type).toMatch(/^application\/graphql-response\+json/);
      expect(strict.body).not.toHaveProperty('data');
      expect(strict.body.errors.map((e: any) => e.message)).toEqual([message]);

      const legacy = await post('application/json', coercion, { id: value });
      expect(legacy.status).toBe(200);
      expect(legacy.type).toMatch(/^application\/json/);
      expect(legacy.body).toEqual(strict.body);
    });
  }

  it('answers an unknown operationName as a request error: 400 under application/graphql-response+json, no data', async () => {
    const response = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...reader },
      body: JSON.stringify({ query: 'query A { __typename }', operationName: 'B' }),
    });
    expect(response.status).toBe(400);
    const answer = await response.json();
    expect(answer).not.toHaveProperty('data');
    expect(answer.errors.map((e: any) => e.extensions?.code)).toEqual(['OPERATION_RESOLUTION_FAILURE']);
  });

  it('answers a missing scope with FORBIDDEN for that field, and does not log it as an unexpected error', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const { status, body } = await post('application/graphql-response+json', 'mutation { createSoul(input: { name: "Ada", essence: "x" }) { __typename } }', {});
    expect(status).toBe(200);
    expect(body.data).toBeNull();
    expect(body.errors.map((e: any) => [e.extensions?.code, e.path])).toEqual([['FORBIDDEN', ['createSoul']]]);
    expect(logged).not.toHaveBeenCalled();
  });
});
