import { defineConfig } from 'vitest/config';

// The e2e tests share one writer + replica pair and pause its replay, so their files run one at a time.
export default defineConfig({
  test: {
    include: ['test/**/*.e2e-spec.ts'],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
