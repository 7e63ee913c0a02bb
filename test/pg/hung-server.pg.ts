// A PostgreSQL server that stops answering while `souls serve` runs on it (npm run test:pg): a proxy in the test
// forwards to the real server, then holds every byte, then forwards again.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { cliRunner } from '../support/cli.ts';
import { createScratchDatabase, type ScratchDatabase } from '../support/pg-database.ts';

const { cli, printed, killAll } = cliRunner({ startMs: 60_000 });
const databases: ScratchDatabase[] = [];
afterEach(killAll);
afterAll(() => {
  for (const database of databases) database.drop();
});

/** Forwards to `target` until silenced; silenced, it accepts connections and holds what they send, answering nothing. */
async function switchableProxy(target: URL) {
  let silent = false;
  const held = new Set<Socket>();
  const server: Server = createServer((client) => {
    client.on('error', () => undefined);
    held.add(client);
    client.once('close', () => held.delete(client));
    if (silent) return void client.resume();
    const upstream = connect(Number(target.port || 5432), target.hostname);
    upstream.on('error', () => client.destroy());
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
    // Silenced, an open connection's bytes go nowhere either way.
    client.once('silence', () => {
      client.unpipe(upstream);
      upstream.unpipe(client);
      upstream.pause();
      client.resume();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const url = new URL(target);
  url.host = `127.0.0.1:${port}`;
  return {
    url: url.toString(),
    port,
    silence() {
      silent = true;
      for (const socket of held) socket.emit('silence');
    },
    /** Answers again: connections held while silent are dropped, as a restarted server's would be. */
    answer() {
      silent = false;
      for (const socket of held) socket.destroy();
    },
    /** Gone: open connections dropped, new ones refused. */
    close: () => {
      for (const socket of held) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const graphql = async (url: string, query: string) => {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  return { status: response.status, body: (await response.json()) as { data?: any; errors?: Array<{ message: string; extensions: { code: string } }> } };
};

describe('a PostgreSQL server that stops answering', () => {
  it('fails calls fast with STORAGE_UNAVAILABLE (no address), keeps /health answering, /ready 503, and recovers', async () => {
    const database = createScratchDatabase();
    databases.push(database);
    const proxy = await switchableProxy(new URL(database.url));
    try {
      // The call timeout alone would hold the process a minute per call.
      const server = cli(['serve', '--port', '0', '--db', proxy.url, '--db-timeout', '60000', '--db-connect-timeout', '300']);
      const [, url] = await printed(server, /Souls API on (http:\S+\/graphql)/);
      const base = url.replace(/\/graphql$/, '');
      expect((await graphql(url, 'mutation { createSoul(input: { name: "Vigil", essence: "Waits." }) { __typename } }')).status).toBe(200);

      proxy.silence();
      for (let call = 1; call <= 3; call++) {
        const { body } = await graphql(url, '{ souls { name } }');
        expect(body.errors?.[0].extensions.code, JSON.stringify(body)).toBe('STORAGE_UNAVAILABLE');
        const text = JSON.stringify(body);
        expect(text).not.toContain('127.0.0.1');
        expect(text).not.toContain(String(proxy.port));
      }
      expect((await fetch(`${base}/health`)).status).toBe(200);
      const ready = await fetch(`${base}/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ status: 'unavailable', reason: 'the database does not answer a query' });
      expect(server.output().stderr).toContain('the database does not answer');

      proxy.answer();
      while ((await fetch(`${base}/ready`)).status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      const after = await graphql(url, '{ souls { name } }');
      expect(after.body).toEqual({ data: { souls: [{ name: 'Vigil' }] } });
    } finally {
      killAll();
      await proxy.close();
    }
  });

  it('tells clients a refused connection as STORAGE_UNAVAILABLE without the address the driver names', async () => {
    const database = createScratchDatabase();
    databases.push(database);
    const proxy = await switchableProxy(new URL(database.url));
    const server = cli(['serve', '--port', '0', '--db', proxy.url]);
    const [, url] = await printed(server, /Souls API on (http:\S+\/graphql)/);
    expect((await graphql(url, '{ souls { name } }')).body).toEqual({ data: { souls: [] } });
    await proxy.close();
    // The first call may meet the dropped connection, the second a refused one.
    for (let call = 1; call <= 2; call++) {
      const { body } = await graphql(url, '{ souls { name } }');
      expect(body).toMatchObject({ errors: [{ message: 'the database is unavailable: retry later', extensions: { code: 'STORAGE_UNAVAILABLE' } }] });
    }
    // The operator's log has what the driver said.
    expect(server.output().stderr).toContain(`ECONNREFUSED 127.0.0.1:${proxy.port}`);
  });
});
