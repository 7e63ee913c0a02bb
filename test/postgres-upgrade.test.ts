// Upgrading a PostgreSQL database (PGlite in a folder, in this thread) to version 5: every shard gets the time it was
// recorded (SPEC §13, recency counts arrival), its updated_at; so a soul a backdated import left waiting is ready.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closeSoulsDb, createSoul, DAY_MS, dropShard, getCrystallization, manualClock, openSoulsDbAsync, stampAttuned } from '../src/engine/index.ts';
import { pgMigrations } from '../src/store/postgres-schema.ts';
import { openPostgresStore } from '../src/store/postgres-pool.ts';

const folder = mkdtempSync(join(tmpdir(), 'souls-pg-upgrade-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const T0 = Date.UTC(2026, 4, 1);
const open = async (clock: ReturnType<typeof manualClock>) =>
  openSoulsDbAsync({ store: await openPostgresStore({ url: `pglite:${folder}`, openTimeoutMs: 120_000 }), clock, calibratedThreshold: null });

describe('PostgreSQL version 5', () => {
  it('gives every shard its recorded time (its updated_at), so recency counts the arrival of what was imported after an attunement', { timeout: 240_000 }, async () => {
    const clock = manualClock(T0);
    const db = await open(clock);
    const soul = (await createSoul(db, { name: 'Waiting', essence: 'e' })).id;
    const texts = ['Counted the ledger twice', 'Cooked a spicy curry for the team', 'Jogged along the river at dawn', 'Sketched a floor plan for the library'];
    for (let i = 0; i < 3; i++) await dropShard(db, texts[i], `source-${i % 2}`, [soul], { createdAt: clock.now() - (i + 1) * DAY_MS });
    await stampAttuned(db, soul);
    clock.advance(DAY_MS);
    // Recorded a day after the attunement, observed a week before it.
    const imported = (await dropShard(db, texts[3], 'import', [soul], { createdAt: clock.now() - 7 * DAY_MS })).shardId;
    await closeSoulsDb(db);

    // Back to the version before recorded_at (and so every later one runs again).
    const version = pgMigrations.findIndex((sql) => sql.includes('ADD COLUMN IF NOT EXISTS recorded_at')) + 1;
    const { PGlite } = await import('@electric-sql/pglite');
    const pg = new PGlite(folder);
    await pg.exec(`ALTER TABLE soul_shards DROP COLUMN recorded_at; DELETE FROM souls_schema_migrations WHERE version >= ${version}`);
    const updatedAt = Number((await pg.query<{ updated_at: string }>('SELECT updated_at FROM soul_shards WHERE id = $1', [imported])).rows[0].updated_at);
    await pg.close();

    const upgraded = await open(clock);
    try {
      expect((await upgraded.store.getShards([imported])).get(imported)!.recordedAt).toBe(updatedAt);
      expect((await getCrystallization(upgraded, [soul])).get(soul)).toMatchObject({ ready: true, newSinceAttuned: true, unmet: [] });
    } finally {
      await closeSoulsDb(upgraded);
    }
  });
});
