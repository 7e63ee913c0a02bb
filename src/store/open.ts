import { openPostgresStore, isPostgresUrl } from './postgres-bridge.ts';
import { migrations } from './schema.ts';
import { openSqliteStore, sqliteSchemaVersion } from './sqlite.ts';
import type { OpenMode } from './sqlite-file.ts';
import type { SoulsStore } from './store.ts';

/**
 * A postgres:// URL opens PostgreSQL (its driver loads in the bridge's worker thread only);
 * anything else is a SQLite file path, or ':memory:'.
 */
export function openStore(options: { path?: string; mode?: OpenMode; timeoutMs?: number }): SoulsStore {
  const path = options.path ?? ':memory:';
  if (isPostgresUrl(path)) return openPostgresStore({ url: path, mode: options.mode, timeoutMs: options.timeoutMs });
  return openSqliteStore({ path, mode: options.mode });
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
