// urql 6: first with its defaults (queries as GET, no header a server must ask for), then as docs/api.md configures
// it (examples/clients/urql.ts): the persisted exchange and subscriptions over WebSocket and over SSE.
import { cacheExchange, Client, fetchExchange, type OperationResult } from '@urql/core';
import { describe, expect, it } from 'vitest';
import { soulsUrqlClient } from '../../examples/clients/urql.ts';
import { bearer, CRYSTALLIZATION_READY, DASHBOARD, DROP_SHARDS, expectDashboard, INVALID_SHARDS_ERROR, invalidShards, newSoul, readinessHeard } from './support.ts';
import { readyingShards, recordRequests, serverPerFile, TOKEN, type ReadinessClient } from './support.ts';

const server = serverPerFile();

/** The client as the readiness check drives it: its subscription exchange, and its own mutation. */
function readiness(client: Client): ReadinessClient {
  return {
    subscribe(soulId) {
      let stop = () => {};
      const event = new Promise<OperationResult>((resolve) => {
        stop = client.subscription(CRYSTALLIZATION_READY, { soulIds: [soulId] }).subscribe(resolve).unsubscribe;
      }).then(({ data, error }) => (error ? Promise.reject(error) : data));
      return { event, stop: () => stop() };
    },
    async dropShards(inputs) {
      const { data, error } = await client.mutation(DROP_SHARDS, { inputs }).toPromise();
      if (error) throw error;
      return data;
    },
  };
}

describe('urql 6 with its defaults', () => {
  const defaultClient = () => new Client({ url: server().url, exchanges: [cacheExchange, fetchExchange] });

  it('reads the dashboard with a GET that carries no CSRF header', async () => {
    const sent = recordRequests();
    const { data, error } = await defaultClient().query(DASHBOARD, {}).toPromise();
    expect(error).toBeUndefined();
    await expectDashboard(server(), data);
    expect(sent[0]).toMatchObject({ method: 'GET', document: true, hash: false });
    expect(Object.keys(sent[0].headers).filter((name) => /csrf|preflight/i.test(name))).toEqual([]);
  });

  it('drops shards with a POST, and reads a ValidationError whole through `... on Error`', async () => {
    const client = defaultClient();
    const id = await newSoul(server(), 'Tamsin');
    const dropped = await client.mutation(DROP_SHARDS, { inputs: readyingShards(server(), id) }).toPromise();
    expect(dropped.data.dropShards).toMatchObject({ __typename: 'DropShardsPayload', readySouls: [{ id, pendingShardCount: 3, crystallization: { ready: true } }] });
    const refused = await client.mutation(DROP_SHARDS, { inputs: invalidShards(id) }).toPromise();
    expect(refused.data).toEqual({ dropShards: INVALID_SHARDS_ERROR });
  });
});

describe('urql 6 as docs/api.md configures it', () => {
  it('hears crystallizationReady over WebSocket (graphql-ws)', async () => {
    await readinessHeard(server(), 'websocket', 'Oswin', readiness(soulsUrqlClient(server().url)));
  });

  it('hears crystallizationReady over Server-Sent Events (graphql-sse)', async () => {
    await readinessHeard(server(), 'sse', 'Wren', readiness(soulsUrqlClient(server().url, { subscriptions: 'sse' })));
  });

  it('sends a query by its hash, over GET, once the server has learned it', async () => {
    const sent = recordRequests();
    const query = 'query UrqlPersisted { souls(orderBy: NAME) { id name } }';
    const first = await soulsUrqlClient(server().url).query(query, {}).toPromise();
    expect(first.error).toBeUndefined();
    expect(sent).toMatchObject([
      { method: 'GET', document: false, hash: true }, // PersistedQueryNotFound
      { method: 'GET', document: true, hash: true }, // the document with its hash: learned
    ]);
    sent.length = 0;
    const again = await soulsUrqlClient(server().url).query(query, {}).toPromise(); // a new client: a cold cache
    expect(sent).toMatchObject([{ method: 'GET', document: false, hash: true }]);
    expect(again.data).toEqual(first.data);
    expect(again.data.souls.length).toBeGreaterThanOrEqual(2);
  });
});

describe('urql 6 on a server with tokens', () => {
  const tokened = serverPerFile({ tokens: true });

  it('sends the token as a Bearer header, as connectionParams and on the event stream', async () => {
    const { data, error } = await soulsUrqlClient(tokened().url, { token: TOKEN }).query(DASHBOARD, {}).toPromise();
    expect(error).toBeUndefined();
    await expectDashboard(tokened(), data, bearer(TOKEN));
    await readinessHeard(tokened(), 'websocket', 'Hale', readiness(soulsUrqlClient(tokened().url, { token: TOKEN })), bearer(TOKEN));
    await readinessHeard(tokened(), 'sse', 'Idris', readiness(soulsUrqlClient(tokened().url, { token: TOKEN, subscriptions: 'sse' })), bearer(TOKEN));
  });

  it('reports a missing token as the server’s 401 with UNAUTHENTICATED', async () => {
    const { error } = await soulsUrqlClient(tokened().url).query(DASHBOARD, {}).toPromise();
    expect(error?.response?.status).toBe(401);
    expect(error?.graphQLErrors.map((e) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
  });
});
