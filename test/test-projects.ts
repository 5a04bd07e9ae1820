/**
 * How `npm test` splits the tests into vitest projects (vitest.config.ts), and what a unit test may import
 * (test/lint/unit-tests.test.ts checks it):
 * - unit: no I/O at all (no files, processes, sockets or databases); runs anywhere in seconds;
 * - integration: real DuckDB, PostgreSQL, MariaDB, the S3, DynamoDB and BigQuery emulators, the CLI as a process;
 * - infra: the CDK app synthesized, its state machine simulated.
 * Every test file is in exactly one: a file not listed as unit or infra is an integration test.
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

export const INFRA_TESTS = ['test/infra/**/*.test.ts']

/**
 * Wall seconds of the slowest files in a CI run (what .ci/run prints at its end), so that a clean clone, which
 * has no vitest results cache, starts them first (test/support/slow-first-sequencer.ts). Refresh from CI's list.
 */
export const SLOW_TESTS: Readonly<Record<string, number>> = {
  'test/integration/wide-table-session.emulator.test.ts': 215,
  'test/integration/warehouse-contract.emulator.test.ts': 115,
  'test/lib/use-cases/partial-update-properties.test.ts': 100,
  'test/infra/chaos.test.ts': 80,
  'test/integration/merge-matrix-postgres.test.ts': 60,
}

/** Modules that reach outside the process (or start something that does): a unit test imports none of them. */
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
