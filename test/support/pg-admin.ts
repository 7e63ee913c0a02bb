// `node test/support/pg-admin.ts URL STATEMENT`: one statement on a PostgreSQL server, in a process of its own. Tests
// run it as a child process: under Vitest, pg's require of pg-pool resolves to pg-pool's ES module and fails.
import pg from 'pg';

const [url, statement] = process.argv.slice(2);
const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
await client.connect();
try {
  await client.query(statement);
} finally {
  await client.end();
}
