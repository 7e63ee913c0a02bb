// npm run bench -- --store postgres: the Engine section's write throughput on PostgreSQL (SOULS_BENCH_PG_URL), each
// figure beside raw inserts of the same rows into the same tables, in databases of their own dropped afterwards.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openSoulsDbAsync } from '../src/engine/index.ts';
import { openPostgresStore } from '../src/store/postgres-pool.ts';
import { workloads, targetThroughput, type BenchRow, type RawWriter } from './engine.ts';

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';

async function admin(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** One transaction per shard (or per batch), a statement per row, as a client writing those tables itself would. */
async function rawWriter(url: string, soulIds: readonly number[]): Promise<RawWriter> {
  await (await openPostgresStore({ url })).close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(
    `INSERT INTO souls (id, name, name_key, slug, essence, created_at, updated_at, ordered_at) SELECT id, 'soul-' || id, 'soul-' || id, 'soul-' || id, 'x', 0, 0, 0 FROM unnest($1::bigint[]) AS id`,
    [soulIds],
  );
  const insert = async (input: Parameters<RawWriter['insertOne']>[0], now: number) => {
    const { rows } = await client.query(`INSERT INTO soul_shards (content, source, status, sealed, created_at, updated_at, recorded_at) VALUES ($1, $2, 'pending', 0, $3, $4, $4) RETURNING id`, [
      input.content,
      input.source,
      input.createdAt ?? now,
      now,
    ]);
    for (const soulId of input.soulIds) await client.query('INSERT INTO shard_souls (shard_id, soul_id) VALUES ($1, $2)', [rows[0].id, soulId]);
    for (const tag of input.tags ?? []) await client.query('INSERT INTO shard_tags (shard_id, tag) VALUES ($1, $2) ON CONFLICT DO NOTHING', [rows[0].id, tag]);
  };
  return {
    insertOne: async (input, now) => {
      await client.query('BEGIN');
      await insert(input, now);
      await client.query('COMMIT');
    },
    insertBatch: async (inputs, now) => {
      await client.query('BEGIN');
      for (const input of inputs) await insert(input, now);
      await client.query('COMMIT');
    },
    close: () => client.end(),
  };
}

export async function benchEnginePostgres(): Promise<BenchRow[]> {
  const serverUrl = process.env.SOULS_BENCH_PG_URL ?? DEFAULT_URL;
  const rows: BenchRow[] = [];
  for (const workload of workloads) {
    const names = [`souls_bench_${randomBytes(5).toString('hex')}`, `souls_bench_raw_${randomBytes(5).toString('hex')}`];
    try {
      for (const name of names) await admin(serverUrl, `CREATE DATABASE ${name}`);
    } catch (error) {
      throw new Error(`PostgreSQL does not answer at ${serverUrl} (${(error as Error).message}): start it (apt-get install postgresql) or set SOULS_BENCH_PG_URL`);
    }
    try {
      const [engineUrl, rawUrl] = names.map((name) => databaseUrl(serverUrl, name));
      rows.push(...(await targetThroughput({ openDb: (clock) => openSoulsDbAsync({ path: engineUrl, clock }), raw: (soulIds) => rawWriter(rawUrl, soulIds) }, workload)));
    } finally {
      for (const name of names) await admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    }
  }
  return rows;
}
