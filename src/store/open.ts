import { isPostgresUrl, openPostgresStore } from './postgres-pool.ts';
import { migrations } from './schema.ts';
import { openSqliteStore, sqliteSchemaVersion, type StoreObserver } from './sqlite.ts';
import type { OpenMode } from './sqlite-file.ts';
import type { SoulsStore } from './store.ts';

export type StoreOptions = { path?: string; mode?: OpenMode; timeoutMs?: number; connectTimeoutMs?: number; poolSize?: number; observer?: StoreObserver };

/** A SQLite file path, or ':memory:', opened at once; a PostgreSQL URL needs openStoreAsync. The observer's hooks are SQLite's write-lock waits. */
export function openStore(options: StoreOptions): SoulsStore {
  const path = options.path ?? ':memory:';
  if (isPostgresUrl(path)) throw new TypeError('a PostgreSQL database opens asynchronously: use openSoulsDbAsync (or openStoreAsync)');
  return openSqliteStore({ path, mode: options.mode, observer: options.observer });
}

/** Any database: a postgres:// URL opens a connection pool to PostgreSQL (and applies pending migrations unless read-only). */
export async function openStoreAsync(options: StoreOptions): Promise<SoulsStore> {
  const path = options.path ?? ':memory:';
  if (!isPostgresUrl(path)) return openStore(options);
  return openPostgresStore({ url: path, mode: options.mode, timeoutMs: options.timeoutMs, connectTimeoutMs: options.connectTimeoutMs, poolSize: options.poolSize });
}

/** Applies the migrations a database (file or URL) lacks; answers its schema version before and after. */
export async function migrateStore(path: string): Promise<{ from: number; to: number }> {
  if (isPostgresUrl(path)) {
    const store = await openPostgresStore({ url: path, mode: 'migrate' });
    await store.close();
    return store.migration!;
  }
  const from = sqliteSchemaVersion(path);
  openSqliteStore({ path }).close();
  return { from, to: migrations.length };
}
