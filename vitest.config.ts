import { defineConfig } from 'vitest/config'
import { SlowFirstSequencer } from './test/support/slow-first-sequencer.ts'
import { testsOfTier } from './test/test-tiers.ts'
import { workerPreload } from './test/support/worker-allocator.ts'

// The worker processes, forked after this config is read, start on jemalloc when it is installed (and every
// process they start inherits it): test/support/worker-allocator.ts says why.
const preload = workerPreload(process.env)
if (preload !== undefined) process.env.LD_PRELOAD = preload

/**
 * `npm test` runs every test file once; DIMSYNC_TEST_TIER=unit (`npm run test:unit`) or fast (`npm run test:fast`:
 * unit and fast) runs the files of that tier (test/test-tiers.ts). `npm run test:coverage` reports lib/core and
 * lib/sql and fails under the floor.
 */
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The files run one after another in shared worker processes (`isolate: false`): each file imports only what
    // the files before it did not (the modules of lib/, the AWS SDK, DuckDB, ZetaSQL's client).
    // restore-process-state.ts puts back the environment and working directory a file changed, before the next.
    // The tiers are not vitest projects: vitest gives each project workers of its own, and with the slowest files
    // first across the tiers, a worker was started (and imported everything again) at almost every switch
    // between them (the whole suite's import time 88 -> 17 s, 1664 -> 1573 CPU-s of the machine).
    setupFiles: ['test/support/fast-check-seed.ts', 'test/support/restore-process-state.ts'],
    isolate: false,
    maxWorkers: 2,
    sequence: { sequencer: SlowFirstSequencer },
    include: testsOfTier(process.env.DIMSYNC_TEST_TIER),
    coverage: {
      provider: 'v8',
      include: ['lib/core/**/*.ts', 'lib/sql/**/*.ts'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: '.ci/out/coverage',
      // The floor `npm run test:coverage` checks (it prints what a run reached): raise it when coverage rises, never
      // lower it to let a change through.
      thresholds: {
        'lib/core/**': { lines: 92, branches: 85 },
        'lib/sql/**': { lines: 92, branches: 84 },
      },
    },
  },
})
