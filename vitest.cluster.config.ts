import { configDefaults, defineConfig } from 'vitest/config';
import base from './vitest.config.ts';

// npm run test:cluster (scripts/test-cluster.ts sets SOULS_CLUSTER_*): the replicas checked from outside, then the
// examples' and the web app's tests with their servers on the cluster's database and Redis. One file at a time: the
// replicas are real processes on a shared machine.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/cluster/**/*.test.ts', 'test/examples-api.test.ts', 'test/web/*.test.ts'],
    exclude: configDefaults.exclude,
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
