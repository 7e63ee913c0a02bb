import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { closeSoulsDb, createSoul, dropShard, getSoul, initSoulsTables, listShards, manualClock, openSoulsDb, searchShards } from '../src/engine/index.ts';
import { migrations } from '../src/store/schema.ts';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'souls-storage-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const pragma = (db: DatabaseSync, name: string) => Object.values(db.prepare(`PRAGMA ${name}`).get() as object)[0];

describe('the SQLite file', () => {
  it('is created with WAL, synchronous NORMAL, foreign keys and the latest schema version, and keeps data across reopening', async () => {
    const path = join(tempDir(), 'souls.db');
    const clock = manualClock(Date.UTC(2026, 0, 1));
    const db = openSoulsDb({ path, clock });
    const soul = await createSoul(db, { name: 'Ada', essence: 'Reads first.' });
    await dropShard(db, 'Read the whole log before answering.', 'review', [soul.id]);
    const raw = (db.store as unknown as { db: DatabaseSync }).db;
    expect(pragma(raw, 'journal_mode')).toBe('wal');
    expect(pragma(raw, 'synchronous')).toBe(1); // NORMAL
    expect(pragma(raw, 'foreign_keys')).toBe(1);
    expect(pragma(raw, 'user_version')).toBe(migrations.length);
    closeSoulsDb(db);

    const again = openSoulsDb({ path, clock });
    expect(await getSoul(again, soul.id)).toEqual(soul);
    expect((await listShards(again)).totalCount).toBe(1);
    expect((await searchShards(again, 'log')).length).toBe(1);
    closeSoulsDb(again);
  });

  it('initSoulsTables is idempotent and refuses a file from a newer schema', () => {
    const path = join(tempDir(), 'souls.db');
    const raw = new DatabaseSync(path);
    initSoulsTables(raw);
    raw.prepare(`INSERT INTO souls (name, essence, created_at, updated_at) VALUES ('Ada', 'e', 0, 0)`).run();
    initSoulsTables(raw);
    expect(pragma(raw, 'user_version')).toBe(migrations.length);
    expect((raw.prepare('SELECT COUNT(*) AS n FROM souls').get() as { n: number }).n).toBe(1);
    raw.exec(`PRAGMA user_version = ${migrations.length + 1}`);
    expect(() => initSoulsTables(raw)).toThrow(/newer than this Souls/);
    raw.close();
  });

  it('backs up to a consistent copy with VACUUM INTO', async () => {
    const dir = tempDir();
    const db = openSoulsDb({ path: join(dir, 'souls.db'), clock: manualClock(0) });
    const soul = await createSoul(db, { name: 'Ada', essence: 'Reads first.' });
    db.store.backup(join(dir, 'copy.db'));
    closeSoulsDb(db);
    const copy = openSoulsDb({ path: join(dir, 'copy.db'), clock: manualClock(0) });
    expect(await getSoul(copy, soul.id)).toEqual(soul);
    closeSoulsDb(copy);
  });
});
