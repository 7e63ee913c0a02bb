// A replica whose PostgreSQL goes away and comes back (npm run test:cluster, PostgreSQL only): a relay in the test
// between the replica and the real server is killed (every connection dropped, new ones refused) and restarted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cluster, killAll, requireCluster, startReplica, tcpRelay, until, type Relay, type Replica } from './support.ts';

let relay: Relay;
let replica: Replica;

beforeAll(async () => {
  requireCluster();
  relay = await tcpRelay(cluster.db, 5432);
  replica = await startReplica('P', cluster.redisUrl, relay.url, ['--db-connect-timeout', '500', '--db-timeout', '5000']);
});

afterAll(async () => {
  killAll();
  await relay.close();
});

async function post(query: string): Promise<{ data?: any; errors?: Array<{ message: string; extensions: { code: string } }> }> {
  const response = await fetch(replica.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  return (await response.json()) as { data?: any; errors?: Array<{ message: string; extensions: { code: string } }> };
}

const ready = async () => (await fetch(`${replica.base}ready`)).status;

describe('a replica whose database connection is cut', () => {
  it('answers STORAGE_UNAVAILABLE while the database is unreachable, /ready 503, and recovers by itself once it is back', async () => {
    expect(await post('mutation { createSoul(input: { name: "Outlast", essence: "Stays." }) { __typename } }')).toEqual({ data: { createSoul: { __typename: 'SoulPayload' } } });

    relay.cut();
    // Reads and writes, several at once, each a typed error: none hangs, none crashes the replica.
    const during = await Promise.all([
      post('{ souls { name } }'),
      post('mutation { createSoul(input: { name: "Lost", essence: "Never written." }) { __typename } }'),
      post('{ souls { name level } }'),
    ]);
    for (const body of during) expect(body.errors?.[0].extensions.code, JSON.stringify(body)).toBe('STORAGE_UNAVAILABLE');
    expect(JSON.stringify(during)).not.toContain('127.0.0.1');
    expect((await fetch(`${replica.base}health`)).status).toBe(200);
    expect(await ready()).toBe(503);

    await relay.restore();
    await until(async () => (await ready()) === 200, () => 'the replica to be ready again', 60_000);
    // The cluster's database is shared with the other files' souls.
    const after = await post('{ souls { name } }');
    expect(after.data.souls.map((soul: { name: string }) => soul.name)).toContain('Outlast');
    expect(after.data.souls.map((soul: { name: string }) => soul.name)).not.toContain('Lost');
    expect(await post('mutation { createSoul(input: { name: "After", essence: "Written." }) { __typename } }')).toEqual({ data: { createSoul: { __typename: 'SoulPayload' } } });
    const metrics = await (await fetch(`${replica.base}metrics`)).text();
    expect(Number(/^souls_pg_pool_connections (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
    expect(replica.child.process.exitCode).toBeNull();
  });
});
