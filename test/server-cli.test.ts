// `souls serve`, render, backup and the flags. What a command prints and returns is checked in this process
// (runInProcess, the dispatcher the program runs); serving, signals and what a command leaves on disk through real children.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addTrait, closeSoulsDb, createSoul, listSouls, openSoulsDb, renderSoul } from '../src/engine/index.ts';
import { cliRunner, expectNoStack, runInProcess, type Child } from './support/cli.ts';

/** Bounds for waiting on a child: generous, since they only fail the test when something hangs. */


let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'souls-cli-'));
});

const { cli, exited, printed, killAll } = cliRunner();

afterEach(() => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});

/** Waits for the "Souls API on http://…" and "Database: …" lines; resolves with the API's URL. */
async function listening(child: Child): Promise<string> {
  return (await printed(child, /Souls API on (http:\/\/\S+).*\nDatabase: .*\n/s))[1];
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

async function graphql(url: string, query: string): Promise<any> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' }, body: JSON.stringify({ query }) });
  expect(response.status).toBe(200);
  return response.json();
}

const walOf = (db: string) => `${db}-wal`;

async function soulNamesIn(path: string): Promise<string[]> {
  const db = openSoulsDb({ path });
  try {
    return (await listSouls(db)).map((s) => s.name);
  } finally {
    closeSoulsDb(db);
  }
}

describe('souls serve', { timeout: 30_000 }, () => {
  it('serves GraphQL on the address it prints, over the database it names', async () => {
    const db = join(dir, 'serve.db');
    const child = cli(['serve', '--port', '0', '--host', '127.0.0.1', '--db', db]);
    const url = await listening(child);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
    expect(child.output().stdout).toContain(`Database: ${db}`);
    const webApp = url.replace(/graphql$/, '');
    expect(child.output().stdout).toContain(`Character sheet on ${webApp} (the web app)\n`);
    expect(child.output().stdout).toContain(`MCP for agents on ${webApp}mcp (Streamable HTTP; \`souls mcp\` serves stdio)\n`);
    const page = await fetch(webApp);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);

    const created = await graphql(url, 'mutation { createSoul(input: { name: "Ada", essence: "Calm." }) { __typename ... on SoulPayload { soul { id } } } }');
    expect(created).toEqual({ data: { createSoul: { __typename: 'SoulPayload', soul: { id: '1' } } } });
    expect(await graphql(url, '{ souls { name } settings { traitLimit } }')).toEqual({ data: { souls: [{ name: 'Ada' }], settings: { traitLimit: 10 } } });
    child.process.kill('SIGTERM');
    expect((await exited(child)).code).toBe(0);
  });

  it('takes the port and database from SOULS_PORT and SOULS_DB, and flags win over them', async () => {
    const [envPort, flagPort] = [await freePort(), await freePort()];
    const envDb = join(dir, 'env.db');
    const flagDb = join(dir, 'flag.db');

    const fromEnv = cli(['serve', '--host', '127.0.0.1'], { SOULS_PORT: String(envPort), SOULS_DB: envDb, SOULS_TRAIT_LIMIT: '7' });
    expect(await listening(fromEnv)).toBe(`http://127.0.0.1:${envPort}/graphql`);
    expect(fromEnv.output().stdout).toContain(`Database: ${envDb}`);
    expect(await graphql(`http://127.0.0.1:${envPort}/graphql`, '{ settings { traitLimit } }')).toEqual({ data: { settings: { traitLimit: 7 } } });
    fromEnv.process.kill('SIGTERM');
    expect((await exited(fromEnv)).code).toBe(0);
    expect(existsSync(envDb)).toBe(true);

    const flagsWin = cli(['serve', '--host', '127.0.0.1', '--port', String(flagPort), '--db', flagDb, '--trait-limit', '12'], {
      SOULS_PORT: String(envPort),
      SOULS_DB: envDb,
      SOULS_TRAIT_LIMIT: '7',
    });
    const url = await listening(flagsWin);
    expect(url).toBe(`http://127.0.0.1:${flagPort}/graphql`);
    expect(flagsWin.output().stdout).toContain(`Database: ${flagDb}`);
    expect(await graphql(url, '{ settings { traitLimit } }')).toEqual({ data: { settings: { traitLimit: 12 } } });
    flagsWin.process.kill('SIGTERM');
    expect((await exited(flagsWin)).code).toBe(0);
    expect(existsSync(flagDb)).toBe(true);
  });

  it('exposes a knob set by flag through settings', async () => {
    const child = cli(['serve', '--port', '0', '--host', '127.0.0.1', '--db', join(dir, 'knob.db'), '--trait-limit', '12', '--stale-days', '30']);
    const url = await listening(child);
    expect(await graphql(url, '{ settings { traitLimit staleDays crystallizationThreshold } }')).toEqual({
      data: { settings: { traitLimit: 12, staleDays: 30, crystallizationThreshold: 3 } },
    });
  });

  it('refuses a bad knob: exits non-zero naming the flag or variable, without a stack trace, before listening', async () => {
    const cases: Array<{ args: string[]; env?: Record<string, string>; names: string }> = [
      { args: ['--trait-limit', '0'], names: '--trait-limit' },
      { args: ['--clustering-threshold', '2'], names: '--clustering-threshold' },
      { args: ['--staleDays', '3'], names: 'staleDays' },
      { args: [], env: { SOULS_TRAIT_LIMIT: 'many' }, names: 'SOULS_TRAIT_LIMIT' },
      { args: [], env: { SOULS_PORT: '70000' }, names: 'SOULS_PORT' },
    ];
    const runs = cases.map(({ args, env }) => {
      const port = env?.SOULS_PORT === undefined ? ['--port', '0'] : [];
      return exited(cli(['serve', '--host', '127.0.0.1', ...port, '--db', join(dir, 'bad.db'), ...args], env));
    });
    const results = await Promise.all(runs);
    results.forEach((result, i) => {
      const { names } = cases[i];
      expect(result.code, names).not.toBe(0);
      expect(result.code, names).not.toBeNull();
      expect(result.stderr, names).toContain(names);
      expect(result.stderr, names).toMatch(/^souls: /);
      expectNoStack(result.stderr);
      expect(result.stdout, names).not.toContain('Souls API on');
    });
    expect(results[0].stderr).toBe('souls: --trait-limit: must be >= 1 and <= 1000, got 0\n');
    expect(results[1].stderr).toBe('souls: --clustering-threshold: must be > 0 and <= 1, got 2\n');
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`exits 0 on ${signal}, checkpointing the WAL, with the data intact`, async () => {
      const db = join(dir, `${signal}.db`);
      const child = cli(['serve', '--port', '0', '--host', '127.0.0.1', '--db', db]);
      const url = await listening(child);
      for (const name of ['Ada', 'Bram', 'Cyra']) {
        const { data } = await graphql(url, `mutation { createSoul(input: { name: "${name}", essence: "Steady." }) { __typename } }`);
        expect(data.createSoul.__typename).toBe('SoulPayload');
      }
      // The writes sit in the WAL while the server runs: the shutdown has something to checkpoint.
      expect(statSync(walOf(db)).size).toBeGreaterThan(0);

      child.process.kill(signal);
      const result = await exited(child);
      expect(result.code, result.stderr).toBe(0);
      expect(result.signal).toBeNull();
      expect(result.stdout).toContain(`${signal}: closing connections and checkpointing the database`);
      expect(!existsSync(walOf(db)) || statSync(walOf(db)).size === 0).toBe(true);
      expect(await soulNamesIn(db)).toEqual(['Ada', 'Bram', 'Cyra']);
    });
  }
});

describe('the demo while the server runs', { timeout: 30_000 }, () => {
  it('seed-demo fills the database a running server uses, which answers with the demo souls at once', async () => {
    const db = join(dir, 'live.db');
    const server = cli(['serve', '--port', '0', '--host', '127.0.0.1', '--db', db]);
    const url = await listening(server);
    expect(await graphql(url, '{ souls { name } }')).toEqual({ data: { souls: [] } });
    const demo = await exited(cli(['seed-demo', '--db', db]));
    expect(demo.code, demo.stderr).toBe(0);
    const { data } = await graphql(url, '{ souls(orderBy: NAME) { name } crystallizationReadiness { soul { name } } }');
    expect(data.souls.map((s: { name: string }) => s.name)).toEqual(['Brannoc', 'Mira', 'Relay', 'Sela']);
    expect(data.crystallizationReadiness.length).toBeGreaterThan(0);
    server.process.kill('SIGTERM');
    expect((await exited(server)).code).toBe(0);
  });
});

describe('souls render and backup', { timeout: 30_000 }, () => {
  async function seed(path: string): Promise<void> {
    const db = openSoulsDb({ path });
    try {
      const ada = await createSoul(db, { name: 'Ada', essence: 'Calm under pressure.', description: 'Careful engineer' });
      await addTrait(db, ada.id, { principle: 'Runs the tests before pushing', provenance: 'Seen in three reviews' });
      await createSoul(db, { name: 'Bram', essence: 'Curious.' });
    } finally {
      closeSoulsDb(db);
    }
  }

  it('render prints the rendered block of a soul by name or id, with provenance on --full', async () => {
    const db = join(dir, 'render.db');
    await seed(db);
    const lean = await runInProcess(['render', 'Ada', '--db', db]);
    expect(lean.code, lean.stderr).toBe(0);
    expect(lean.stdout).toBe('# Ada\n\n*Careful engineer*\n\nCalm under pressure.\n\n## Traits\n- Runs the tests before pushing\n');

    const full = await runInProcess(['render', '1', '--full', '--db', db]);
    expect(full.code, full.stderr).toBe(0);
    expect(full.stdout).toBe('# Ada\n\n*Careful engineer*\n\nCalm under pressure.\n\n## Traits\n- **Runs the tests before pushing** — Seen in three reviews\n');

    const check = openSoulsDb({ path: db });
    try {
      expect(lean.stdout).toBe(await renderSoul(check, 1));
    } finally {
      closeSoulsDb(check);
    }

    // Names are looked up by their folded key: any case, width or invisible character finds the one soul.
    const folded = await runInProcess(['render', 'ＡＤＡ\u200b', '--db', db]);
    expect(folded.code, folded.stderr).toBe(0);
    expect(folded.stdout).toBe(lean.stdout);

    const missing = await runInProcess(['render', 'Nobody', '--db', db]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('souls: no soul Nobody\n');
  });

  it('backup writes a copy that opens with the same souls', async () => {
    const db = join(dir, 'source.db');
    const copy = join(dir, 'copy.db');
    await seed(db);
    const result = await runInProcess(['backup', copy, '--db', db]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`Backed up ${db} to ${copy}`);
    expect(existsSync(copy)).toBe(true);
    expect(await soulNamesIn(copy)).toEqual(['Ada', 'Bram']);
    expect(await soulNamesIn(copy)).toEqual(await soulNamesIn(db));

    const again = await runInProcess(['backup', copy, '--db', db]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`souls: backup target ${copy} already exists: choose a new file\n`);
    expect(await soulNamesIn(copy)).toEqual(['Ada', 'Bram']);
  });
});

describe('read-only commands, negative numbers and --version', { timeout: 30_000 }, () => {
  /** Every file and folder under the test's directory, relative to it. */
  const entries = () => readdirSync(dir, { recursive: true }).map(String).sort();

  it('render and backup never create a database: a missing one is a clear error and nothing appears', async () => {
    for (const args of [
      ['render', 'Mira', '--db', 'missing/dir/x.db'],
      ['render', 'Mira', '--db', 'x.db'],
      ['backup', 'copy.db', '--db', 'missing/dir/x.db'],
    ]) {
      const result = await exited(cli(args.map((a) => (a.endsWith('.db') ? join(dir, a) : a))));
      expect(result.code, args.join(' ')).toBe(1);
      const db = join(dir, args.at(-1)!);
      expect(result.stderr).toBe(`souls: no database at ${db} (--db): ${args[0]} only reads an existing one; \`souls serve\` or \`souls seed-demo\` creates it\n`);
      expect(entries(), args.join(' ')).toEqual([]);
    }
    const fromEnv = await exited(cli(['render', 'Mira'], { SOULS_DB: join(dir, 'env.db') }));
    expect(fromEnv.stderr).toBe(`souls: no database at ${join(dir, 'env.db')} (SOULS_DB): render only reads an existing one; \`souls serve\` or \`souls seed-demo\` creates it\n`);
    expect(entries()).toEqual([]);
  });

  it('render leaves no new file beside an existing database', async () => {
    const db = join(dir, 'kept.db');
    const seeded = openSoulsDb({ path: db });
    await createSoul(seeded, { name: 'Ada', essence: 'Calm.' });
    closeSoulsDb(seeded);
    const before = entries();
    const result = await exited(cli(['render', 'Ada', '--db', db]));
    expect(result.code, result.stderr).toBe(0);
    expect(entries()).toEqual(before);
  });

  it('backup refuses a target in a folder that does not exist, creating nothing', async () => {
    const db = join(dir, 'source.db');
    closeSoulsDb(openSoulsDb({ path: db }));
    const before = entries();
    const target = join(dir, 'nowhere', 'copy.db');
    const result = await exited(cli(['backup', target, '--db', db]));
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`souls: backup target folder ${join(dir, 'nowhere')} does not exist: create it first\n`);
    expect(entries()).toEqual(before);
  });

  it('a negative number for a flag gets the domain error naming the flag, not the parser’s "ambiguous"', async () => {
    const db = join(dir, 'neg.db');
    closeSoulsDb(openSoulsDb({ path: db }));
    const results = await Promise.all([
      exited(cli(['render', 'Ada', '--db', db, '--trait-limit', '-1'])),
      exited(cli(['serve', '--host', '127.0.0.1', '--db', db, '--port', '-5'])),
      exited(cli(['serve', '--host', '127.0.0.1', '--port', '0', '--db', db, '--max-depth', '-2'])),
      exited(cli(['serve', '--host', '127.0.0.1', '--port', '0', '--db', db, '--clustering-threshold', '-.5'])),
    ]);
    expect(results.map((r) => r.stderr)).toEqual([
      'souls: --trait-limit: must be >= 1 and <= 1000, got -1\n',
      'souls: --port: must be a port number from 0 to 65535, got "-5"\n',
      'souls: --max-depth: must be a whole number of at least 1, got "-2"\n',
      'souls: --clustering-threshold: must be > 0 and <= 1, got -0.5\n',
    ]);
    for (const result of results) expect(result.code).toBe(1);
  });

  it('a flag with no value is still refused, naming the flag, as a usage error (exit 2)', async () => {
    const result = await exited(cli(['render', 'Ada', '--db']));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^souls: .*--db/);
    expect(entries()).toEqual([]);
  });

  it('--version and -v print the version and exit 0', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v', 'version']) {
      const result = await runInProcess([flag]);
      expect(result, flag).toMatchObject({ code: 0, stderr: '', stdout: `souls ${version}\n` });
    }
    expect((await runInProcess(['help'])).stdout).toContain('souls --version');
  });
});
