// Persisted operations over raw HTTP (POST and GET) and a WebSocket: Apollo's automatic persisted queries (a hash
// miss answers PersistedQueryNotFound, then hash-only requests work), their bounded store, and an allow-list server
// that runs only the operations of its file. A persisted document is priced and bounded like any other.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { describeError, ValidationError } from '../src/engine/index.ts';
import { loadConfig } from '../src/server/config.ts';
import { cliRunner, expectNoStack } from './support/cli.ts';
import { serverPerTest, type LiveServer } from './support/server.ts';

const start = serverPerTest(afterEach);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const persisted = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(query) } });

const ROSTER = 'query Roster { souls { name } }';
const SETTINGS = 'query Settings { settings { traitLimit } }';
const GRAPHQL_RESPONSE = 'application/graphql-response+json';

type Answer = { status: number; body: any };

async function post(server: LiveServer, body: object, accept = 'application/json'): Promise<Answer> {
  const response = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

/** A GET as Apollo's link sends it with useGETForHashedQueries: no CSRF header, the extensions as JSON. */
async function get(server: LiveServer, params: { query?: string; variables?: object; extensions?: object }, accept = 'application/json'): Promise<Answer> {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) search.set(name, typeof value === 'string' ? value : JSON.stringify(value));
  const response = await fetch(`${server.url}?${search}`, { headers: { accept } });
  return { status: response.status, body: await response.json() };
}

const codeOf = (answer: Answer) => answer.body.errors?.[0]?.extensions?.code;

describe('automatic persisted queries', () => {
  it('answers a hash it has not seen PersistedQueryNotFound, then runs the hash alone once the document came with it (POST)', async () => {
    const server = await start();
    await server.data('mutation { createSoul(input: { name: "Mira", essence: "Reads the room." }) { __typename } }');
    const miss = await post(server, { extensions: persisted(ROSTER) });
    expect(miss).toEqual({ status: 200, body: { errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }] } });
    expect((await post(server, { extensions: persisted(ROSTER) }, GRAPHQL_RESPONSE)).status).toBe(404);
    expect(await post(server, { query: ROSTER, extensions: persisted(ROSTER) })).toEqual({ status: 200, body: { data: { souls: [{ name: 'Mira' }] } } });
    expect(await post(server, { extensions: persisted(ROSTER) })).toEqual({ status: 200, body: { data: { souls: [{ name: 'Mira' }] } } });
  });

  it('works over GET without a CSRF header, registering and running by hash', async () => {
    const server = await start();
    expect(codeOf(await get(server, { extensions: persisted(SETTINGS) }))).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect((await get(server, { query: SETTINGS, extensions: persisted(SETTINGS) })).body).toEqual({ data: { settings: { traitLimit: 10 } } });
    expect((await get(server, { extensions: persisted(SETTINGS) })).body).toEqual({ data: { settings: { traitLimit: 10 } } });
    expect((await post(server, { extensions: persisted(SETTINGS) })).body).toEqual({ data: { settings: { traitLimit: 10 } } });
  });

  it('remembers neither a document whose hash does not match nor one that does not validate', async () => {
    const server = await start();
    const mismatch = await post(server, { query: SETTINGS, extensions: persisted(ROSTER) });
    expect(codeOf(mismatch)).toBe('PERSISTED_QUERY_MISMATCH');
    expect(mismatch.body).not.toHaveProperty('data');
    expect(codeOf(await post(server, { extensions: persisted(ROSTER) }))).toBe('PERSISTED_QUERY_NOT_FOUND');
    const invalid = '{ nope }';
    expect(codeOf(await post(server, { query: invalid, extensions: persisted(invalid) }))).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(codeOf(await post(server, { extensions: persisted(invalid) }))).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('keeps at most maxPersistedQueries documents, forgetting the least recently used', async () => {
    const server = await start({ app: { limits: { maxPersistedQueries: 2 } } });
    const [a, b, c] = ['query A { souls { id } }', 'query B { souls { name } }', 'query C { settings { traitLimit } }'];
    const register = async (query: string) => expect((await post(server, { query, extensions: persisted(query) })).body.errors).toBeUndefined();
    const known = async (query: string) => codeOf(await post(server, { extensions: persisted(query) })) !== 'PERSISTED_QUERY_NOT_FOUND';
    await register(a);
    await register(b);
    expect(await known(a)).toBe(true);
    await register(c);
    expect([await known(a), await known(b), await known(c)]).toEqual([true, false, true]);
  });

  it('prices and bounds a document sent by hash like any other', async () => {
    const server = await start({ app: { limits: { maxCost: 60, maxFilterTags: 3 } } });
    const costly = 'query Costly { souls { name evidence { markdown } } }';
    expect(codeOf(await post(server, { query: costly, extensions: persisted(costly) }))).toBe('COST_LIMIT');
    const refused = await post(server, { extensions: persisted(costly) });
    expect(refused.body.errors[0]).toMatchObject({ extensions: { code: 'COST_LIMIT', limit: 60, setting: 'maxCost' } });
    expect(refused.body).not.toHaveProperty('data');
    const tagged = 'query Tagged($tags: [String!]) { shards(tags: $tags, first: 1) { totalCount } }';
    expect((await post(server, { query: tagged, variables: { tags: ['a'] }, extensions: persisted(tagged) })).body.errors).toBeUndefined();
    const long = await post(server, { variables: { tags: ['a', 'b', 'c', 'd'] }, extensions: persisted(tagged) });
    expect(long.body.errors[0]).toMatchObject({ extensions: { code: 'LIST_TOO_LONG', limit: 3, setting: 'maxFilterTags' } });
  });
});

describe('an allow-list server (--persisted-operations)', () => {
  const known = new Map([[sha256(ROSTER), ROSTER], ['settings-v1', SETTINGS]]);

  it('runs a listed operation by its id or its exact text, and refuses any other with a clear error', async () => {
    const server = await start({ app: { persistedOperations: known } });
    expect((await post(server, { extensions: persisted(ROSTER) })).body).toEqual({ data: { souls: [] } });
    expect((await get(server, { extensions: { persistedQuery: { version: 1, sha256Hash: 'settings-v1' } } })).body).toEqual({ data: { settings: { traitLimit: 10 } } });
    expect((await post(server, { query: SETTINGS })).body).toEqual({ data: { settings: { traitLimit: 10 } } });

    const other = await post(server, { query: '{ souls { id } }' }, GRAPHQL_RESPONSE);
    expect(other.status).toBe(403);
    expect(other.body.errors[0].extensions.code).toBe('OPERATION_NOT_IN_LIST');
    expect(other.body.errors[0].message).toContain('--persisted-operations');
    expect(other.body).not.toHaveProperty('data');
    const unknown = await post(server, { extensions: persisted('{ souls { id } }') });
    expect(unknown.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    // Nothing is registered on such a server: a document sent with its hash is still refused, then and after.
    const registering = '{ souls { id } }';
    expect(codeOf(await post(server, { query: registering, extensions: persisted(registering) }))).toBe('OPERATION_NOT_IN_LIST');
    expect(codeOf(await post(server, { extensions: persisted(registering) }))).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    const mutation = await post(server, { query: 'mutation { createSoul(input: { name: "Forged", essence: "x" }) { __typename } }' });
    expect(codeOf(mutation)).toBe('OPERATION_NOT_IN_LIST');
  });

  it('holds on a WebSocket too', async () => {
    const server = await start({ app: { persistedOperations: known } });
    const socket = new WebSocket(server.wsUrl, 'graphql-transport-ws');
    const messages: any[] = [];
    socket.on('message', (data) => messages.push(JSON.parse(String(data))));
    try {
      await new Promise((resolve) => socket.once('open', resolve));
      socket.send(JSON.stringify({ type: 'connection_init' }));
      for (let polls = 0; !messages.some((m) => m.type === 'connection_ack'); polls++) {
        if (polls > 500) throw new Error(`no connection_ack: ${JSON.stringify(messages)}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      socket.send(JSON.stringify({ id: 'other', type: 'subscribe', payload: { query: '{ souls { id } }' } }));
      socket.send(JSON.stringify({ id: 'listed', type: 'subscribe', payload: { query: ROSTER } }));
      const arrived = (id: string, type: string) => messages.some((m) => m.id === id && m.type === type);
      for (let polls = 0; !(arrived('other', 'error') && arrived('listed', 'complete')); polls++) {
        if (polls > 500) throw new Error(`no answers: ${JSON.stringify(messages)}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(messages.find((m) => m.id === 'other').payload[0].extensions).toEqual({ code: 'OPERATION_NOT_IN_LIST' });
      expect(messages.find((m) => m.id === 'listed' && m.type === 'next').payload).toEqual({ data: { souls: [] } });
    } finally {
      socket.terminate();
    }
  });
});

describe('the file of operations', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'souls-persisted-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };

  it("reads an object of id → document (graphql-codegen, Relay) or Apollo's manifest, by flag, variable or config file", () => {
    const map = file('map.json', { abc: ROSTER });
    expect(loadConfig(['--persisted-operations', map], {}).persistedOperations).toEqual(new Map([['abc', ROSTER]]));
    const manifest = file('manifest.json', { format: 'apollo-persisted-query-manifest', version: 1, operations: [{ id: sha256(ROSTER), name: 'Roster', type: 'query', body: ROSTER }] });
    expect(loadConfig([], { SOULS_PERSISTED_OPERATIONS: manifest }).persistedOperations).toEqual(new Map([[sha256(ROSTER), ROSTER]]));
    const config = file('config.json', { persistedOperations: map });
    expect(loadConfig(['--config', config], {}).persistedOperations?.get('abc')).toBe(ROSTER);
    expect(loadConfig([], {}).persistedOperations).toBeNull();
  });

  it('refuses a file that cannot serve, naming the setting and the entry', () => {
    const refused = (content: unknown) => {
      try {
        loadConfig(['--persisted-operations', file('bad.json', content)], {});
      } catch (error) {
        expect(error).toBeInstanceOf(ValidationError);
        return describeError(error);
      }
      throw new Error('accepted');
    };
    expect(refused('{ not json')).toMatch(/--persisted-operations.*not valid JSON/);
    expect(refused([ROSTER])).toMatch(/must hold a JSON object/);
    expect(refused({})).toMatch(/lists no operation/);
    expect(refused({ abc: 42 })).toMatch(/\["abc"\].*must be the text of a GraphQL document/);
    expect(refused({ format: 'apollo-persisted-query-manifest', operations: [{ body: ROSTER }] })).toMatch(/operations\[0\]\.id/);
  });

  const { cli, exited, killAll } = cliRunner();
  afterEach(killAll);

  it('souls serve refuses to start on a document that does not parse, naming its id', async () => {
    const path = file('broken.json', { good: ROSTER, broken: 'query { souls { ' });
    const result = await exited(cli(['serve', '--port', '0', '--db', ':memory:', '--persisted-operations', path]));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('--persisted-operations["broken"]');
    expect(result.stderr).toContain('is not a GraphQL document');
    expectNoStack(result.stderr);
  });
});
