import { request as httpRequest } from 'node:http';
import type { DatabaseSync } from 'node:sqlite';
import { Lexer, Source, TokenKind } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { addTrait, createSoul, dropShard, type SoulsDb } from '../src/engine/index.ts';
import { defaultLimits } from '../src/server/limits.ts';
import { startServer, type LiveServer } from './support/server.ts';

const WAIT_MS = 3_000;

type Answer = { status: number; text: string; body: any; contentType: string };

/** POSTs a GraphQL request as a plain application/json client: request errors come back with HTTP 200. */
async function ask(server: LiveServer, query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Answer> {
  return answer(
    await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
      body: JSON.stringify({ query, variables }),
    }),
  );
}

async function answer(response: globalThis.Response): Promise<Answer> {
  const text = await response.text();
  let body: any = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: response.status, text, body, contentType: response.headers.get('content-type') ?? '' };
}

/** Served: HTTP 200, data, no errors. */
function expectServed(response: Answer): any {
  expect(response.status, response.text).toBe(200);
  expect(response.body?.errors, response.text).toBeUndefined();
  expect(response.body?.data, response.text).toBeTruthy();
  return response.body.data;
}

/** Refused before execution: HTTP 200, a GraphQL error saying why, no data, nothing masked as unexpected. */
function expectRefused(response: Answer, why: RegExp): void {
  expect(response.status, response.text).toBe(200);
  expect(response.body, response.text).not.toHaveProperty('data');
  expect(response.body.errors.length, response.text).toBeGreaterThanOrEqual(1);
  expect(response.body.errors[0].message).toMatch(why);
  expectNoInternalError(response);
}

function expectNoInternalError(response: Answer): void {
  expect(response.status, response.text).toBeLessThan(500);
  expect(response.text).not.toContain('INTERNAL_SERVER_ERROR');
  expect(response.text).not.toContain('Unexpected error');
}

/** A selection exactly `depth` fields deep: soul → traits → soul → traits … → id. */
function chain(depth: number): string {
  let body = 'id';
  for (let level = depth - 1; level >= 2; level--) body = `${level % 2 === 0 ? 'traits' : 'soul'} { ${body} }`;
  return `{ soul(id: "1") { ${body} } }`;
}

/** The tokens graphql's lexer sees in a document (what maxTokens counts). */
function tokenCount(document: string): number {
  const lexer = new Lexer(new Source(document));
  let count = 0;
  while (lexer.advance().kind !== TokenKind.EOF) count++;
  return count;
}

const aliases = (n: number, selection = 'settings { traitLimit }') => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${selection}`).join(' ')} }`;
/** n @include directives, each on an inline fragment of its own. */
const directives = (n: number) => `{ settings { ${Array.from({ length: n }, () => '... @include(if: true) { traitLimit }').join(' ')} } }`;
/** One page of 500 shards with up to 500 souls each: about 1,003,000 by the price list (first multiplies, nested lists too). */
const heavy = (n: number) => aliases(n, 'shards(first: 500) { edges { node { id content souls(first: 500) { id name } } } }');

let servers: LiveServer[] = [];
/** A server of its own for one test, stopped after it. */
async function dedicated(options: Parameters<typeof startServer>[0]): Promise<LiveServer> {
  const server = await startServer(options);
  servers.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  servers = [];
});

let server: LiveServer;
beforeAll(async () => {
  server = await startServer();
  const soul = await createSoul(server.app.db, { name: 'Ada', essence: 'Calm, curious and careful.' });
  await addTrait(server.app.db, soul.id, { principle: 'Reviews every change', provenance: 'Seen in reviews.' });
  await dropShard(server.app.db, 'Rewrote the parser over the weekend', 'chat', [soul.id], { tags: ['parser'] });
});
afterAll(() => server.stop());

describe('query limits', () => {
  it(`refuses a query deeper than maxDepth (${defaultLimits.maxDepth}) and serves one at it`, async () => {
    expect(defaultLimits.maxDepth).toBe(12);
    expectServed(await ask(server, chain(12)));
    expectRefused(await ask(server, chain(13)), /depth limit of 12 exceeded, found 13/i);
    // Another cycle: a soul's level history back to the soul.
    let body = 'id';
    for (let i = 0; i < 7; i++) body = `levelHistory { soul { ${body} } }`;
    expectRefused(await ask(server, `{ souls { ${body} } }`), /depth limit of 12/i);
  });

  /** chain(depth) written with one named fragment per soul → traits step, as generated clients write queries. */
  function fragmentChain(depth: number): string {
    const steps = Math.floor((depth - 1) / 2);
    const leaf = depth % 2 === 1 ? 'id' : 'soul { id }';
    const fragments = Array.from({ length: steps }, (_, i) => `fragment F${i} on Soul { traits { ${i === steps - 1 ? leaf : `soul { ...F${i + 1} }`} } }`);
    return `{ soul(id: "1") { ...F0 } } ${fragments.join(' ')}`;
  }

  it('counts depth through fragments, level for level with the same query inline', async () => {
    expectServed(await ask(server, fragmentChain(12)));
    expectRefused(await ask(server, fragmentChain(13)), /depth limit of 12 exceeded, found 13/i);
    const shallow = await dedicated({ app: { limits: { maxDepth: 3 } } });
    const query = (inner: string) => `{ soul(id: "1") { ...A } } fragment A on Soul { traits { ... on Trait { ...B } } } fragment B on Trait { ${inner} }`;
    expectServed(await ask(shallow, query('id')));
    expectRefused(await ask(shallow, query('soul { id }')), /depth limit of 3 exceeded, found 4/i);
  });

  it('costs a query written with fragments as much as the same query inline', async () => {
    // Refused with a limit of 1, each answer says what the query costs.
    const costOf = async (query: string) => (await ask(budget, query)).body.errors[0].extensions.cost;
    const budget = await dedicated({ app: { limits: { maxCost: 1 } } });
    for (const depth of [5, 9, 12]) expect(await costOf(fragmentChain(depth))).toBe(await costOf(chain(depth)));
  });

  it(`refuses more than maxAliases (${defaultLimits.maxAliases}) aliases and serves that many`, async () => {
    const data = expectServed(await ask(server, aliases(30)));
    expect(Object.keys(data)).toHaveLength(30);
    expectRefused(await ask(server, aliases(31)), /aliases limit of 30 exceeded, found 31/i);
  });

  it(`refuses more than maxTokens (${defaultLimits.maxTokens}) tokens and serves exactly that many`, async () => {
    /** A query of `n` tokens: a tag list is one token per tag and costs nothing to execute (here tag filters are not bounded). */
    const ofTokens = (n: number) => {
      const fixed = tokenCount('{ shards(tags: []) { totalCount } }');
      return `{ shards(tags: [${'"t" '.repeat(n - fixed)}]) { totalCount } }`;
    };
    expect(tokenCount(ofTokens(5000))).toBe(5000);
    expect(tokenCount(ofTokens(5001))).toBe(5001);
    const unboundedTags = await dedicated({ app: { limits: { maxFilterTags: 5000 } } });
    expectServed(await ask(unboundedTags, ofTokens(5000)));
    expectRefused(await ask(unboundedTags, ofTokens(5001)), /token limit of 5000 exceeded/i);
  });

  it(`refuses more than maxDirectives (${defaultLimits.maxDirectives}) directives and serves that many`, async () => {
    expectServed(await ask(server, directives(30)));
    expectRefused(await ask(server, directives(31)), /directives limit of 30 exceeded, found 31/i);
    // The same directive repeated on one field: over the limit whatever else is wrong with it.
    expectRefused(await ask(server, `{ settings { traitLimit ${'@include(if: true) '.repeat(31)}} }`), /directives limit of 30/i);
  });

  it(`refuses a query costing more than maxCost (${defaultLimits.maxCost}) and serves a cheaper one`, async () => {
    expectServed(await ask(server, heavy(2)));
    expectRefused(await ask(server, heavy(3)), /cost limit of 2500000 exceeded/i);
  });

  it('refuses a deep introspection query, and serves the usual one', async () => {
    let body = 'name';
    for (let i = 0; i < 6; i++) body = `name fields { type { ${body} } }`;
    expectRefused(await ask(server, `{ __schema { types { ${body} } } }`), /introspection depth/i);
    expectServed(await ask(server, `{ __schema { types { name fields { name type { name ofType { name } } } } } }`));
  });

  it('applies the limits over graphql-ws too, and the socket keeps serving', async () => {
    // Not lazy: one socket for both operations, open until dispose.
    const client = createClient({ url: server.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0, lazy: false });
    const closed: number[] = [];
    client.on('closed', (event: any) => closed.push(event.code));
    try {
      const refused = await client
        .iterate({ query: chain(13) })
        .next()
        .then(
          (result) => ({ result: result.value as any, errors: null }),
          (errors: unknown) => ({ result: null, errors: errors as any }),
        );
      // Either an error message for the operation or a result with errors: never data.
      const errors = refused.errors ?? refused.result?.errors;
      expect(Array.isArray(errors), JSON.stringify(refused)).toBe(true);
      expect(errors[0].message).toMatch(/depth limit of 12/i);
      expect(refused.result?.data ?? null).toBeNull();
      const served = await client.iterate({ query: `{ settings { traitLimit } }` }).next();
      expect(served.value).toEqual({ data: { settings: { traitLimit: 10 } } });
      expect(closed).toEqual([]);
    } finally {
      await client.dispose();
    }
  });

  it('takes its limits from buildApp: maxDepth 3 refuses depth 4 and serves depth 3', async () => {
    const small = await dedicated({ app: { limits: { maxDepth: 3 } } });
    expectServed(await ask(small, chain(3)));
    expectRefused(await ask(small, chain(4)), /depth limit of 3 exceeded, found 4/i);
  });

  it('takes maxCost, maxAliases, maxTokens and maxDirectives from buildApp too', async () => {
    // `souls(first: 2) { id name }` costs 2 × (2 + 1 + 1) = 8: four aliases are exactly 32.
    const cheap = await dedicated({ app: { limits: { maxCost: 32 } } });
    expectServed(await ask(cheap, aliases(4, 'souls(first: 2) { id name }')));
    expectRefused(await ask(cheap, aliases(5, 'souls(first: 2) { id name }')), /cost limit of 32 exceeded, found 40/i);

    const tight = await dedicated({ app: { limits: { maxAliases: 2, maxTokens: 40, maxDirectives: 2 } } });
    expectServed(await ask(tight, aliases(2)));
    expectRefused(await ask(tight, aliases(3)), /aliases limit of 2 exceeded/i);
    expectServed(await ask(tight, directives(2)));
    expectRefused(await ask(tight, directives(3)), /directives limit of 2 exceeded/i);
    const fixed = tokenCount('{ shards(tags: []) { totalCount } }');
    expectServed(await ask(tight, `{ shards(tags: [${'"t" '.repeat(40 - fixed)}]) { totalCount } }`));
    expectRefused(await ask(tight, `{ shards(tags: [${'"t" '.repeat(41 - fixed)}]) { totalCount } }`), /token limit of 40 exceeded/i);
  });
});

describe('introspection', () => {
  it('is on by default, with field suggestions', async () => {
    const data = expectServed(await ask(server, `{ __schema { types { name } } }`));
    expect(data.__schema.types.map((t: { name: string }) => t.name)).toContain('Soul');
    const misspelt = await ask(server, `{ setings { traitLimit } }`);
    expect(misspelt.status).toBe(200);
    expect(misspelt.body.errors[0].message).toMatch(/Did you mean "settings"\?/);
  });

  it('introspection: false refuses __schema and __type and suggests nothing', async () => {
    const closed = await dedicated({ app: { introspection: false } });
    expectRefused(await ask(closed, `{ __schema { types { name } } }`), /introspection/i);
    expectRefused(await ask(closed, `{ __type(name: "Soul") { name fields { name } } }`), /introspection/i);
    expect(expectServed(await ask(closed, `{ __typename settings { traitLimit } }`))).toEqual({ __typename: 'Query', settings: { traitLimit: 10 } });

    const probes: Array<[string, Record<string, unknown> | undefined]> = [
      [`{ setings { traitLimit } }`, undefined],
      [`{ souls(orderBi: NAME) { id } }`, undefined],
      [`{ souls(orderBy: NAMEE) { id } }`, undefined],
      [`query($o: SoulOrder) { souls(orderBy: $o) { id } }`, { o: 'NAMEE' }],
      [`{ souls { ... on Sol { id } } }`, undefined],
      [`mutation($i: CreateSoulInput!) { createSoul(input: $i) { __typename } }`, { i: { nam: 'Ada', essence: 'Calm.' } }],
    ];
    for (const [query, variables] of probes) {
      const response = await ask(closed, query, variables);
      expect(response.status, query).toBe(200);
      expect(response.body.errors?.length, `${query}: ${response.text}`).toBeGreaterThanOrEqual(1);
      expect(response.text, query).not.toMatch(/did you mean/i);
      // The same mistakes on the default server do get suggestions: the probes are real.
      expect((await ask(server, query, variables)).text, query).toMatch(/did you mean/i);
    }
  });

  it('introspection: false holds over graphql-ws too', async () => {
    const closed = await dedicated({ app: { introspection: false } });
    const client = createClient({ url: closed.wsUrl, webSocketImpl: WebSocket, retryAttempts: 0 });
    const run = (query: string) =>
      client
        .iterate({ query })
        .next()
        .then(
          (result) => result.value as any,
          (errors: unknown) => ({ errors }),
        );
    try {
      const schema = await run(`{ __schema { types { name } } }`);
      expect(schema.data ?? null, JSON.stringify(schema).slice(0, 300)).toBeNull();
      expect(JSON.stringify(schema.errors)).toMatch(/introspection/i);
      const misspelt = await run(`{ setings { traitLimit } }`);
      expect(misspelt.errors.length).toBeGreaterThanOrEqual(1);
      expect(JSON.stringify(misspelt)).not.toMatch(/did you mean/i);
    } finally {
      await client.dispose();
    }
  });
});

describe('CSRF prevention and content types', () => {
  const query = `{ settings { traitLimit } }`;
  const get = (headers: Record<string, string> = {}) => fetch(`${server.url}?query=${encodeURIComponent(query)}`, { headers: { accept: 'application/json', ...headers } }).then(answer);

  it("refuses a browser's cross-site GET without the CSRF header with 403, and serves it with the header", async () => {
    const refused = await get({ 'sec-fetch-site': 'cross-site' });
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.errors[0].message).toMatch(/CSRF/);
    expect(refused.body).not.toHaveProperty('data');
    expect(expectServed(await get({ 'sec-fetch-site': 'cross-site', 'x-graphql-yoga-csrf': 'yes' }))).toEqual({ settings: { traitLimit: 10 } });
    expect(expectServed(await get())).toEqual({ settings: { traitLimit: 10 } });
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'text/plain;charset=UTF-8'])('refuses a POST sent as %s (what a cross-site form can send)', async (contentType) => {
    const before = await soulCount();
    const body = contentType.includes('urlencoded')
      ? `query=${encodeURIComponent('mutation { createSoul(input: { name: "Forged", essence: "x" }) { __typename } }')}`
      : JSON.stringify({ query: 'mutation { createSoul(input: { name: "Forged", essence: "x" }) { __typename } }' });
    const response = await fetch(server.url, { method: 'POST', headers: { 'content-type': contentType, accept: 'application/json' }, body }).then(answer);
    expect(response.status, response.text).toBe(403);
    expect(response.body?.data).toBeUndefined();
    expect(await soulCount()).toBe(before);
  });

  it('serves a JSON POST without any CSRF header', async () => {
    expect(expectServed(await ask(server, query))).toEqual({ settings: { traitLimit: 10 } });
  });

  it('refuses a GET mutation even with the CSRF header', async () => {
    const before = await soulCount();
    const response = await fetch(`${server.url}?query=${encodeURIComponent('mutation { createSoul(input: { name: "ByGet", essence: "x" }) { __typename } }')}`, {
      headers: { accept: 'application/json', 'x-graphql-yoga-csrf': 'yes' },
    }).then(answer);
    expect(response.status, response.text).toBe(405);
    expect(await soulCount()).toBe(before);
  });

  it('refuses multipart/form-data (no uploads), with or without the CSRF header, never with a 500', async () => {
    const before = await soulCount();
    for (const headers of [{}, { 'x-graphql-yoga-csrf': 'yes' }] as Record<string, string>[]) {
      const form = new FormData();
      form.set('operations', JSON.stringify({ query: 'mutation { createSoul(input: { name: "Multipart", essence: "x" }) { __typename } }' }));
      form.set('map', '{}');
      const response = await fetch(server.url, { method: 'POST', headers: { accept: 'application/json', ...headers }, body: form }).then(answer);
      expect([403, 415], `${JSON.stringify(headers)}: ${response.status} ${response.text}`).toContain(response.status);
      expect(response.body?.data).toBeUndefined();
    }
    expect(await soulCount()).toBe(before);
  });

  async function soulCount(): Promise<number> {
    return expectServed(await ask(server, `{ souls { id } dormantSouls { id } }`)).souls.length;
  }
});

describe('request body size', () => {
  const LIMIT = 2048;
  /** A JSON body of exactly `bytes` bytes (the query padded with spaces, which are not tokens). */
  const bodyOf = (bytes: number) => {
    const bare = JSON.stringify({ query: '{ settings { traitLimit } }' });
    const body = JSON.stringify({ query: `{ settings { traitLimit } }${' '.repeat(bytes - bare.length)}` });
    expect(Buffer.byteLength(body)).toBe(bytes);
    return body;
  };
  const post = (target: LiveServer, body: string) =>
    fetch(target.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body }).then(answer);

  it('refuses a body over maxBodyBytes with 413 PAYLOAD_TOO_LARGE and serves one at it', async () => {
    const small = await dedicated({ app: { limits: { maxBodyBytes: LIMIT } } });
    expect(expectServed(await post(small, bodyOf(LIMIT)))).toEqual({ settings: { traitLimit: 10 } });
    const refused = await post(small, bodyOf(LIMIT + 1));
    expect(refused.status, refused.text).toBe(413);
    expect(refused.contentType).toMatch(/^application\/json/);
    expect(refused.body).toEqual({ errors: [{ message: expect.stringMatching(/2048 bytes/), extensions: { code: 'PAYLOAD_TOO_LARGE' } }] });
    // Still serving afterwards.
    expectServed(await post(small, bodyOf(100)));
  });

  it('refuses a chunked POST without Content-Length with 411 LENGTH_REQUIRED', async () => {
    const small = await dedicated({ app: { limits: { maxBodyBytes: LIMIT } } });
    const url = new URL(small.url);
    const response = await new Promise<{ status: number; text: string; contentType: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer within ${WAIT_MS} ms`)), WAIT_MS);
      const req = httpRequest(
        { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', 'transfer-encoding': 'chunked' } },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
          res.on('end', () => {
            clearTimeout(timer);
            resolve({ status: res.statusCode ?? 0, text, contentType: String(res.headers['content-type'] ?? '') });
          });
        },
      );
      req.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      req.write('{"query":"{ settings');
      req.end(' { traitLimit } }"}');
    });
    expect(response.status, response.text).toBe(411);
    expect(response.contentType).toMatch(/^application\/json/);
    expect(JSON.parse(response.text)).toEqual({ errors: [{ message: expect.any(String), extensions: { code: 'LENGTH_REQUIRED' } }] });
  });
});

/** Every row of every table, to show a refused write wrote nothing. */
function snapshot(db: SoulsDb): string {
  const sqlite = (db.store as unknown as { db?: DatabaseSync }).db;
  if (!sqlite?.prepare) throw new Error('the test expects the SQLite store (db.store.db)');
  const tables = sqlite.prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`).all() as { name: string }[];
  return JSON.stringify(tables.map(({ name }) => [name, sqlite.prepare(`SELECT * FROM "${name}"`).all()]));
}

describe('input bounds (SPEC §11) over the API', () => {
  const settings = {
    maxShardContentBytes: 32,
    maxTagLength: 8,
    maxTagsPerShard: 3,
    maxBatchSize: 2,
    maxPrincipleBytes: 24,
    maxProvenanceBytes: 24,
    maxEssenceBytes: 24,
    maxNameLength: 10,
    maxDescriptionBytes: 24,
    maxSourceLength: 8,
  };
  let bounded: LiveServer;
  let soulId: string;
  let traitId: string;

  beforeAll(async () => {
    bounded = await startServer({ settings });
    const soul = await createSoul(bounded.app.db, { name: 'Ada', essence: 'Calm.' });
    soulId = String(soul.id);
    traitId = String((await addTrait(bounded.app.db, soul.id, { principle: 'Reviews changes', provenance: 'Reviews.' })).id);
  });
  afterAll(() => bounded.stop());

  const union = `__typename ... on ValidationError { field message }`;
  const shard = (over: Record<string, unknown> = {}) => ({ content: 'Fixed the build', source: 'ci', soulIds: [soulId], ...over });

  type Case = [label: string, query: string, variables: () => Record<string, unknown>, field: string];
  const dropShardQuery = `mutation($input: DropShardInput!) { dropShard(input: $input) { ${union} } }`;
  const dropShardsQuery = `mutation($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { ${union} } }`;
  const createSoulQuery = `mutation($input: CreateSoulInput!) { createSoul(input: $input) { ${union} } }`;
  const addTraitQuery = `mutation($soulId: ID!, $input: AddTraitInput!) { addTrait(soulId: $soulId, input: $input) { ${union} } }`;

  const over: Case[] = [
    ['shard content over maxShardContentBytes', dropShardQuery, () => ({ input: shard({ content: 'c'.repeat(33) }) }), 'input.content'],
    ['shard content over the limit in UTF-8 bytes, not characters', dropShardQuery, () => ({ input: shard({ content: 'é'.repeat(17) }) }), 'input.content'],
    ['a tag over maxTagLength', dropShardQuery, () => ({ input: shard({ tags: ['ok', 'much-too-long'] }) }), 'input.tags[1]'],
    ['a source over maxSourceLength', dropShardQuery, () => ({ input: shard({ source: 'much-too-long' }) }), 'input.source'],
    ['a tag over maxTagLength in a batch', dropShardsQuery, () => ({ inputs: [shard({ tags: ['ok', 'much-too-long'] })] }), 'inputs[0].tags[1]'],
    ['content over the limit in a batch', dropShardsQuery, () => ({ inputs: [shard(), shard({ content: 'c'.repeat(33) })] }), 'inputs[1].content'],
    ['a name over maxNameLength', createSoulQuery, () => ({ input: { name: 'n'.repeat(11), essence: 'Calm.' } }), 'input.name'],
    ['an essence over maxEssenceBytes', createSoulQuery, () => ({ input: { name: 'Bo', essence: 'e'.repeat(25) } }), 'input.essence'],
    ['a description over maxDescriptionBytes', createSoulQuery, () => ({ input: { name: 'Bo', essence: 'Calm.', description: 'd'.repeat(25) } }), 'input.description'],
    ['a principle over maxPrincipleBytes', addTraitQuery, () => ({ soulId, input: { principle: 'p'.repeat(25), provenance: 'Seen.' } }), 'input.principle'],
    ['a provenance over maxProvenanceBytes', addTraitQuery, () => ({ soulId, input: { principle: 'Kind', provenance: 'q'.repeat(25) } }), 'input.provenance'],
    [
      'a revised principle over maxPrincipleBytes',
      `mutation($id: ID!, $input: ReviseTraitInput!) { reviseTrait(id: $id, input: $input) { ${union} } }`,
      () => ({ id: traitId, input: { principle: 'p'.repeat(25) } }),
      'input.principle',
    ],
    [
      'an updated essence over maxEssenceBytes',
      `mutation($id: ID!, $input: UpdateSoulInput!) { updateSoul(id: $id, input: $input) { ${union} } }`,
      () => ({ id: soulId, input: { essence: 'e'.repeat(25) } }),
      'input.essence',
    ],
  ];

  it.each(over)('refuses %s with a ValidationError naming the field, writing nothing', async (_label, query, variables, field) => {
    const before = snapshot(bounded.app.db);
    const response = await ask(bounded, query, variables());
    const data = expectServed(response);
    const value = Object.values(data)[0] as any;
    expect(value, response.text).toMatchObject({ __typename: 'ValidationError', field });
    expect(value.message).toMatch(/^must be at most \d+ (bytes|characters)$|^at most \d+ (tags|shards) per (shard|batch)$/);
    expect(snapshot(bounded.app.db)).toBe(before);
  });

  it.each([
    ['more tags than maxTagsPerShard', dropShardQuery, () => ({ input: shard({ tags: ['a', 'b', 'c', 'd'] }) }), 'DropShardInput.tags', 'Mutation.dropShard(input:).tags'],
    ['a batch over maxBatchSize', dropShardsQuery, () => ({ inputs: [shard(), shard(), shard()] }), 'Mutation.dropShards(inputs:)', 'Mutation.dropShards(inputs:)'],
  ])('refuses %s before execution, naming the list and its bound, writing nothing', async (_label, query, variables, _coordinate, argument) => {
    const before = snapshot(bounded.app.db);
    const response = await ask(bounded, query, variables());
    expectRefused(response, /at most (2|3) are allowed \((maxTagsPerShard|maxBatchSize)\)/);
    expect(response.body.errors[0].extensions).toMatchObject({ code: 'LIST_TOO_LONG', argument });
    expect(snapshot(bounded.app.db)).toBe(before);
  });

  it('refuses a level-up plan whose texts are over the bounds, naming them', async () => {
    const response = await ask(bounded, `mutation($soulId: ID!, $plan: LevelUpPlanInput!) { levelUp(soulId: $soulId, plan: $plan) { __typename ... on LevelUpPlanError { problems { field } } } }`, {
      soulId,
      plan: { newEssence: 'e'.repeat(25), consolidations: [{ sourceTraitIds: [traitId], mergedPrinciple: 'p'.repeat(25), mergedProvenance: 'Seen.' }], promotedTraitIds: [], carriedTraitIds: [] },
    });
    const value = expectServed(response).levelUp;
    expect(value.__typename).toBe('LevelUpPlanError');
    expect(value.problems.map((p: { field: string }) => p.field).sort()).toEqual(['plan.consolidations[0].mergedPrinciple', 'plan.newEssence']);
  });

  it('accepts every input exactly at its bound', async () => {
    const atBounds = await ask(bounded, `mutation($input: DropShardInput!, $inputs: [DropShardInput!]!, $soul: CreateSoulInput!) {
        dropShard(input: $input) { ${union} }
        dropShards(inputs: $inputs) { ${union} }
        createSoul(input: $soul) { ${union} }
      }`, {
      input: shard({ content: 'é'.repeat(16), source: 's'.repeat(8), tags: ['t'.repeat(8), 'b', 'c'] }),
      inputs: [shard(), shard({ content: 'c'.repeat(32) })],
      soul: { name: 'n'.repeat(10), essence: 'e'.repeat(24), description: 'd'.repeat(24) },
    });
    expect(expectServed(atBounds)).toEqual({
      dropShard: { __typename: 'DropShardPayload' },
      dropShards: { __typename: 'DropShardsPayload' },
      createSoul: { __typename: 'SoulPayload' },
    });
  });
});

describe('hostile strings and ids', () => {
  const hostile = [
    '',
    '   ',
    '"',
    '"unterminated',
    "'",
    'AND',
    'OR OR OR',
    'NOT',
    '*',
    'pars*er',
    '^parser',
    'NEAR(parser weekend, 2)',
    'content:parser',
    'shard_fts:parser',
    '(parser',
    'parser)',
    '{parser weekend}',
    '- + : ; , .',
    "'; DROP TABLE soul_shards; --",
    '\u0000parser\u0000',
    '\\',
    '%_%',
    '🦀 parser 🦀',
    '\u202Eparser',
    'x'.repeat(10_000),
    'parser '.repeat(500),
  ];

  it.each(hostile.map((h) => [h.length > 40 ? `${h.slice(0, 20)}… (${h.length} chars)` : JSON.stringify(h), h]))('searchShards and evidence(query:) are safe for %s', async (_label, text) => {
    const response = await ask(server, `query($q: String!) { searchShards(query: $q) { score shard { id } } soul(id: "1") { evidence(query: $q) { shardCount } } }`, { q: text });
    const data = expectServed(response);
    expect(Array.isArray(data.searchShards)).toBe(true);
    expect(typeof data.soul.evidence.shardCount).toBe('number');
  });

  it('still finds what a plain query names', async () => {
    const data = expectServed(await ask(server, `{ searchShards(query: "parser") { shard { content } } }`));
    expect(data.searchShards.map((h: any) => h.shard.content)).toEqual(['Rewrote the parser over the weekend']);
  });

  const badIds = ['abc', '-1', '1.5', '99999999999999999999', '', '0', ' 1', '1e3', '0x1'];
  const planWith = (id: string) => ({ newEssence: 'Wiser.', consolidations: [{ sourceTraitIds: [id], mergedPrinciple: 'p', mergedProvenance: 'q' }], promotedTraitIds: [id], carriedTraitIds: [id] });
  const result = `__typename ... on Error { message }`;
  /** [name, query, variables for a bad id]: every kind of ID argument the API takes. */
  const idArguments: Array<[string, string, (id: string) => Record<string, unknown>]> = [
    ['Query.soul(id)', `query($id: ID!) { soul(id: $id) { id } }`, (id) => ({ id })],
    ['Query.trait(id)', `query($id: ID!) { trait(id: $id) { id } }`, (id) => ({ id })],
    ['Query.shard(id)', `query($id: ID!) { shard(id: $id) { id } }`, (id) => ({ id })],
    ['Query.shards(soulId)', `query($id: ID) { shards(soulId: $id) { totalCount } }`, (id) => ({ id })],
    ['Query.searchShards(soulId)', `query($id: ID) { searchShards(query: "parser", soulId: $id) { score } }`, (id) => ({ id })],
    ['Query.shardCountsByTag(soulId)', `query($id: ID) { shardCountsByTag(soulId: $id) { tag } }`, (id) => ({ id })],
    ['Query.previewTraitChanges(soulId)', `query($id: ID!) { previewTraitChanges(soulId: $id) { before } }`, (id) => ({ id })],
    [
      'Query.previewTraitChanges(revert, revise.traitId, add.citeShardIds)',
      `query($id: ID!) { previewTraitChanges(soulId: "1", revert: [$id], revise: [{ traitId: $id, principle: "z" }], add: [{ principle: "p", provenance: "q", citeShardIds: [$id] }]) { before } }`,
      (id) => ({ id }),
    ],
    ['Query.previewLevelUp(soulId)', `query($id: ID!, $plan: LevelUpPlanInput!) { previewLevelUp(soulId: $id, plan: $plan) { valid } }`, (id) => ({ id, plan: planWith('1') })],
    ['Query.previewLevelUp(plan ids)', `query($plan: LevelUpPlanInput!) { previewLevelUp(soulId: "1", plan: $plan) { valid error { message } } }`, (id) => ({ plan: planWith(id) })],
    ['Mutation.updateSoul(id)', `mutation($id: ID!) { updateSoul(id: $id, input: { description: "d" }) { ${result} } }`, (id) => ({ id })],
    ['Mutation.retireSoul(id)', `mutation($id: ID!) { retireSoul(id: $id) { ${result} } }`, (id) => ({ id })],
    ['Mutation.awakenSoul(id)', `mutation($id: ID!) { awakenSoul(id: $id) { ${result} } }`, (id) => ({ id })],
    ['Mutation.addTrait(soulId)', `mutation($id: ID!) { addTrait(soulId: $id, input: { principle: "p", provenance: "q" }) { ${result} } }`, (id) => ({ id })],
    ['Mutation.addTrait(citeShardIds)', `mutation($id: ID!) { addTrait(soulId: "1", input: { principle: "p", provenance: "q", citeShardIds: [$id] }) { ${result} } }`, (id) => ({ id })],
    ['Mutation.reviseTrait(id)', `mutation($id: ID!) { reviseTrait(id: $id, input: { principle: "p" }) { ${result} } }`, (id) => ({ id })],
    ['Mutation.revertTrait(id)', `mutation($id: ID!) { revertTrait(id: $id) { ${result} } }`, (id) => ({ id })],
    ['Mutation.reactivateTrait(id)', `mutation($id: ID!) { reactivateTrait(id: $id) { ${result} } }`, (id) => ({ id })],
    ['Mutation.levelUp(soulId)', `mutation($id: ID!, $plan: LevelUpPlanInput!) { levelUp(soulId: $id, plan: $plan) { ${result} } }`, (id) => ({ id, plan: planWith('1') })],
    ['Mutation.levelUp(plan ids)', `mutation($plan: LevelUpPlanInput!) { levelUp(soulId: "1", plan: $plan) { ${result} } }`, (id) => ({ plan: planWith(id) })],
    ['Mutation.revertLevelUp(soulId)', `mutation($id: ID!) { revertLevelUp(soulId: $id) { ${result} } }`, (id) => ({ id })],
    ['Mutation.dropShard(soulIds)', `mutation($id: ID!) { dropShard(input: { content: "c", source: "s", soulIds: [$id] }) { ${result} } }`, (id) => ({ id })],
    ['Mutation.dropShards(soulIds)', `mutation($id: ID!) { dropShards(inputs: [{ content: "c", source: "s", soulIds: [$id] }]) { ${result} } }`, (id) => ({ id })],
    ['Mutation.citeShard(shardId)', `mutation($id: ID!) { citeShard(shardId: $id, traitId: "1") { ${result} } }`, (id) => ({ id })],
    ['Mutation.citeShard(traitId)', `mutation($id: ID!) { citeShard(shardId: "1", traitId: $id) { ${result} } }`, (id) => ({ id })],
    ['Mutation.revealShards(ids)', `mutation($id: ID!) { revealShards(ids: [$id]) { ${result} } }`, (id) => ({ id })],
    ['Mutation.stampAttuned(soulId)', `mutation($id: ID!) { stampAttuned(soulId: $id) { ${result} } }`, (id) => ({ id })],
  ];
  const domainErrors = ['NotFoundError', 'ValidationError', 'LevelUpPlanError'];
  const requestCodes = ['BAD_USER_INPUT', 'NOT_FOUND'];

  it.each(idArguments)('%s: ids that are not row ids are NotFound, Validation or null, never a 500', async (_name, query, variables) => {
    for (const id of badIds) {
      const before = snapshot(server.app.db);
      const response = await ask(server, query, variables(id));
      const where = `${JSON.stringify(id)}: ${response.text}`;
      expectNoInternalError(response);
      expect(response.status, where).toBe(200);
      const [field, value] = Object.entries(response.body.data ?? { none: null })[0] as [string, any];
      if (response.body.errors) {
        // Fields outside a result union: a GraphQL error with a domain code, and no value.
        expect(requestCodes, where).toContain(response.body.errors[0].extensions?.code);
        expect(value ?? null, where).toBeNull();
      } else if (value && typeof value === 'object' && '__typename' in value) {
        expect(domainErrors, where).toContain(value.__typename);
      } else if (value && typeof value === 'object' && 'valid' in value) {
        expect(value.valid, where).toBe(false);
      } else {
        expect(value, `${field} ${where}`).toBeNull();
      }
      expect(snapshot(server.app.db), `${JSON.stringify(id)} wrote something`).toBe(before);
    }
  });

  it('ids given as JSON numbers or integer literals are refused or find nothing, never a 500', async () => {
    for (const id of [1.5, -1, 1e30, 0, 99999999999999999999]) {
      const response = await ask(server, `query($id: ID!) { soul(id: $id) { id } }`, { id });
      expectNoInternalError(response);
      expect(response.status).toBe(200);
      expect(response.body.data?.soul ?? null).toBeNull();
    }
    for (const literal of ['99999999999999999999', '-1', '0']) {
      const response = await ask(server, `{ soul(id: ${literal}) { id } trait(id: ${literal}) { id } }`);
      expect(expectServed(response)).toEqual({ soul: null, trait: null });
    }
    const float = await ask(server, `mutation { revealShards(ids: [1.5]) { __typename } }`);
    expectNoInternalError(float);
    expect(float.body.errors?.length).toBeGreaterThanOrEqual(1);
    expect(float.body.data ?? null).toBeNull();
  });

  it.each([
    ['crystallizationReady(soulIds)', 'subscription($id: ID!) { crystallizationReady(soulIds: [$id]) { priority } }'],
    ['levelChanged(soulId)', 'subscription($id: ID) { levelChanged(soulId: $id) { kind } }'],
    ['soulChanged(soulId)', 'subscription($id: ID) { soulChanged(soulId: $id) { kind } }'],
    ['shardDropped(soulId)', 'subscription($id: ID) { shardDropped(soulId: $id) { at } }'],
  ])('Subscription.%s refuses ids that are not row ids with BAD_USER_INPUT over SSE', async (_name, query) => {
    for (const id of ['abc', '-1', '1.5', '99999999999999999999', '']) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), WAIT_MS);
      try {
        const response = await fetch(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
          body: JSON.stringify({ query, variables: { id } }),
          signal: controller.signal,
        });
        const text = await response.text();
        expect(response.status, text).toBe(200);
        expect(text).not.toContain('INTERNAL_SERVER_ERROR');
        const next = text.split('\n\n').find((block) => block.startsWith('event: next'));
        expect(next, text).toBeDefined();
        const payload = JSON.parse(next!.slice(next!.indexOf('data:') + 5));
        expect(payload.errors[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
        expect(payload.data ?? null).toBeNull();
        expect(text).toContain('event: complete');
      } finally {
        clearTimeout(timer);
      }
    }
  });
});
