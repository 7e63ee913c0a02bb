// A plain WebSocket speaking graphql-transport-ws by hand, as docs/api.md shows it (examples/clients/websocket.ts):
// Node's own WebSocket, the one browsers have.
import { describe, expect, it } from 'vitest';
import { subscribe, type Operation } from '../../examples/clients/websocket.ts';
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

async function readinessHeard(live: LiveServer, token: string | undefined, name: string): Promise<void> {
  const headers = token ? bearer(token) : {};
  const id = await newSoul(live, name, headers);
  let stop = () => {};
  const event = new Promise<any>((resolve, reject) => {
    stop = subscribe(live.url, token, { query: CRYSTALLIZATION_READY, variables: { soulIds: [id] } }, { next: resolve, error: reject, complete: () => reject(new Error('completed')) });
  });
  try {
    await subscriptionsLive(live, 'websocket', 1, headers);
    const dropped = await run(live, token, { query: DROP_SHARDS, variables: { inputs: readyingShards(live, id) } });
    expect(dropped.data.dropShards.readySouls).toMatchObject([{ id }]);
    expect(await event).toMatchObject({ data: { crystallizationReady: { soul: { id, name, crystallization: { ready: true } } } } });
  } finally {
    stop();
  }
  await subscriptionsLive(live, 'websocket', 0, headers);
}

describe('a plain WebSocket (graphql-transport-ws by hand)', () => {
  it('reads the dashboard over the socket, as the server answers it over HTTP', async () => {
    expect(await run(server(), undefined, { query: DASHBOARD })).toEqual({ data: await dashboardAnswer(server()) });
  });

  it('hears crystallizationReady when its own dropShards makes a soul ready', async () => {
    await readinessHeard(server(), undefined, 'Tamsin');
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
    expect(await run(tokened(), TOKEN, { query: DASHBOARD })).toEqual({ data: await dashboardAnswer(tokened(), bearer(TOKEN)) });
    await readinessHeard(tokened(), TOKEN, 'Hale');
  });

  it('is closed with 4403 Forbidden without one', async () => {
    await expect(run(tokened(), undefined, { query: DASHBOARD })).rejects.toThrow('closed 4403 Forbidden');
  });
});
