import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// The compile cache `souls` uses (src/cli/compile-cache.js), for the test workers and every Node process a test
// starts: without it each CLI child strips and compiles its TypeScript again (about 0.6 s of CPU a child).
const compileCache = process.env.NODE_COMPILE_CACHE || fileURLToPath(new URL('./node_modules/.cache/souls', import.meta.url));

// Tests resolve packages the way Node does at run time. Vite's default adds the
// "development" condition, which loads graphql 17's __dev__ build for project
// files while packages loaded natively (Pothos, Yoga) get the regular build: two
// graphql instances, so `instanceof GraphQLError` and `execute(schema)` fail in
// tests only (domain errors were masked as "Unexpected error.").
export default defineConfig({
  // Bounds, not speed checks: a machine shared with other work can run a CPU-heavy test several times slower.
  // The browser test files share one Chromium, started for the run by test/web/browser-server.ts when first asked.
  // test/cluster needs PostgreSQL and Redis servers: `npm run test:cluster` runs it.
  // Two workers even on two cores (vitest's default would be one): most test time waits on child servers and Chromium.
  test: { env: { NODE_COMPILE_CACHE: compileCache }, globalSetup: ['test/web/browser-server.ts'], testTimeout: 120_000, hookTimeout: 120_000, maxWorkers: Math.max(2, availableParallelism() - 1), exclude: [...configDefaults.exclude, 'test/cluster/**'] },
  ssr: { resolve: { conditions: ['node', 'import', 'module-sync'] } },
});
