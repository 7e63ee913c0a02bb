import { openPostgresStore, isPostgresUrl } from './postgres-bridge.ts';
import { migrations } from './schema.ts';
import { openSqliteStore, sqliteSchemaVersion, type StoreObserver } from './sqlite.ts';
import type { OpenMode } from './sqlite-file.ts';
import type { SoulsStore } from './store.ts';

/**
 * A postgres:// URL opens PostgreSQL (its driver loads in the bridge's worker thread only);
 * anything else is a SQLite file path, or ':memory:'. The observer's hooks are SQLite's write-lock waits.
 */
export function openStore(options: { path?: string; mode?: OpenMode; timeoutMs?: number; connectTimeoutMs?: number; observer?: StoreObserver }): SoulsStore {
  const path = options.path ?? ':memory:';
  if (isPostgresUrl(path)) return openPostgresStore({ url: path, mode: options.mode, timeoutMs: options.timeoutMs, connectTimeoutMs: options.connectTimeoutMs });
  return openSqliteStore({ path, mode: options.mode, observer: options.observer });
}

/** Applies the migrations a database (file or URL) lacks; answers its schema version before and after. */
export function migrateStore(path: string): { from: number; to: number } {
  if (isPostgresUrl(path)) {
    const store = openPostgresStore({ url: path, mode: 'migrate' });
    store.close();
    return store.migration!;
  }
  const from = sqliteSchemaVersion(path);
  openSqliteStore({ path }).close();
  return { from, to: migrations.length };
}
