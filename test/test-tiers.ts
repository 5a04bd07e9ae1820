/**
 * The tiers of the tests (`npm run test:unit` and `npm run test:fast` run the first ones alone: vitest.config.ts),
 * and what a unit test may import (test/lint/unit-tests.test.ts checks it):
 * - unit: no I/O at all (no files, processes, sockets or databases); runs anywhere in seconds;
 * - fast: the in-memory ports only: DuckDB at ':memory:' (openMemoryWarehouse), the in-memory staging and state
 *   stores, and no files, processes, sockets or servers of its own (test/lint/fast-tests.test.ts checks it);
 * - integration: real DuckDB, PostgreSQL, MariaDB, the S3, DynamoDB and BigQuery emulators, the CLI as a process;
 * - infra: the CDK app synthesized, its state machine simulated.
 * Every test file is in exactly one: a file not listed as unit, fast or infra is an integration test.
 */
export const UNIT_TESTS = [
  'test/lib/core/**/*.test.ts',
  'test/lib/config/{change-feed-config,config-errors,deploy-options,did-you-mean,parse-project,source-columns-check,yaml-scalars}.test.ts',
  'test/lib/config/env.test.ts',
  'test/lib/sql/{dialect-base,dialects-side-by-side,system-time-predicates,widen-columns}.test.ts',
  'test/lib/use-cases/{validate-project,table-run}.test.ts',
  'test/lib/config/csv-columns-config.test.ts',
  'test/lib/adapters/source/{row-csv-encoder,csv-file-kind}.test.ts',
  'test/lib/adapters/state/memory-state-store.test.ts',
  'test/functions/{format-plan,reporter,retryable-errors,report-page}.test.ts',
  'test/support/bigquery-emulator/{job-store,text-edits,values}.test.ts',
]

/**
 * Tests of the use-cases (and the DuckDB scenario suites) on the in-memory ports: the scd harness
 * (test/support/scd-harness.ts) merges batches of the in-memory staging store into DuckDB at ':memory:'.
 */
export const FAST_TESTS = [
  'test/lib/use-cases/{bitemporal,change-feed,column-policy,contract-edit,delete-condition,feed-policy,merge,partial-update,preset,table-mode,truncate,version-column}-properties.test.ts',
  'test/lib/use-cases/{capture-log-bound,type1-rewrite-guard,run-staging,read-report}.test.ts',
  'test/integration/{bitemporal,change-feed,check-failures,column-policies,empty-first-load,evolve-column,json-canonical-upgrade,partial-updates,scd2-scenarios,schema-evolution,surrogate-keys,table-contract,table-modes}.duckdb.test.ts',
]

export const INFRA_TESTS = ['test/infra/**/*.test.ts']

/** The test files of a tier: `unit`, or `fast` (unit and fast); every test file for none (`npm test`). */
export function testsOfTier(tier: string | undefined): string[] {
  if (tier === undefined || tier === '') return ['test/**/*.test.ts']
  if (tier === 'unit') return [...UNIT_TESTS]
  if (tier === 'fast') return [...UNIT_TESTS, ...FAST_TESTS]
  throw new Error(`DIMSYNC_TEST_TIER is unit or fast (or unset for every test), not '${tier}'`)
}

/**
 * Wall seconds of the files that took 8 s or more in a CI run (.ci/out/vitest.json), so that a clean clone, which
 * has no vitest results cache, starts them first (test/support/slow-first-sequencer.ts) and no long file is left
 * to run alone at the end. Refresh from a CI run's report.
 */
export const SLOW_TESTS: Readonly<Record<string, number>> = {
  'test/integration/wide-table-session.emulator.test.ts': 74,
  'test/lib/use-cases/history-properties-postgres.test.ts': 46,
  'test/integration/sources/db-change-feed-late-events.test.ts': 40,
  'test/lib/use-cases/partial-update-properties.test.ts': 34,
  'test/functions/cli-killed.test.ts': 33,
  'test/lib/use-cases/merge-properties.test.ts': 33,
  'test/integration/merge-matrix-postgres.test.ts': 31,
  'test/infra/chaos.test.ts': 30,
  'test/integration/warehouse-contract.emulator.test.ts': 29,
  'test/lib/use-cases/change-feed-properties.test.ts': 25,
  'test/lib/use-cases/fact-properties.test.ts': 22,
  'test/functions/cli-change-feed-db.test.ts': 21,
  'test/integration/alias-shadowing.emulator.test.ts': 21,
  'test/lib/use-cases/column-policy-properties.test.ts': 21,
  'test/functions/cli.test.ts': 19,
  'test/lib/use-cases/bitemporal-properties.test.ts': 19,
  'test/lib/use-cases/delete-condition-properties.test.ts': 19,
  'test/docs/docs-examples.test.ts': 18,
  'test/integration/change-feed-policies.emulator.test.ts': 18,
  'test/lib/sql/bigquery-partition-filters.test.ts': 18,
  'test/lib/sql/bigquery-zetasql.test.ts': 18,
  'test/integration/one-current-version.emulator.test.ts': 17,
  'test/lib/use-cases/history-properties.emulator.test.ts': 17,
  'test/functions/cli-bigquery.emulator.test.ts': 16,
  'test/lib/use-cases/preset-properties.test.ts': 16,
  'test/functions/cli-watermark-ledger.test.ts': 15,
  'test/functions/cli-killed-postgres-warehouse.test.ts': 14,
  'test/integration/version-column.emulator.test.ts': 14,
  'test/lib/adapters/bigquery/bigquery-deadlines.emulator.test.ts': 14,
  'test/lib/use-cases/feed-policy-properties.test.ts': 14,
  'test/lib/adapters/bigquery/bigquery-warehouse.emulator.test.ts': 13,
  'test/lib/use-cases/feed-policy-properties.emulator.test.ts': 13,
  'test/integration/sources/db-source-behaviour.test.ts': 12,
  'test/lib/sql/bigquery-wide-tables.test.ts': 12,
  'test/functions/report-browser.test.ts': 11,
  'test/integration/sources/file-new-files.test.ts': 11,
  'test/lib/adapters/bigquery/history-features.emulator.test.ts': 11,
  'test/lib/use-cases/table-mode-properties.test.ts': 11,
  'test/functions/cli-fact-operations.test.ts': 10,
  'test/functions/cli-history-guards.test.ts': 10,
  'test/functions/cli-warehouse-lock.test.ts': 10,
  'test/integration/warehouse-contract-postgres.test.ts': 10,
  'test/lib/adapters/warehouse/warehouse-contract-memory.test.ts': 10,
  'test/lib/use-cases/contract-edit-properties.test.ts': 10,
  'test/lib/use-cases/redelivery.test.ts': 10,
  'test/functions/cli-version-column.test.ts': 9,
  'test/lib/use-cases/truncate-properties.test.ts': 9,
  'test/functions/cli-postgres.test.ts': 8,
  'test/integration/facts-inferred.test.ts': 8,
  'test/integration/facts-old-versions.test.ts': 8,
}

/**
 * Modules that reach outside the process (or start something that does): a unit test imports none of them, a fast
 * test none but DuckDB's (FAST_IO_MODULES).
 */
export const IO_MODULES = [
  /^node:(fs|fs\/promises|child_process|net|http|https|dgram|worker_threads)$/,
  /^@duckdb\//,
  /^pg(-|$)/,
  /^mysql2/,
  /^@aws-sdk\//,
  /^@google-cloud\//,
  /^(s3rver|dynalite)$/,
  /^aws-cdk-lib/,
  /^@fivetrandevelopers\/zetasql/,
]

/** What a fast test may import of IO_MODULES: DuckDB, opened at ':memory:' only (test/lint/fast-tests.test.ts). */
export const FAST_IO_MODULES = [/^@duckdb\//]

/**
 * The lib/ modules a fast test may not import (its harnesses followed): adapters other than the in-memory ones
 * (files, servers, clouds; the DuckDB warehouse is reached through openMemoryWarehouse; the blob staging store is
 * the staging logic over whichever blob store it is given, MemoryBlobStore here) and the composition roots that
 * build them. Type-only imports are erased and do not count.
 */
export const FAST_FORBIDDEN_LIB = [
  /^lib\/adapters\/(?!((staging|state)\/memory-[a-z-]+|warehouse\/duckdb-memory-warehouse|staging\/blob-staging-store)\.ts$)/,
  /^lib\/runtime\//,
]
