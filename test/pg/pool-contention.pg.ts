// A full PostgreSQL pool is a wait, not an outage (npm run test:pg): one soul's row held locked by a connection of
// the test while 30 writers of that soul wait on it through `souls serve`. Reads of other souls are answered, /ready
// stays 200, the metrics show the wait, and once the lock is let go every write goes through.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { cliRunner } from '../support/cli.ts';
import { createScratchDatabase, type ScratchDatabase } from '../support/pg-database.ts';
import { metricSample } from '../support/server.ts';

const { cli, printed, killAll } = cliRunner({ startMs: 60_000 });
const databases: ScratchDatabase[] = [];
afterEach(killAll);
afterAll(() => {
  for (const database of databases) database.drop();
});

type Answer = { status: number; body: { data?: any; errors?: Array<{ message: string; extensions: { code: string } }> } };
const graphql = async (url: string, query: string): Promise<Answer> => {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
};

async function until(done: () => Promise<boolean>, what: string, waitMs = 60_000): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`waited ${waitMs / 1000} s for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A connection of the test's own (pg's Client loaded as the store loads it: pg's entry cannot load in Vitest's workers). */
async function connection(url: string) {
  const { default: Client } = (await import('pg/lib/client.js' as string)) as { default: typeof import('pg').Client };
  const client = new Client({ connectionString: url });
  await client.connect();
  return client;
}

const drop = (soulId: string, i: number) => `mutation { dropShard(input: { soulIds: ["${soulId}"], content: "Counted crate ${i} at the north gate.", source: "ledger" }) {
  __typename ... on DropShardPayload { shard { id } } ... on Error { message } } }`;

describe('one soul locked while 30 writers of it wait', { timeout: 180_000 }, () => {
  it('reads of other souls are answered, /ready stays 200, the wait shows in /metrics, and every write goes through once the lock goes', async () => {
    const database = createScratchDatabase();
    databases.push(database);
    const server = cli(['serve', '--port', '0', '--db', database.url, '--db-pool-size', '10', '--db-timeout', '120000']);
    const [, url] = await printed(server, /Souls API on (http:\S+\/graphql)/);
    const base = url.replace(/\/graphql$/, '');
    const create = async (name: string) => (await graphql(url, `mutation { createSoul(input: { name: "${name}", essence: "${name} keeps a ledger." }) { ... on SoulPayload { soul { id } } } }`)).body.data.createSoul.soul.id as string;
    const locked = await create('Ferrin');
    const other = await create('Sela');
    const metrics = async () => (await fetch(`${base}/metrics`)).text();

    const holder = await connection(database.url);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM souls WHERE id = $1 FOR UPDATE', [Number(locked)]);
      const writers = Array.from({ length: 30 }, (_, i) => graphql(url, drop(locked, i)));
      // Every connection a write may hold waits on the lock, and the other writers wait for one.
      await until(async () => metricSample(await metrics(), 'souls_pg_pool_waiting_units') >= 20, '20 units waiting for a connection');
      const laterWrite = graphql(url, drop(other, 1));

      for (let i = 0; i < 5; i++) {
        const read = await graphql(url, `{ soul(id: "${other}") { name pendingShardCount } souls { name } }`);
        expect(read.body, JSON.stringify(read.body)).toEqual({ data: { soul: { name: 'Sela', pendingShardCount: 0 }, souls: [{ name: 'Ferrin' }, { name: 'Sela' }] } });
      }
      const ready = await fetch(`${base}/ready`);
      expect(ready.status).toBe(200);
      const during = await metrics();
      expect(metricSample(during, 'souls_pg_pool_waiting_units')).toBeGreaterThanOrEqual(20);
      expect(metricSample(during, 'souls_pg_pool_write_connections')).toBe(8);
      expect(metricSample(during, 'souls_pg_pool_wait_seconds_count', { purpose: 'read' })).toBeGreaterThan(0);

      await holder.query('COMMIT');
      const answers = await Promise.all([...writers, laterWrite]);
      for (const answer of answers) expect(answer.body.data?.dropShard, JSON.stringify(answer.body)).toMatchObject({ __typename: 'DropShardPayload' });
      const after = await metrics();
      expect(metricSample(after, 'souls_pg_pool_waiting_units')).toBe(0);
      // The writers that found the writes' share full waited for it, and say so.
      expect(metricSample(after, 'souls_pg_pool_wait_seconds_count', { purpose: 'write' }) - metricSample(after, 'souls_pg_pool_wait_seconds_bucket', { purpose: 'write', le: '0.1' })).toBeGreaterThanOrEqual(20);
      expect((await graphql(url, `{ soul(id: "${locked}") { pendingShardCount } }`)).body.data.soul.pendingShardCount).toBe(30);
    } finally {
      await holder.end();
    }
  });

  it('a writer that finds no connection within --db-timeout fails alone, saying the pool was busy; the database is not taken for down', async () => {
    const database = createScratchDatabase();
    databases.push(database);
    const server = cli(['serve', '--port', '0', '--db', database.url, '--db-pool-size', '4', '--db-timeout', '3000']);
    const [, url] = await printed(server, /Souls API on (http:\S+\/graphql)/);
    const base = url.replace(/\/graphql$/, '');
    const locked = (await graphql(url, 'mutation { createSoul(input: { name: "Ilse", essence: "Ilse waits." }) { ... on SoulPayload { soul { id } } } }')).body.data.createSoul.soul.id as string;

    const holder = await connection(database.url);
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM souls WHERE id = $1 FOR UPDATE', [Number(locked)]);
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => graphql(url, drop(locked, i))));
      const messages = answers.map((answer) => answer.body.errors?.[0]?.message ?? JSON.stringify(answer.body));
      // Three writes held the writes' share of a pool of 4 and waited on the lock; three never had a connection.
      expect(messages.filter((m) => m.startsWith('no connection of the pool came free for insertShards within 3000 ms'))).toHaveLength(3);
      expect(messages.filter((m) => m === 'the database did not answer insertShards within 3000 ms: its outcome is unknown')).toHaveLength(3);
      expect(answers.every((answer) => answer.body.errors?.[0]?.extensions.code === 'STORAGE_UNAVAILABLE')).toBe(true);
      // The lock is still held: the server is not marked down for it, reads and /ready answer.
      expect((await graphql(url, '{ souls { name } }')).body).toEqual({ data: { souls: [{ name: 'Ilse' }] } });
      expect((await fetch(`${base}/ready`)).status).toBe(200);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
    // Dropped on the client side, the timed-out writes were rolled back: none of them wrote.
    expect((await graphql(url, `{ soul(id: "${locked}") { pendingShardCount } }`)).body.data.soul.pendingShardCount).toBe(0);
  });
});
