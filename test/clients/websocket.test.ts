// A plain WebSocket speaking graphql-transport-ws by hand, as docs/api.md shows it (examples/clients/websocket.ts):
// Node's own WebSocket, the one browsers have.
import { describe, expect, it } from 'vitest';
import { subscribe, type Operation } from '../../examples/clients/websocket.ts';
import type { LiveServer } from '../support/server.ts';
import { bearer, CRYSTALLIZATION_READY, DASHBOARD, DROP_SHARDS, expectDashboard, INVALID_SHARDS_ERROR, invalidShards, readinessHeard } from './support.ts';
import { serverPerFile, TOKEN, type ReadinessClient } from './support.ts';

const server = serverPerFile();

/** A query or mutation over its own socket: its one result, once the server has completed it. */
function run(live: LiveServer, token: string | undefined, operation: Operation): Promise<{ data?: any; errors?: unknown[] }> {
  return new Promise((resolve, reject) => {
    let result: { data?: unknown; errors?: unknown[] } | null = null;
    subscribe(live.url, token, operation, {
      next: (answer) => (result = answer),
      error: reject,
      complete: () => (result ? resolve(result) : reject(new Error('completed without a result'))),
    });
  });
}

/** The client as the readiness check drives it: a socket for the subscription, another for the mutation. */
function readiness(live: LiveServer, token?: string): ReadinessClient {
  return {
    subscribe(soulId) {
      let stop = () => {};
      const event = new Promise((resolve, reject) => {
        const operation = { query: CRYSTALLIZATION_READY, variables: { soulIds: [soulId] } };
        stop = subscribe(live.url, token, operation, { next: (result) => resolve(result.data), error: reject, complete: () => reject(new Error('completed')) });
      });
      return { event, stop: () => stop() };
    },
    dropShards: async (inputs) => (await run(live, token, { query: DROP_SHARDS, variables: { inputs } })).data,
  };
}

describe('a plain WebSocket (graphql-transport-ws by hand)', () => {
  it('reads the dashboard over the socket, as the server answers it over HTTP', async () => {
    const { data, errors } = await run(server(), undefined, { query: DASHBOARD });
    expect(errors).toBeUndefined();
    await expectDashboard(server(), data);
  });

  it('hears crystallizationReady when its own dropShards makes a soul ready', async () => {
    await readinessHeard(server(), 'websocket', 'Tamsin', readiness(server()));
  });

  it('reads a ValidationError whole through `... on Error`', async () => {
    expect(await run(server(), undefined, { query: DROP_SHARDS, variables: { inputs: invalidShards('1') } })).toEqual({ data: { dropShards: INVALID_SHARDS_ERROR } });
  });

  it('gets a refused operation as an `error` message naming what is wrong', async () => {
    await expect(run(server(), undefined, { query: '{ souls { nope } }' })).rejects.toMatchObject([
      { message: 'Cannot query field "nope" on type "Soul". Did you mean "name"?', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } },
    ]);
  });
});

describe('a plain WebSocket on a server with tokens', () => {
  const tokened = serverPerFile({ tokens: true });

  it('sends the token in connection_init', async () => {
    await expectDashboard(tokened(), (await run(tokened(), TOKEN, { query: DASHBOARD })).data, bearer(TOKEN));
    await readinessHeard(tokened(), 'websocket', 'Hale', readiness(tokened(), TOKEN), bearer(TOKEN));
  });

  it('is closed with 4403 Forbidden without one', async () => {
    await expect(run(tokened(), undefined, { query: DASHBOARD })).rejects.toThrow('closed 4403 Forbidden');
  });
});
