// npm run test:cluster: three `souls serve` replicas sharing a real PostgreSQL and a real Redis, checked from outside
// (test/cluster), then the examples' and the web app's tests against a replica. Takes SOULS_TEST_PG_URL and
// SOULS_TEST_REDIS_URL; creates a database of its own with a random name and drops it afterwards, and uses a random
// Redis channel prefix, so two runs never collide. A service that does not answer is one line, and under CI=true a
// failure. `--sqlite` runs the replicas over one SQLite file instead (WAL), for a machine without PostgreSQL.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { databaseUrl, pgStatement, postgresProblem, redisProblem } from './services.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const pgUrl = process.env.SOULS_TEST_PG_URL || 'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = process.env.SOULS_TEST_REDIS_URL || 'redis://127.0.0.1:6379';
const sqlite = process.argv.includes('--sqlite');
// The outage test cuts a relay between a replica and the PostgreSQL server: a SQLite file has no such connection.
const vitestArgs = [...process.argv.slice(2).filter((arg) => arg !== '--sqlite'), ...(sqlite ? ['--exclude', 'test/cluster/postgres-outage.test.ts', '--exclude', 'test/cluster/npm-start.test.ts'] : [])];
const INSTALL = 'apt-get install postgresql redis-server';

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

const missing = (await Promise.all([sqlite ? null : postgresProblem(pgUrl), redisProblem(redisUrl)])).filter((line) => line !== null);
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
  await pgStatement(pgUrl, `CREATE DATABASE ${name}`);
  console.log(`test:cluster: database ${name} on ${new URL(pgUrl).host}, Redis ${redisUrl}, channel prefix ${prefix}`);
  try {
    // As the README's replicas start: migrate once, then the servers.
    execFileSync(process.execPath, [join(ROOT, 'src/cli/index.ts'), 'migrate', '--db', databaseUrl(pgUrl, name)], { stdio: 'inherit' });
    code = await run({ SOULS_CLUSTER_DB: databaseUrl(pgUrl, name), SOULS_CLUSTER_PG_URL: pgUrl, SOULS_CLUSTER_REDIS_URL: redisUrl, SOULS_CLUSTER_REDIS_PREFIX: prefix });
  } finally {
    // The run's database and those its test servers made (test/support/replica.ts names them after it), whatever happened.
    const made = await pgStatement(pgUrl, `SELECT datname FROM pg_database WHERE datname = $1 OR datname LIKE $2`, [name, `${name}\\_%`]);
    for (const { datname } of made) await pgStatement(pgUrl, `DROP DATABASE IF EXISTS ${String(datname)} WITH (FORCE)`);
  }
}
process.exit(code);
