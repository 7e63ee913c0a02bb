// The store conformance suite against a real PostgreSQL server (npm run test:pg), concurrency included:
// eight threads, each with its own connection, write to one soul at once.
import { afterAll, beforeAll } from 'vitest';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres-pool.ts';
import { createScratchDatabase, type ScratchDatabase } from '../support/pg-database.ts';
import { storeView } from '../support/shared-store.ts';
import { defineStoreConformance } from '../support/store-conformance.ts';

let database: ScratchDatabase;
let shared: PostgresStore | null = null;

beforeAll(() => {
  database = createScratchDatabase();
});
afterAll(async () => {
  await shared?.close();
  database.drop();
});

async function open(): Promise<PostgresStore> {
  shared ??= await openPostgresStore({ url: database.url });
  await shared.reset();
  const store = shared;
  return storeView(store, () => {
    shared = null;
    void store.close();
  });
}

defineStoreConformance({
  name: 'PostgreSQL server',
  fresh: open,
  release: () => {},
  shared: async () => ({ target: database.url, store: await open() }),
});
