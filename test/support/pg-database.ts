// A PostgreSQL database of its own for a test run on the server SOULS_TEST_PG_URL names: created with a random
// name, dropped afterwards, so two runs never collide.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export const DEFAULT_TEST_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

export type ScratchDatabase = { url: string; drop(): void };

// In a child process: under Vitest's module resolution pg's CommonJS build cannot load pg-pool.
const runSql = `import pg from 'pg';
const client = new pg.Client({ connectionString: process.argv[1] });
await client.connect();
try { await client.query(process.argv[2]); } finally { await client.end(); }`;

function admin(serverUrl: string, sql: string): void {
  try {
    execFileSync(process.execPath, ['--input-type=module', '-e', runSql, serverUrl, sql], { stdio: ['ignore', 'ignore', 'pipe'], cwd: import.meta.dirname });
  } catch (error) {
    const why = String((error as { stderr?: Buffer }).stderr ?? error).trim().split('\n').findLast((line) => line.trim() !== '') ?? '';
    throw new Error(`PostgreSQL at ${serverUrl} refused ${sql.split(' ').slice(0, 2).join(' ')} (${why}): install and start it (apt-get install postgresql) or set SOULS_TEST_PG_URL`);
  }
}

export function createScratchDatabase(serverUrl = process.env.SOULS_TEST_PG_URL ?? DEFAULT_TEST_PG_URL, prefix = 'souls_test'): ScratchDatabase {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  admin(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
