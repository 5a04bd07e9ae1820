import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DimensionReport, ProjectReport } from '../../../lib/core/history-report.ts'
import { readKeyTimeline, readReport } from '../../../lib/use-cases/read-report.ts'
import { MemoryFactHarness } from '../../support/fact-harness-memory.ts'
import {
  accounts,
  feed,
  loadReportScenario,
  REPORT_FACTS,
  REPORT_TABLES,
} from '../../support/report-scenario.ts'

/**
 * `dimsync report`'s aggregates on real DuckDB, for a scenario whose every count follows from its batches (see
 * report-scenario.ts): what each day opened, closed, deleted, restored, corrected, and the facts' shares.
 */

let h: MemoryFactHarness
let report: ProjectReport

beforeAll(async () => {
  h = await MemoryFactHarness.duckdb([...REPORT_TABLES])
  await loadReportScenario(h)
  report = await readReport(
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
})
afterAll(async () => {
  await h?.dispose()
})

const dimension = (name: string): DimensionReport => report.dimensions.find((d) => d.name === name)!
/** The non-zero counts of each day: [day, {field: count}]. */
const activity = (name: string) =>
  dimension(name).days.map((d) => [
    d.day,
    Object.fromEntries(Object.entries(d).filter(([field, value]) => field !== 'day' && value !== 0)),
  ])

describe('readReport on DuckDB', () => {
  it('invalidate: 103 deleted on 1 February (its version closed) and restored on 1 March; the unknown member facts point at is not a key', () => {
    expect(activity('customers')).toEqual([
      ['2024-01-01', { opened: 3, batches: 1 }],
      ['2024-02-01', { opened: 1, closed: 2, batches: 1, deletedKeys: 1 }],
      ['2024-03-01', { opened: 1, restored: 1, batches: 1 }],
    ])
    const c = dimension('customers')
    expect([c.loaded, c.rows, c.liveKeys, c.restoredCounting]).toEqual([true, 5, 3, 'gaps'])
    // 101 and 103 have two versions, 102 one.
    expect(c.depth).toEqual({ keys: 3, versions: 5, median: 2, p99: 2, max: 2 })
    expect(
      c.recentBatches.map((b) => [b.extractedAt.slice(0, 10), b.insertedVersions, b.deletedKeys]),
    ).toEqual([
      ['2024-03-01', 1, 0],
      ['2024-02-01', 1, 1],
      ['2024-01-01', 3, 0],
    ])
  })

  it('new_record: the deletion version opens on 1 February and closes when 103 comes back', () => {
    expect(activity('customers_nr')).toEqual([
      ['2024-01-01', { opened: 3, batches: 1 }],
      ['2024-02-01', { opened: 2, closed: 2, batches: 1, deletedKeys: 1 }],
      ['2024-03-01', { opened: 1, closed: 1, restored: 1, batches: 1 }],
    ])
    const c = dimension('customers_nr')
    expect([c.rows, c.liveKeys, c.restoredCounting]).toEqual([6, 3, 'deletion-versions'])
    expect(c.depth).toEqual({ keys: 3, versions: 6, median: 2, p99: 3, max: 3 })
  })

  it('change feed: the correction and the late event of 2 February, key 2 deleted on day 4 and back on day 6', () => {
    expect(activity('feed')).toEqual([
      ['2024-01-01', { opened: 2 }],
      ['2024-01-02', { opened: 1 }],
      ['2024-01-03', { opened: 1, closed: 1 }],
      ['2024-01-04', { closed: 1 }],
      ['2024-01-05', { opened: 1, closed: 1 }],
      ['2024-01-06', { opened: 1, restored: 1 }],
      ['2024-02-01', { batches: 1 }],
      // Keys 1 (its correction) and 3 (its late event) had their history recomputed; North was retired.
      ['2024-02-02', { batches: 1, deletedKeys: 1, lateKeys: 2, corrected: 1 }],
      ['2024-02-03', { batches: 1 }],
    ])
    expect(dimension('feed').depth).toEqual({ keys: 3, versions: 6, median: 2, p99: 3, max: 3 })
  })

  it('bitemporal: the row Lille corrected counts on the extraction day of the batch that superseded it, not among the versions', () => {
    const a = dimension('accounts')
    const superseded = a.days.filter((d) => d.corrected > 0)
    expect(superseded.map((d) => [d.day, d.corrected])).toEqual([['2024-02-02', 1]])
    expect(a.days.filter((d) => d.opened + d.closed > 0).map((d) => [d.day, d.opened, d.closed])).toEqual([
      ['2023-12-01', 1, 0],
      ['2024-01-01', 1, 1],
    ])
    expect([a.bitemporal, a.rows, a.liveKeys]).toEqual([true, 2, 1])
  })

  it('facts: rows per event day, on the unknown member and on inferred members', () => {
    const facts = Object.fromEntries(report.facts.map((f) => [f.name, f]))
    expect(facts.orders!.references).toEqual([
      {
        dimension: 'customers',
        surrogateKeyColumn: 'customer_sk',
        unknownMemberKey: 0,
        countsInferred: false,
      },
    ])
    expect(facts.orders!.days).toEqual([
      { day: '2024-01-15', rows: 2, unknown: [1], inferred: [0] },
      { day: '2024-02-10', rows: 1, unknown: [0], inferred: [0] },
    ])
    expect(facts.sales!.references[0]).toMatchObject({ unknownMemberKey: -1, countsInferred: true })
    expect(facts.sales!.days).toEqual([
      { day: '2024-01-20', rows: 3, unknown: [1], inferred: [1] },
      { day: '2024-02-05', rows: 1, unknown: [0], inferred: [0] },
    ])
  })

  it("a key's timeline: every version with its values; bitemporal rows with both time axes", async () => {
    const one = await readKeyTimeline(h.warehouse, { table: feed, schema: h.schema, key: '3' })
    expect(one.attributes).toEqual(['region'])
    expect(
      one.versions.map((v) => [v.validFrom.slice(0, 10), v.validTo?.slice(0, 10), v.current, v.values]),
    ).toEqual([
      ['2024-01-01', '2024-01-03', false, ['A']],
      ['2024-01-03', '2024-01-05', false, ['B']],
      ['2024-01-05', undefined, true, ['C']],
    ])
    const account = await readKeyTimeline(h.warehouse, { table: accounts, schema: h.schema, key: '1' })
    expect(account.bitemporal).toBe(true)
    expect(
      account.versions.map((v) => [v.values[0], v.validFrom.slice(0, 10), v.systemTo === undefined]),
    ).toEqual([
      ['Paris', '2023-12-01', true],
      ['Lyon', '2024-01-01', false],
      ['Lille', '2024-01-01', true],
    ])
    expect(account.versions.every((v) => v.systemFrom !== undefined)).toBe(true)
  })

  it('one table or fact by name, and a clear error for a name the config does not have', async () => {
    const request = {
      project: {
        configPath: 'dimsync.yaml',
        tables: REPORT_TABLES,
        facts: REPORT_FACTS,
        warehouse: { type: 'duckdb' as const, path: ':memory:', schema: 'main' },
      },
      schema: h.schema,
      now: new Date(),
    }
    const one = await readReport({ warehouse: h.warehouse }, { ...request, only: 'sales' })
    expect([one.dimensions.length, one.facts.map((f) => f.name)]).toEqual([0, ['sales']])
    await expect(readReport({ warehouse: h.warehouse }, { ...request, only: 'custmers' })).rejects.toThrow(
      'report: custmers is neither a table nor a fact table of dimsync.yaml (tables: customers, customers_nr, feed, accounts, stores, orders, sales)',
    )
    await expect(readReport({ warehouse: h.warehouse }, { ...request, key: '1' })).rejects.toThrow(
      'report --key: name the table the key is of with --table',
    )
  })
})
