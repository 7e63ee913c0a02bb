// PostgreSQL faults that need no PostgreSQL: a server that accepts connections and never answers (a TCP listener in the
// test), met at start, through `souls serve` and `npm start` as child processes. test/pg/hung-server.pg.ts has the
// server that stops answering once the API is up, over a real PostgreSQL.
import { spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanEnv, cliRunner, npmStart, runInProcess } from './support/cli.ts';

const PROJECT = fileURLToPath(new URL('..', import.meta.url));
const { cli, exited, killAll } = cliRunner({ exitMs: 60_000 });

/** Accepts connections, reads what they send, never answers. */
async function silentServer(): Promise<{ url: string; connections: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `postgres://souls:secret@127.0.0.1:${port}/souls`,
    connections: () => accepted,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

let silent: Awaited<ReturnType<typeof silentServer>> | null = null;
afterEach(async () => {
  killAll();
  await silent?.close();
  silent = null;
});

describe('a PostgreSQL server that accepts connections and never answers', () => {
  it('fails `souls serve` after the connect timeout, not the call timeout, naming the database for the operator only', async () => {
    silent = await silentServer();
    // --db-timeout alone would wait ten minutes for the first answer.
    const run = await exited(cli(['serve', '--port', '0', '--db', silent.url, '--db-timeout', '600000', '--db-connect-timeout', '300']));
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('the database is unavailable: retry later');
    expect(run.stderr).toMatch(/timeout/i);
    expect(run.stderr).not.toContain('secret');
    expect(silent.connections()).toBeGreaterThan(0);
  });

  it('rejects a connect timeout that is not a whole number of milliseconds', async () => {
    const run = await runInProcess(['serve', '--port', '0', '--db', 'postgres://127.0.0.1:1/x', '--db-connect-timeout', '0.5']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('--db-connect-timeout: must be a whole number of milliseconds, at least 1, got "0.5"');
  });

  it('rejects a connection pool size that is not a whole number from 1 to 1000', async () => {
    const run = await runInProcess(['serve', '--port', '0', '--db', 'postgres://127.0.0.1:1/x', '--db-pool-size', '0']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('--db-pool-size: must be a whole number of connections from 1 to 1000, got "0"');
  });
});

describe('npm start on PostgreSQL', () => {
  it('reaches the database although Node runs with flags a worker thread would refuse (--max-semi-space-size)', async () => {
    silent = await silentServer();
    const child = spawn('npm', ['start', '--silent', '--', '--port', '0', '--db', silent.url, '--db-connect-timeout', '300'], {
      cwd: PROJECT,
      env: cleanEnv({ PATH: `${PROJECT}node_modules/.bin:${process.env.PATH}` }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(stderr).not.toContain('execArgv');
    // The driver reached the server: the failure is the database's silence.
    expect(stderr).toContain('the database is unavailable: retry later');
    expect(silent.connections()).toBeGreaterThan(0);
    expect(code).not.toBe(0);
  });

  it('serves the API on a PostgreSQL database named by SOULS_DB (PGlite here), writes and reads answered', async () => {
    const server = await npmStart(['--port', '0'], { SOULS_DB: 'pglite:memory' });
    try {
      expect(server.stdout()).toContain('"database":"pglite:memory"');
      const post = async (query: string) =>
        (await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) })).json();
      expect(await post('mutation { createSoul(input: { name: "Ledger", essence: "Keeps." }) { __typename } }')).toEqual({ data: { createSoul: { __typename: 'SoulPayload' } } });
      expect(await post('{ souls { name } }')).toEqual({ data: { souls: [{ name: 'Ledger' }] } });
    } finally {
      await server.stop();
    }
  }, 120_000);
});
