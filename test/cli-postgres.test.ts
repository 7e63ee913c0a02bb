// souls migrate and souls copy through the command line, on PGlite (PostgreSQL in WebAssembly) kept in a folder.
// One real child migrates (the process and what it leaves on disk); the rest run in this process (runInProcess, the
// dispatcher the program runs), which compiles PGlite's WebAssembly once instead of once a child (seconds of CPU each).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { cliRunner, runInProcess } from './support/cli.ts';
import { pgMigrations } from '../src/store/postgres-schema.ts';

// PGlite starts in the child process: seconds on a loaded machine.
const { cli, exited, killAll } = cliRunner({ exitMs: 180_000 });
const folder = mkdtempSync(join(tmpdir(), 'souls-cli-pg-'));
afterEach(killAll);
afterAll(() => rmSync(folder, { recursive: true, force: true }));


describe('souls migrate and souls copy', () => {
  it('migrates once, copies a SQLite database into PostgreSQL verified soul by soul, and refuses a second copy', async () => {
    const file = join(folder, 'souls.db');
    const target = `pglite:${join(folder, 'pg')}`;
    expect((await runInProcess(['seed-demo', '--db', file])).code).toBe(0);

    const first = await exited(cli(['migrate', '--db', target]));
    expect(first).toMatchObject({ code: 0, stderr: '', stdout: `Migrated ${target} from schema version 0 to ${pgMigrations.length}\n` });
    expect((await runInProcess(['migrate', '--db', target])).stdout).toBe(`${target} is at schema version ${pgMigrations.length}: nothing to do\n`);

    const copy = await runInProcess(['copy', '--from', file, '--to', target]);
    expect(copy.stderr).toBe('');
    expect(copy.code).toBe(0);
    expect(copy.stdout).toMatch(/: 5 souls, \d+ soul_traits, 2 soul_levels, \d+ soul_shards/);
    expect(copy.stdout).toContain('Verified: all 5 souls render byte-identical on both sides');
    // Analyzed: the planner knows the copied rows (a table never analyzed counts -1 tuples).
    const { PGlite } = await import('@electric-sql/pglite');
    const pg = new PGlite(join(folder, 'pg'));
    const { rows } = await pg.query<{ reltuples: number }>("SELECT reltuples FROM pg_class WHERE relname = 'soul_shards'");
    await pg.close();
    expect(rows[0].reltuples).toBeGreaterThan(0);

    // Read back through the command line on each side: the same bytes.
    for (const soul of ['Brannoc', 'Wenna']) {
      const [left, right] = [await runInProcess(['render', soul, '--db', file]), await runInProcess(['render', soul, '--db', target])];
      expect(right.code).toBe(0);
      expect(right.stdout).toBe(left.stdout);
    }
    const [historyLeft, historyRight] = [await runInProcess(['history', 'Brannoc', '--json', '--db', file]), await runInProcess(['history', 'Brannoc', '--json', '--db', target])];
    expect(historyRight.stdout).toBe(historyLeft.stdout);

    const again = await runInProcess(['copy', '--from', file, '--to', target]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/the target database is not empty \(souls, .*\): copy into a new, empty database/);
  }, 600_000);

  it('names what is wrong with the arguments', async () => {
    const missing = await runInProcess(['copy', '--from', join(folder, 'none.db'), '--to', 'pglite:memory']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--from must be an existing SQLite file');
    const notUrl = await runInProcess(['copy', '--from', join(folder, 'souls.db'), '--to', join(folder, 'other.db')]);
    expect(notUrl.code).toBe(2);
    expect(notUrl.stderr).toContain('--to must be a postgres:// URL');
    const memory = await runInProcess(['migrate', '--db', ':memory:']);
    expect(memory.code).toBe(1);
    expect(memory.stderr).toContain('an in-memory database (:memory:) is created on every start');
  });
});
