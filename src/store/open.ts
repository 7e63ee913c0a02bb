import { openPostgresStore, isPostgresUrl } from './postgres-bridge.ts';
import { openSqliteStore } from './sqlite.ts';
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
