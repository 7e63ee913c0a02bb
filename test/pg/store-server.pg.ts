// The store conformance suite against a real PostgreSQL server (npm run test:pg), concurrency included:
// eight threads, each with its own connection, write to one soul at once.
import { afterAll, beforeAll } from 'vitest';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres-bridge.ts';
import { createScratchDatabase, type ScratchDatabase } from '../support/pg-database.ts';
import { storeView } from '../support/shared-store.ts';
import { defineStoreConformance } from '../support/store-conformance.ts';

let database: ScratchDatabase;
let shared: PostgresStore | null = null;

beforeAll(() => {
  database = createScratchDatabase();
});
afterAll(() => {
  shared?.close();
  database.drop();
});

function open(): PostgresStore {
  shared ??= openPostgresStore({ url: database.url });
  shared.reset();
  const store = shared;
  return storeView(store, () => {
    shared = null;
    store.close();
  });
}

defineStoreConformance({
  name: 'PostgreSQL server',
  fresh: open,
  release: () => {},
  shared: () => ({ target: database.url, store: open() }),
});
