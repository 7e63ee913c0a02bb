// The store conformance suite against SQLite (a fresh in-memory database per test, a file for the concurrency test)
// and PostgreSQL on PGlite (one instance for the file, emptied between tests).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { openPostgresStore, type PostgresStore } from '../src/store/postgres-pool.ts';
import { openSqliteStore } from '../src/store/sqlite.ts';
import { storeView } from './support/shared-store.ts';
import { defineStoreConformance } from './support/store-conformance.ts';

const folder = mkdtempSync(join(tmpdir(), 'souls-conformance-'));
let pglite: PostgresStore | null = null;
afterAll(async () => {
  await pglite?.close();
  rmSync(folder, { recursive: true, force: true });
});

defineStoreConformance({
  name: 'SQLite',
  fresh: () => openSqliteStore(),
  release: (store) => store.close(),
  shared: () => {
    const target = join(folder, `shared-${Date.now()}.db`);
    return { target, store: openSqliteStore({ path: target }) };
  },
});

defineStoreConformance({
  name: 'PostgreSQL (PGlite)',
  fresh: async () => {
    // The maintenance test closes its store: the next test opens another.
    pglite ??= await openPostgresStore({ url: 'pglite:memory', openTimeoutMs: 120_000 });
    await pglite.reset();
    const store = pglite;
    return storeView(store, () => {
      pglite = null;
      void store.close();
    });
  },
  release: () => {},
  shared: null,
});
