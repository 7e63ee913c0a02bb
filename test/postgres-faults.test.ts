// PostgreSQL faults that need no PostgreSQL: a server that accepts connections and never answers (a TCP listener in the
// test), met at start, through `souls serve` and `npm start` as child processes. test/pg/hung-server.pg.ts has the
// server that stops answering once the API is up, over a real PostgreSQL.
import { spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { workerExecArgv } from '../src/store/postgres-bridge.ts';
import { cleanEnv, cliRunner } from './support/cli.ts';

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
    const run = await exited(cli(['serve', '--port', '0', '--db', 'postgres://127.0.0.1:1/x', '--db-connect-timeout', '0.5']));
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('--db-connect-timeout: must be a whole number of milliseconds, at least 1, got "0.5"');
  });
});

describe('npm start on PostgreSQL', () => {
  it('starts the database worker although Node runs with flags a worker refuses (--max-semi-space-size)', async () => {
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
    // The worker ran and its driver reached the server: the failure is the database's silence.
    expect(stderr).toContain('the database is unavailable: retry later');
    expect(silent.connections()).toBeGreaterThan(0);
    expect(code).not.toBe(0);
  });

  it('hands a worker only the flags it accepts', () => {
    expect(workerExecArgv(['--max-semi-space-size=2', '--conditions', 'import', '-C', 'x', '--conditions=y', '--max-old-space-size', '64', '--title=souls'])).toEqual([]);
    expect(workerExecArgv(['--import', './hooks.js', '--disable-warning=ExperimentalWarning', '--no-warnings', '--experimental-vm-modules', '--enable-source-maps'])).toEqual([
      '--import', './hooks.js', '--disable-warning=ExperimentalWarning', '--no-warnings', '--experimental-vm-modules', '--enable-source-maps',
    ]);
  });
});
