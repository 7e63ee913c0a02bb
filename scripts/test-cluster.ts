// npm run test:cluster: three `souls serve` replicas sharing a real PostgreSQL and a real Redis, checked from outside
// (test/cluster), then the examples' and the web app's tests against a replica. Takes SOULS_TEST_PG_URL and
// SOULS_TEST_REDIS_URL; creates a database of its own with a random name and drops it afterwards, and uses a random
// Redis channel prefix, so two runs never collide. A service that does not answer is one line, and under CI=true a
// failure. `--sqlite` runs the replicas over one SQLite file instead (WAL), for a machine without PostgreSQL.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const pgUrl = process.env.SOULS_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = process.env.SOULS_TEST_REDIS_URL || 'redis://127.0.0.1:6379';
const sqlite = process.argv.includes('--sqlite');
const vitestArgs = process.argv.slice(2).filter((arg) => arg !== '--sqlite');
const INSTALL = 'apt-get install postgresql redis-server';

const reason = (error: unknown) => (error instanceof Error ? (error as NodeJS.ErrnoException).code ?? error.message : String(error));

async function postgresAnswers(): Promise<string | null> {
  const client = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return `PostgreSQL at ${pgUrl} does not answer (${reason(error)})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function redisAnswers(): Promise<string | null> {
  const client = new Redis(redisUrl, { lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG' ? null : `Redis at ${redisUrl} does not answer PING`;
  } catch (error) {
    return `Redis at ${redisUrl} does not answer (${reason(error)})`;
  } finally {
    client.disconnect();
  }
}

/** The same server, another database. */
function databaseUrl(name: string): string {
  const url = new URL(pgUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

function run(env: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'vitest.cluster.config.ts', ...vitestArgs], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: 'inherit',
    });
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on('SIGINT', forward).on('SIGTERM', forward);
    child.once('close', (code) => resolve(code ?? 1));
  });
}

const missing = (await Promise.all([sqlite ? null : postgresAnswers(), redisAnswers()])).filter((line) => line !== null);
if (missing.length > 0) {
  const ci = process.env.CI === 'true';
  console.error(`test:cluster ${ci ? 'failed' : 'not run'}: ${missing.join('; ')}. Start it (${INSTALL}), or point SOULS_TEST_PG_URL / SOULS_TEST_REDIS_URL at one.`);
  process.exit(ci ? 1 : 0);
}

const run_id = randomBytes(6).toString('hex');
const prefix = `souls-test-${run_id}:`;
let code = 1;
if (sqlite) {
  const dir = mkdtempSync(join(tmpdir(), 'souls-cluster-'));
  try {
    code = await run({ SOULS_CLUSTER_DB: join(dir, 'cluster.db'), SOULS_CLUSTER_REDIS_URL: redisUrl, SOULS_CLUSTER_REDIS_PREFIX: prefix });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else {
  const name = `souls_cluster_${run_id}`;
  await admin(`CREATE DATABASE ${name}`);
  console.log(`test:cluster: database ${name} on ${new URL(pgUrl).host}, Redis ${redisUrl}, channel prefix ${prefix}`);
  try {
    code = await run({ SOULS_CLUSTER_DB: databaseUrl(name), SOULS_CLUSTER_PG_URL: pgUrl, SOULS_CLUSTER_REDIS_URL: redisUrl, SOULS_CLUSTER_REDIS_PREFIX: prefix });
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}
process.exit(code);
