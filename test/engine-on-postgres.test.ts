// The engine's crystallization, level-up, exact-revert (SPEC §6–7, turn 2), shard-search, themes, theme-hints and calibration suites again, on the PostgreSQL store (PGlite, in
// this thread): one PGlite for the file, emptied before each test's database.
import { afterAll } from 'vitest';
import { openPostgresStore } from '../src/store/postgres-pool.ts';
import { useStore } from './support/engine.ts';
import { storeView } from './support/shared-store.ts';

const pglite = await openPostgresStore({ url: 'pglite:memory', openTimeoutMs: 120_000 });
afterAll(() => pglite.close());

useStore(() => storeView(pglite, () => {}, pglite.reset()));

await import('./crystallization.test.ts');
await import('./levels.test.ts');
await import('./revert-exact.test.ts');
await import('./shard-search.test.ts');
await import('./trait-rules.test.ts');
await import('./themes.test.ts');
await import('./theme-hints.test.ts');
await import('./calibrate.test.ts');
