import { afterAll, beforeAll, describe, it } from 'vitest'
import { DuckDbAndPostgres } from '../support/duckdb-and-postgres.ts'
import { CONTRACT_GROUPS, runScenario } from '../support/warehouse-contract-scenarios.ts'

/**
 * The warehouse contract (test/support/warehouse-contract-scenarios.ts) on DuckDB and PostgreSQL, both real:
 * after every merge the same outcome (counts, or the same error and message), at the end the same rows.
 */

let pair: DuckDbAndPostgres
beforeAll(async () => {
  pair = await DuckDbAndPostgres.start()
})
afterAll(async () => {
  await pair?.stop()
})

describe.each(CONTRACT_GROUPS)('warehouse contract, %s: DuckDB and PostgreSQL agree', (_group, scenarios) => {
  // Each scenario has its own DuckDB and PostgreSQL schema: they run side by side.
  it.concurrent.each(Object.keys(scenarios))('%s', async (name) => {
    await runScenario(pair, scenarios[name]!)
  })
})
