// graphql-sse as docs/api.md configures it (examples/clients/graphql-sse.ts), in both of its modes: every operation
// over Server-Sent Events, distinct connections (one request each) and the single connection mode (one stream).
import type { Client, ExecutionResult } from 'graphql-sse';
import { afterEach, describe, expect, it } from 'vitest';
import { soulsSseClient } from '../../examples/clients/graphql-sse.ts';
import type { LiveServer } from '../support/server.ts';
import {
  bearer,
  CRYSTALLIZATION_READY,
  DASHBOARD,
  dashboardAnswer,
  DROP_SHARDS,
  INVALID_SHARDS_ERROR,
  invalidShards,
  newSoul,
  readyingShards,
  serverPerFile,
  subscriptionsLive,
  TOKEN,
} from './support.ts';

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

/** Subscribes to a new soul's readiness, waits until the server has the subscription, makes it ready with the client's own mutation. */
async function readinessHeard(client: Client, live: LiveServer, name: string, headers: Record<string, string> = {}): Promise<void> {
  const id = await newSoul(live, name, headers);
  const events = client.iterate({ query: CRYSTALLIZATION_READY, variables: { soulIds: [id] } });
  const first = events.next();
  try {
    await subscriptionsLive(live, 'sse', 1, headers);
    const dropped = await result(client, DROP_SHARDS, { inputs: readyingShards(live, id) });
    expect(dropped.data.dropShards.readySouls).toMatchObject([{ id }]);
    const { value } = await first;
    expect(value).toMatchObject({ data: { crystallizationReady: { soul: { id, crystallization: { ready: true } } } } });
  } finally {
    await events.return?.();
  }
  await subscriptionsLive(live, 'sse', 0, headers);
}

for (const singleConnection of [false, true]) {
  const mode = singleConnection ? 'single connection mode' : 'distinct connections (its default)';
  describe(`graphql-sse, ${mode}`, () => {
    it('reads the dashboard in one request, as the server answers it', async () => {
      expect(await result(sseClient(server(), undefined, singleConnection), DASHBOARD)).toEqual({ data: await dashboardAnswer(server()) });
    });

    it('hears crystallizationReady when its own dropShards makes a soul ready', async () => {
      await readinessHeard(sseClient(server(), undefined, singleConnection), server(), `Ready in ${mode}`);
    });

    it('reads a ValidationError whole through `... on Error`', async () => {
      const refused = await result(sseClient(server(), undefined, singleConnection), DROP_SHARDS, { inputs: invalidShards('1') });
      expect(refused).toEqual({ data: { dropShards: INVALID_SHARDS_ERROR } });
    });

    it('sends the token on every request of a server with tokens, and gives up at once on a missing one', async () => {
      const client = sseClient(tokened(), TOKEN, singleConnection);
      expect(await result(client, DASHBOARD)).toEqual({ data: await dashboardAnswer(tokened(), bearer(TOKEN)) });
      await readinessHeard(client, tokened(), `Ready in ${mode}`, bearer(TOKEN));
      await expect(result(sseClient(tokened(), undefined, singleConnection), DASHBOARD)).rejects.toThrow('refused with HTTP 401: check the token');
    });
  });
}
