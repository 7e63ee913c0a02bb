// Apollo Client 4 as docs/api.md configures it (examples/clients/apollo.ts): HttpLink with automatic persisted
// queries, GraphQLWsLink for subscriptions, and InMemoryCache with the generated possibleTypes.
import { ApolloClient, CombinedGraphQLErrors, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { describe, expect, it, vi } from 'vitest';
import { soulsApolloClient } from '../../examples/clients/apollo.ts';
import { bearer, CRYSTALLIZATION_READY, DASHBOARD, DROP_SHARDS, expectDashboard, INVALID_SHARDS_ERROR, invalidShards, newSoul, readinessHeard } from './support.ts';
import { readyingShards, recordRequests, serverPerFile, TOKEN, type ReadinessClient } from './support.ts';

const server = serverPerFile();

/** The client as the readiness check drives it: GraphQLWsLink for the subscription, HTTP for the mutation. */
function readiness(client: ApolloClient): ReadinessClient {
  return {
    subscribe(soulId) {
      let stop = () => {};
      const event = new Promise((resolve, reject) => {
        const subscription = client.subscribe({ query: gql(CRYSTALLIZATION_READY), variables: { soulIds: [soulId] } }).subscribe({ next: (result) => resolve(result.data), error: reject });
        stop = () => subscription.unsubscribe();
      });
      return { event, stop: () => stop() };
    },
    dropShards: async (inputs) => (await client.mutate({ mutation: gql(DROP_SHARDS), variables: { inputs } })).data,
  };
}

describe('Apollo Client 4', () => {
  it('reads the dashboard in one request, as the server answers it', async () => {
    const client = soulsApolloClient(server().url);
    const { data } = await client.query({ query: gql(DASHBOARD) });
    await expectDashboard(server(), data);
  });

  it('normalises souls by id: a mutation’s answer updates the soul the dashboard cached', async () => {
    const client = soulsApolloClient(server().url);
    const id = await newSoul(server(), 'Tamsin');
    const before = await client.query({ query: gql(DASHBOARD) });
    const cached = (before.data as { souls: { id: string; pendingShardCount: number }[] }).souls.find((soul) => soul.id === id);
    expect(cached?.pendingShardCount).toBe(0);

    const { data } = await client.mutate({ mutation: gql(DROP_SHARDS), variables: { inputs: readyingShards(server(), id) } });
    expect(data).toMatchObject({ dropShards: { __typename: 'DropShardsPayload', readySouls: [{ id, pendingShardCount: 3, crystallization: { ready: true } }] } });

    const after = await client.query({ query: gql(DASHBOARD), fetchPolicy: 'cache-only' });
    const soul = (after.data as { souls: { id: string; pendingShardCount: number; crystallization: { ready: boolean } }[] }).souls.find((s) => s.id === id);
    expect(soul).toMatchObject({ pendingShardCount: 3, crystallization: { ready: true } });
  });

  it('hears crystallizationReady over GraphQLWsLink when its own dropShards makes a soul ready', async () => {
    await readinessHeard(server(), 'websocket', 'Oswin', readiness(soulsApolloClient(server().url)));
  });

  it('reads a ValidationError whole through `... on Error`, thanks to possibleTypes', async () => {
    const { data } = await soulsApolloClient(server().url).mutate({ mutation: gql(DROP_SHARDS), variables: { inputs: invalidShards('1') } });
    expect(data).toEqual({ dropShards: INVALID_SHARDS_ERROR });
  });

  it('without possibleTypes the cache drops `message`: what the generated file is for', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const client = new ApolloClient({ link: new HttpLink({ uri: server().url }), cache: new InMemoryCache() });
    const { data } = await client.mutate({ mutation: gql(DROP_SHARDS), variables: { inputs: invalidShards('1') } });
    expect(data).toEqual({ dropShards: { __typename: 'ValidationError', field: 'inputs[1].content' } });
    expect(warn.mock.calls.flat().join('\n')).toContain('missing `possibleTypes` entry');
  });

  it('sends a query by its hash after the server has learned it once, over GET', async () => {
    const sent = recordRequests();
    const query = gql`query ApolloPersisted { souls(orderBy: NAME) { id name } }`;
    const first = await soulsApolloClient(server().url).query({ query });
    expect(sent).toMatchObject([
      { method: 'GET', document: false, hash: true }, // PersistedQueryNotFound
      { method: 'POST', document: true, hash: true }, // the document with its hash: learned
    ]);
    sent.length = 0;
    const again = await soulsApolloClient(server().url).query({ query }); // a new client: a cold cache, the server remembers
    expect(sent).toMatchObject([{ method: 'GET', document: false, hash: true }]);
    expect(again.data).toEqual(first.data);
    expect((again.data as { souls: unknown[] }).souls.length).toBeGreaterThanOrEqual(2);
  });

  it('sends a mutation by its hash over POST once the server has learned it', async () => {
    const mutation = gql`mutation ApolloPersistedDrop($inputs: [DropShardInput!]!) { dropShards(inputs: $inputs) { __typename } }`;
    const id = await newSoul(server(), 'Wren');
    const sent = recordRequests();
    const inputs = [{ content: 'Watched the river rise.', source: 'dialogue', soulIds: [id] }];
    await soulsApolloClient(server().url).mutate({ mutation, variables: { inputs } });
    expect(sent).toMatchObject([
      { method: 'POST', document: false, hash: true },
      { method: 'POST', document: true, hash: true },
    ]);
    sent.length = 0;
    const { data } = await soulsApolloClient(server().url).mutate({ mutation, variables: { inputs } });
    expect(sent).toMatchObject([{ method: 'POST', document: false, hash: true }]);
    expect(data).toEqual({ dropShards: { __typename: 'DropShardsPayload' } });
  });
});

describe('Apollo Client 4 on a server with tokens', () => {
  const tokened = serverPerFile({ tokens: true });

  it('sends the token as a Bearer header and as connectionParams', async () => {
    const client = soulsApolloClient(tokened().url, TOKEN);
    const { data } = await client.query({ query: gql(DASHBOARD) });
    await expectDashboard(tokened(), data, bearer(TOKEN));

    await readinessHeard(tokened(), 'websocket', 'Hale', readiness(client), bearer(TOKEN));
  });

  it('reports a missing token as the server’s UNAUTHENTICATED error', async () => {
    const failure = await soulsApolloClient(tokened().url).query({ query: gql(DASHBOARD) }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(CombinedGraphQLErrors.is(failure) && failure.errors.map((error) => error.extensions?.code)).toEqual(['UNAUTHENTICATED']);
  });
});
