import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// The compile cache `souls` uses (src/cli/compile-cache.js), for the test workers and every Node process a test
// starts: without it each CLI child strips and compiles its TypeScript again (about 0.6 s of CPU a child).
const compileCache = process.env.NODE_COMPILE_CACHE || fileURLToPath(new URL('./node_modules/.cache/souls', import.meta.url));

// The slowest files (idle seconds, longest first), started before the others. Without a previous run's timings
// (a fresh clone) vitest starts the largest files first, and these are small ones (engine-on-postgres.test.ts imports
// the suites it runs again; the usability files are four lines): they ran last, one core idle while they finished.
const SLOWEST = [
  'test/engine-on-postgres.test.ts',
  'test/web/usability-laptop.test.ts',
  'test/concurrency.test.ts',
  'test/web/usability-phone.test.ts',
  'test/web/themes.test.ts',
  'test/events-backpressure.test.ts',
  'test/web/screens.test.ts',
  'test/web/graphiql.test.ts',
  'test/cli-postgres.test.ts',
  'test/web/button-states.test.ts',
];

class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = SLOWEST.findIndex((name) => file.moduleId.endsWith(name));
      return at === -1 ? SLOWEST.length : at;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

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
  test: { env: { NODE_COMPILE_CACHE: compileCache }, globalSetup: ['test/web/browser-server.ts'], sequence: { sequencer: SlowestFirst }, testTimeout: 120_000, hookTimeout: 120_000, maxWorkers: Math.max(2, availableParallelism() - 1), exclude: [...configDefaults.exclude, 'test/cluster/**'] },
  ssr: { resolve: { conditions: ['node', 'import', 'module-sync'] } },
});
