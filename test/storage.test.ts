import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConflictError,
  closeSoulsDb,
  createSoul,
  dropShard,
  getEmbeddingDimension,
  getShard,
  getShardEmbeddings,
  getSoul,
  getSoulByName,
  initSoulsTables,
  listShards,
  manualClock,
  openSoulsDb,
  renderSoul,
  revealShards,
  revertLevelUp,
  searchShards,
} from '../src/engine/index.ts';
import { rejection } from './support/engine.ts';
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

  it('migrates a version 1 file in place: folded name keys (look-alikes renamed, never lost), slugs, reference times', async () => {
    const path = join(tempDir(), 'v1.db');
    const T = Date.UTC(2025, 5, 1);
    const DAY = 86_400_000;
    const v1 = new DatabaseSync(path);
    v1.exec(migrations[0] as string);
    v1.exec('PRAGMA user_version = 1');
    const soul = v1.prepare(`INSERT INTO souls (id, name, slug, essence, created_at, updated_at, deleted_at, level) VALUES (?, ?, ?, 'e', ?, ?, ?, ?)`);
    soul.run(1, 'Mira', 'mira', T, T + 10 * DAY, null, 0);
    soul.run(2, 'mira', null, T, T, null, 0);
    soul.run(3, 'Mi\u200bra', null, T, T, null, 0);
    soul.run(4, 'MIRA', null, T, T, T + DAY, 0);
    soul.run(5, 'Bram', null, T, T + 2 * DAY, null, 1);
    soul.run(6, '\u200b', null, T, T, null, 0);
    const trait = v1.prepare(`INSERT INTO soul_traits (id, soul_id, principle, provenance, generation, status, created_at, updated_at) VALUES (?, ?, ?, 'p', ?, 'active', ?, ?)`);
    trait.run(1, 1, 'B', 0, T, T);
    trait.run(2, 1, 'A', 0, T + 10 * DAY, T + 10 * DAY);
    trait.run(3, 5, 'Carried', 1, T, T + 2 * DAY);
    v1.exec(`INSERT INTO soul_shards (id, content, source, sealed, created_at, updated_at) VALUES (1, 'one', 'chat', 0, ${T}, ${T}), (2, 'two', 'chat', 0, ${T}, ${T}), (3, 'three', 'mail', 1, ${T}, ${T})`);
    v1.exec(`INSERT INTO shard_souls (shard_id, soul_id) VALUES (1, 1), (2, 1), (3, 1)`);
    v1.exec(`INSERT INTO shard_citations (shard_id, trait_id, created_at) VALUES (1, 1, ${T}), (2, 1, ${T}), (3, 2, ${T + 10 * DAY})`);
    v1.exec(`INSERT INTO soul_levels (soul_id, level, essence_before, essence_after, traits_consolidated, traits_promoted, traits_carried, traits_merged, created_at)
      VALUES (5, 1, 'before', 'e', '[]', '[]', '[{"id":3,"generation":0}]', '[]', ${T + 2 * DAY})`);
    v1.close();

    const clock = manualClock(T + 30 * DAY);
    const db = openSoulsDb({ path, clock });
    const raw = (db.store as unknown as { db: DatabaseSync }).db;
    expect(pragma(raw, 'user_version')).toBe(migrations.length);
    const souls = await Promise.all([1, 2, 3, 4, 5, 6].map(async (id) => (await getSoul(db, id))!));
    expect(souls.map((s) => [s.name, s.slug, s.deletedAt === null])).toEqual([
      ['Mira', 'mira', true],
      ['mira (2)', 'mira-2', true],
      ['Mira (3)', 'mira-3', true],
      ['MIRA', 'mira-4', false],
      ['Bram', 'bram', true],
      ['Soul 6', 'soul-6', true],
    ]);
    // The reference time starts as the last write, so every block renders as before the upgrade (A 1/1, B 2/10).
    expect(souls.map((s) => s.orderedAt)).toEqual(souls.map((s) => s.updatedAt));
    expect(await renderSoul(db, 1)).toBe('# Mira\n\ne\n\n## Traits\n- A\n- B\n');
    expect((await getSoulByName(db, 'mi\u200bRA'))!.id).toBe(1);
    expect((await rejection(createSoul(db, { name: 'ＭＩＲＡ', essence: 'e' }), ConflictError)).message).toBe('an awake soul is already named "Mira"');
    // A level-up recorded before the upgrade still reverts; with no saved reference time it takes the revert's.
    const reverted = await revertLevelUp(db, 5);
    expect([reverted.soul.level, reverted.soul.essence, reverted.soul.orderedAt]).toEqual([0, 'before', clock.now()]);
    // The sealed shard gets its reveal time.
    await revealShards(db, [3]);
    expect((await getShard(db, 3))!.revealedAt).toBe(clock.now());
    closeSoulsDb(db);

    const again = openSoulsDb({ path, clock });
    expect((await getSoul(again, 2))!.name).toBe('mira (2)');
    closeSoulsDb(again);
  });

  it('migrates a version 2 file in place: shards gain an empty embedding column, the dimension is unset until a vector is stored', async () => {
    const path = join(tempDir(), 'v2.db');
    const T = Date.UTC(2026, 0, 1);
    const v2 = new DatabaseSync(path);
    v2.exec(migrations[0] as string);
    (migrations[1] as (db: DatabaseSync) => void)(v2);
    v2.exec('PRAGMA user_version = 2');
    v2.exec(`INSERT INTO souls (id, name, name_key, slug, essence, created_at, updated_at, ordered_at) VALUES (1, 'Ada', 'ada', 'ada', 'e', ${T}, ${T}, ${T})`);
    v2.exec(`INSERT INTO soul_shards (id, content, source, sealed, created_at, updated_at) VALUES (1, 'old words', 'chat', 0, ${T}, ${T})`);
    v2.exec(`INSERT INTO shard_souls (shard_id, soul_id) VALUES (1, 1)`);
    v2.close();

    const db = openSoulsDb({ path, clock: manualClock(T + 1000), settings: { similarity: 'provided' } });
    const raw = (db.store as unknown as { db: DatabaseSync }).db;
    expect(pragma(raw, 'user_version')).toBe(migrations.length);
    expect(await getEmbeddingDimension(db)).toBeNull();
    expect(await getShardEmbeddings(db, [1])).toEqual(new Map());
    const { shardId } = await dropShard(db, 'new words', 'mail', [1], { embedding: [0, 2] });
    expect([...(await getShardEmbeddings(db, [1, shardId])).entries()]).toEqual([[shardId, Float32Array.of(0, 1)]]);
    expect(await getEmbeddingDimension(db)).toBe(2);
    expect((await getShard(db, 1))!.content).toBe('old words');
    closeSoulsDb(db);
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
