// souls migrate and souls copy against a real PostgreSQL server (npm run test:pg).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres-pool.ts';
import { openSqliteStore } from '../../src/store/sqlite.ts';
import { cliRunner } from '../support/cli.ts';
import { createScratchDatabase, type ScratchDatabase } from '../support/pg-database.ts';
import { pgMigrations } from '../../src/store/postgres-schema.ts';

const { cli, exited, killAll } = cliRunner({ exitMs: 120_000 });
const folder = mkdtempSync(join(tmpdir(), 'souls-cli-pgserver-'));
const databases: ScratchDatabase[] = [];
let migrated: ScratchDatabase;
let copied: ScratchDatabase;

beforeAll(() => {
  migrated = createScratchDatabase();
  copied = createScratchDatabase();
  databases.push(migrated, copied);
});
afterEach(killAll);
afterAll(() => {
  for (const database of databases) database.drop();
  rmSync(folder, { recursive: true, force: true });
});

describe('souls migrate and souls copy on a PostgreSQL server', () => {
  it('lets two migrations started at once take turns under the advisory lock', async () => {
    const results = await Promise.all([1, 2, 3].map(() => exited(cli(['migrate', '--db', migrated.url]))));
    expect(results.map((r) => [r.code, r.stderr])).toEqual([[0, ''], [0, ''], [0, '']]);
    const said = results.map((r) => r.stdout.replace(migrated.url, 'URL')).sort();
    const to = pgMigrations.length;
    expect(said).toEqual([`Migrated URL from schema version 0 to ${to}\n`, `URL is at schema version ${to}: nothing to do\n`, `URL is at schema version ${to}: nothing to do\n`]);
  });

  it('copies a SQLite database in, verified soul by soul, and serves it', async () => {
    const file = join(folder, 'souls.db');
    expect((await exited(cli(['seed-demo', '--db', file]))).code).toBe(0);
    const copy = await exited(cli(['copy', '--from', file, '--to', copied.url]));
    expect(copy).toMatchObject({ code: 0, stderr: '' });
    expect(copy.stdout).toContain('Verified: all 5 souls render byte-identical on both sides');
    const [left, right] = [await exited(cli(['render', 'Mira', '--db', file])), await exited(cli(['render', 'Mira', '--db', copied.url]))];
    expect(right.code).toBe(0);
    expect(right.stdout).toBe(left.stdout);
    // New rows take ids past the copied ones (for traits, past every id SQLite ever handed out).
    const source = openSqliteStore({ path: file, mode: 'read-only' });
    const { idFloors, tables } = source.exportTables(['souls', 'soul_traits']);
    source.close();
    expect(idFloors.soul_traits).toBeGreaterThanOrEqual(Math.max(...tables.soul_traits.map((t) => Number(t.id))));
    const store = await openPostgresStore({ url: copied.url });
    try {
      const soul = await store.insertSoul({ name: 'Newcomer', slug: null, essence: 'e', description: '' }, Date.now());
      expect(soul.id).toBe(tables.souls.length + 1);
      const trait = await store.insertTrait(soul.id, { principle: 'p', provenance: 'v', citeShardIds: [] }, Date.now(), 10);
      expect(trait.id).toBe(idFloors.soul_traits + 1);
    } finally {
      await store.close();
    }
  });
});
