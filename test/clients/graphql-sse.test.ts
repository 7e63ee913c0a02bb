// graphql-sse as docs/api.md configures it (examples/clients/graphql-sse.ts), in both of its modes: every operation
// over Server-Sent Events, distinct connections (one request each) and the single connection mode (one stream).
import type { Client, ExecutionResult } from 'graphql-sse';
import { afterEach, describe, expect, it } from 'vitest';
import { soulsSseClient } from '../../examples/clients/graphql-sse.ts';
import type { LiveServer } from '../support/server.ts';
import { bearer, CRYSTALLIZATION_READY, DASHBOARD, DROP_SHARDS, expectDashboard, INVALID_SHARDS_ERROR, invalidShards, readinessHeard } from './support.ts';
import { serverPerFile, TOKEN, type ReadinessClient } from './support.ts';

const server = serverPerFile();
const tokened = serverPerFile({ tokens: true });
const clients: Client[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.dispose();
});

function sseClient(live: LiveServer, token: string | undefined, singleConnection: boolean): Client {
  const client = soulsSseClient(live.url, token, { singleConnection });
  clients.push(client);
  return client;
}

/** The only result of a query or mutation. */
async function result(client: Client, query: string, variables: Record<string, unknown> = {}): Promise<ExecutionResult<any, unknown>> {
  for await (const answer of client.iterate({ query, variables })) return answer;
  throw new Error(`no result for ${query}`);
}

/** The client as the readiness check drives it: both the subscription and the mutation over SSE. */
function readiness(client: Client): ReadinessClient {
  return {
    subscribe(soulId) {
      const events = client.iterate({ query: CRYSTALLIZATION_READY, variables: { soulIds: [soulId] } });
      return { event: events.next().then(({ value }) => value?.data), stop: () => void events.return?.() };
    },
    dropShards: async (inputs) => (await result(client, DROP_SHARDS, { inputs })).data,
  };
}

for (const singleConnection of [false, true]) {
  const mode = singleConnection ? 'single connection mode' : 'distinct connections (its default)';
  describe(`graphql-sse, ${mode}`, () => {
    it('reads the dashboard in one request, as the server answers it', async () => {
      const { data, errors } = await result(sseClient(server(), undefined, singleConnection), DASHBOARD);
      expect(errors).toBeUndefined();
      await expectDashboard(server(), data);
    });

    it('hears crystallizationReady when its own dropShards makes a soul ready', async () => {
      await readinessHeard(server(), 'sse', `Ready in ${mode}`, readiness(sseClient(server(), undefined, singleConnection)));
    });

    it('reads a ValidationError whole through `... on Error`', async () => {
      const refused = await result(sseClient(server(), undefined, singleConnection), DROP_SHARDS, { inputs: invalidShards('1') });
      expect(refused).toEqual({ data: { dropShards: INVALID_SHARDS_ERROR } });
    });

    it('sends the token on every request of a server with tokens, and gives up at once on a missing one', async () => {
      const client = sseClient(tokened(), TOKEN, singleConnection);
      await expectDashboard(tokened(), (await result(client, DASHBOARD)).data, bearer(TOKEN));
      await readinessHeard(tokened(), 'sse', `Ready in ${mode}`, readiness(client), bearer(TOKEN));
      await expect(result(sseClient(tokened(), undefined, singleConnection), DASHBOARD)).rejects.toThrow('refused with HTTP 401: check the token');
    });
  });
}
