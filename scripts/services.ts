// The PostgreSQL and Redis servers the replica tests and benchmarks use: whether they answer, and one-off statements.
//   node scripts/services.ts sql URL STATEMENT   # one statement in a process of its own (what tests under Vitest use:
//                                                # there, pg's require of pg-pool resolves to pg-pool's ES module)
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

const reason = (error: unknown) => (error instanceof Error ? ((error as NodeJS.ErrnoException).code ?? error.message) : String(error));

/** Runs one statement on the server `url` names (CREATE DATABASE and DROP DATABASE cannot run in a transaction); its rows. */
export async function pgStatement(url: string, statement: string, values: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  // Loaded here, so that tests can import this file for databaseUrl: see the note at the top.
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return (await client.query(statement, values)).rows;
  } finally {
    await client.end();
  }
}

/** null when PostgreSQL answers a query, else one line saying why not. */
export async function postgresProblem(url: string): Promise<string | null> {
  try {
    await pgStatement(url, 'SELECT 1');
    return null;
  } catch (error) {
    return `PostgreSQL at ${url} does not answer (${reason(error)})`;
  }
}

/** null when Redis answers a PING, else one line saying why not. */
export async function redisProblem(url: string): Promise<string | null> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG' ? null : `Redis at ${url} does not answer PING`;
  } catch (error) {
    return `Redis at ${url} does not answer (${reason(error)})`;
  } finally {
    client.disconnect();
  }
}

/** The same server as `url`, another database. */
export function databaseUrl(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [command, url, statement] = process.argv.slice(2);
  if (command !== 'sql' || !url || !statement) {
    console.error('usage: node scripts/services.ts sql URL STATEMENT');
    process.exit(2);
  }
  await pgStatement(url, statement);
}
