// souls mcp and souls refiner through child processes: their messages, exit codes, and what they leave on disk.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { closeSoulsDb, listTraits, openSoulsDb } from '../src/engine/index.ts';
import { cliRunner } from './support/cli.ts';

const { cli, exited, killAll } = cliRunner();
const dir = mkdtempSync(join(tmpdir(), 'souls-cli-mcp-'));
afterEach(() => killAll());
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('souls refiner', { timeout: 30_000 }, () => {
  it('init creates the refiner once per name; status reads it', async () => {
    const db = join(dir, 'refiner.db');
    const first = await exited(cli(['refiner', 'init', '--db', db]));
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('Created the refiner Refiner (soul 1, slug refiner)');
    expect(first.stdout).toContain(`souls mcp --db ${db} --refiner`);
    const again = await exited(cli(['refiner', 'init', '--db', db]));
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('souls: this database already has the refiner "Refiner" (soul 1, slug refiner)');
    const named = await exited(cli(['refiner', 'init', '--name', 'Scout', '--db', db]));
    expect(named.stdout).toContain('Created the refiner Refiner Scout (soul 2, slug refiner-scout)');
    const status = await exited(cli(['refiner', 'status', '--db', db]));
    expect(status.stdout).toBe(
      'Refiner (soul 1, level 0): 0 outcome shards, 0 regret shards pending; not ready (needs 3 more shards (0 of the 3 needed); shards from 2 more sources (0 of the 2 needed); shards observed more than a day apart (one shard spans no time))\n',
    );
    const check = openSoulsDb({ path: db, mode: 'read-only' });
    expect(await listTraits(check, 1)).toHaveLength(5);
    closeSoulsDb(check);
  });

  it('status never creates a database, and names a missing refiner', async () => {
    const missing = join(dir, 'nothing-here.db');
    const status = await exited(cli(['refiner', 'status', '--db', missing]));
    expect(status.code).toBe(1);
    expect(status.stderr).toContain(`no database at ${missing}`);
    expect(existsSync(missing)).toBe(false);
    const empty = join(dir, 'empty.db');
    closeSoulsDb(openSoulsDb({ path: empty }));
    const none = await exited(cli(['refiner', 'status', '--db', empty, '--name', 'Ghost']));
    expect(none.stderr).toContain('no refiner named "Ghost"');
    const unknown = await exited(cli(['refiner', 'grow', '--db', empty]));
    expect(unknown.stderr).toContain('unknown refiner action "grow": use init or status');
  });
});

describe('souls mcp', { timeout: 30_000 }, () => {
  it('refuses an unknown scope and a refiner that does not exist, before serving', async () => {
    const db = join(dir, 'mcp.db');
    const scopes = await exited(cli(['mcp', '--db', db, '--scopes', 'read,write']));
    expect(scopes.code).toBe(2); // a usage error, as for any bad option
    expect(scopes.stderr).toContain('--scopes: unknown scope "write" (known: read, observe, refine, admin)');
    const action = await exited(cli(['refiner', 'rename', '--db', db]));
    expect(action.code).toBe(2);
    expect(action.stderr).toContain('unknown refiner action "rename": use init or status');
    const refiner = await exited(cli(['mcp', '--db', db, '--refiner', 'Scout']));
    expect(refiner.code).toBe(1);
    expect(refiner.stderr).toContain(`no refiner named "Scout" in ${db}: create it with \`souls refiner init --db ${db} --name Scout\``);
    expect(refiner.stdout).toBe('');
  });
});
