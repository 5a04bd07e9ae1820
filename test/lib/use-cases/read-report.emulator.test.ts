import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { KeyTimeline, ProjectReport } from '../../../lib/core/history-report.ts'
import { readKeyTimeline, readReport } from '../../../lib/use-cases/read-report.ts'
import { ZetaSqlService } from '../../support/bigquery-emulator/zetasql-service.ts'
import { FactHarness } from '../../support/fact-harness.ts'
import {
  accounts,
  feed,
  loadReportScenario,
  REPORT_FACTS,
  REPORT_TABLES,
} from '../../support/report-scenario.ts'

/**
 * `dimsync report`'s statements rendered for BigQuery and run by the emulator (ZetaSQL's reference
 * implementation) give the same report as DuckDB for the same batches: every day's counts, depths, ledger rows,
 * facts' shares and a key's timeline (read-report.test.ts checks the counts themselves on DuckDB).
 */

interface Observed {
  readonly report: Pick<ProjectReport, 'config' | 'dimensions' | 'facts'>
  readonly feedKey: KeyTimeline
  readonly accountKey: KeyTimeline
}

async function observe(h: FactHarness): Promise<Observed> {
  try {
    await loadReportScenario(h)
    const full = await readReport(
      { warehouse: h.warehouse },
      {
        project: {
          configPath: 'dimsync.yaml',
          tables: REPORT_TABLES,
          facts: REPORT_FACTS,
          warehouse: { type: 'duckdb', path: ':memory:', schema: 'main' },
        },
        schema: h.schema,
        now: new Date('2024-06-01T00:00:00Z'),
      },
    )
    const report = { config: full.config, dimensions: full.dimensions, facts: full.facts }
    return {
      report,
      feedKey: await readKeyTimeline(h.warehouse, { table: feed, schema: h.schema, key: '3' }),
      accountKey: await readKeyTimeline(h.warehouse, { table: accounts, schema: h.schema, key: '1' }),
    }
  } finally {
    await h.dispose()
  }
}

let zeta: ZetaSqlService
beforeAll(async () => {
  zeta = await ZetaSqlService.start()
})
afterAll(async () => {
  await zeta?.stop()
})

describe('readReport on the BigQuery emulator', () => {
  it('gives the report DuckDB gives for the same batches', { timeout: 300_000 }, async () => {
    const duckdb = await observe(await FactHarness.duckdb([...REPORT_TABLES]))
    const bigquery = await observe(await FactHarness.bigquery(zeta, [...REPORT_TABLES]))
    expect(bigquery).toEqual(duckdb)
    // Not an empty agreement: every section has what the scenario put there.
    const days = (name: string) => duckdb.report.dimensions.find((d) => d.name === name)!.days
    expect(days('customers').map((d) => [d.day, d.opened, d.closed, d.restored])).toEqual([
      ['2024-01-01', 3, 0, 0],
      ['2024-02-01', 1, 2, 0],
      ['2024-03-01', 1, 0, 1],
    ])
    expect(days('accounts').some((d) => d.corrected === 1)).toBe(true)
    expect(duckdb.report.facts.map((f) => f.days.length)).toEqual([2, 2])
    expect(duckdb.feedKey.versions.map((v) => v.values[0])).toEqual(['A', 'B', 'C'])
    expect(duckdb.accountKey.versions).toHaveLength(3)
  })
})
