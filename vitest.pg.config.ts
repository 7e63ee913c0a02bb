import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.ts';

// `npm run test:pg`: the suites that need a PostgreSQL server (SOULS_TEST_PG_URL, default postgres://postgres@127.0.0.1:5432/test).
export default mergeConfig(base, defineConfig({ test: { include: ['test/pg/**/*.pg.ts'] } }));
