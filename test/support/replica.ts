// Where the servers tests start keep their data. Alone (npm test): in memory, events in memory. Under
// `npm run test:cluster` (SOULS_CLUSTER_* set): each server is a replica of the cluster's kind, a database of its own
// on the cluster's PostgreSQL (or a SQLite file with --sqlite) and events through the cluster's Redis, so the tests
// that use these servers (the examples', the web app's) run against the same store and event path as the replicas.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventChannelPrefix } from '../../src/server/redis-events.ts';
import { databaseUrl } from '../../scripts/services.ts';

export type TestDatabase = {
  /** For openSoulsDb: ':memory:', a SQLite file, or a postgres:// URL. */
  path: string;
  /** For buildApp: null, or events through the cluster's Redis. */
  redis: { url: string; channelPrefix: string } | null;
  /** Removes what `testDatabase` made, once the database is closed. */
  drop(): Promise<void>;
};

let made = 0;
const SERVICES = fileURLToPath(new URL('../../scripts/services.ts', import.meta.url));

/** In a process of its own: under Vitest, pg's require of pg-pool resolves to pg-pool's ES module and fails. */
function admin(url: string, statement: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [SERVICES, 'sql', url, statement], (error, _stdout, stderr) => (error ? reject(new Error(`${statement}: ${stderr || error.message}`)) : resolve()));
  });
}

export async function testDatabase(): Promise<TestDatabase> {
  const clusterDb = process.env.SOULS_CLUSTER_DB;
  const redisUrl = process.env.SOULS_CLUSTER_REDIS_URL;
  if (!clusterDb || !redisUrl) return { path: ':memory:', redis: null, drop: async () => {} };
  const redis = (path: string) => ({ url: redisUrl, channelPrefix: eventChannelPrefix(process.env.SOULS_CLUSTER_REDIS_PREFIX ?? 'souls-test:', path) });
  const adminUrl = process.env.SOULS_CLUSTER_PG_URL;
  if (!adminUrl) {
    const dir = mkdtempSync(join(tmpdir(), 'souls-replica-'));
    const path = join(dir, 'souls.db');
    return { path, redis: redis(path), drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `${new URL(clusterDb).pathname.slice(1)}_${process.pid}_${++made}`;
  await admin(adminUrl, `CREATE DATABASE ${name}`);
  const path = databaseUrl(clusterDb, name);
  return { path, redis: redis(path), drop: () => admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
