import { afterEach, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { evolveColumn } from '../../lib/use-cases/evolve-column.ts'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'
import { presetTableFields } from '../../lib/config/table-options.ts'

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

const withRegion = (type: string): StagedColumn[] => [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type },
  { name: 'changed_at', type: 'TIMESTAMP' },
]
const TEXT = withRegion('VARCHAR')
const NUMBER = withRegion('INTEGER')
const at = (day: number) => `2024-01-${String(day).padStart(2, '0')} 00:00:00`
const extracted = (day: number) => `2024-02-${String(day).padStart(2, '0')}T00:00:00Z`

/** A delta keyed on a change time: late events go through the capture log, whose state hashes evolve too. */
const TABLE: TableSpec = tableSpec({
  extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
  validFrom: { kind: 'column', column: 'changed_at' },
})

async function versions(h: ScdHarness) {
  const rows = await h.query(
    `SELECT customer_id, region, typeof(region) AS type, CAST(valid_from AS VARCHAR) AS f FROM dim_customer ORDER BY customer_id, valid_from`,
  )
  return rows.map((r) => [Number(r.customer_id), r.region, r.type, String(r.f).slice(0, 10)])
}

describe('dimsync evolve --table T --column C (real DuckDB)', () => {
  it('rewrites the column as the type the source now sends; the refused batch then merges with no new version, and a late re-delivery conflicts with nothing', async () => {
    const h = (harness = await ScdHarness.create(TABLE, TEXT))
    await h.load([{ customer_id: 1, region: '7', changed_at: at(1) }], { extractedAt: extracted(1) })
    await h.load([{ customer_id: 1, region: '8', changed_at: at(5) }], { extractedAt: extracted(2) })
    const refused = await h.stage([{ customer_id: 1, region: 8, changed_at: at(9) }], {
      extractedAt: extracted(3),
      columns: NUMBER,
    })
    await expect(h.merge(refused)).rejects.toThrow(
      'column "region" changed type from VARCHAR (dimension dim_customer) to INTEGER (source)',
    )
    const result = await evolveColumn(
      { warehouse: h.warehouse, staging: h.batches },
      { table: TABLE, schema: 'main', column: 'region' },
    )
    expect(result).toMatchObject({ from: 'VARCHAR', to: 'INTEGER', batchId: refused, columns: ['region'] })
    expect(await versions(h)).toEqual([
      [1, 7, 'INTEGER', '2024-01-01'],
      [1, 8, 'INTEGER', '2024-01-05'],
    ])
    const merged = await h.merge(refused)
    expect(merged.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0, unchangedEvents: 1 })
    // The first event again, now typed INTEGER: the same state as captured, so no conflict and no change.
    const again = await h.load([{ customer_id: 1, region: 7, changed_at: at(1) }], {
      extractedAt: extracted(4),
      columns: NUMBER,
    } as never)
    expect(again.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
    // A late event between them is slotted in with the same hashes as its neighbours.
    await h.load([{ customer_id: 1, region: 7, changed_at: at(3) }], {
      extractedAt: extracted(5),
      columns: NUMBER,
    } as never)
    expect(await versions(h)).toEqual([
      [1, 7, 'INTEGER', '2024-01-01'],
      [1, 8, 'INTEGER', '2024-01-05'],
    ])
  })

  it('a type whose canonical text differs (text to double): row hashes and captured states are computed again, so nothing re-versions', async () => {
    const h = (harness = await ScdHarness.create(TABLE, TEXT))
    await h.load([{ customer_id: 1, region: '0.1', changed_at: at(1) }], { extractedAt: extracted(1) })
    await h.load([{ customer_id: 1, region: '0.2', changed_at: at(5) }], { extractedAt: extracted(2) })
    const DOUBLE = withRegion('DOUBLE')
    const refused = await h.stage([{ customer_id: 1, region: 0.2, changed_at: at(9) }], {
      extractedAt: extracted(3),
      columns: DOUBLE,
    })
    await expect(h.merge(refused)).rejects.toThrow('changed type from VARCHAR')
    const result = await evolveColumn(
      { warehouse: h.warehouse, staging: h.batches },
      { table: TABLE, schema: 'main', column: 'region' },
    )
    expect(result.statements.map((s) => s.label)).toContain('evolve: captured states take the new hashes')
    expect((await h.merge(refused)).counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
    const late = { extractedAt: extracted(4), columns: DOUBLE } as never
    await h.load(
      [
        { customer_id: 1, region: 0.1, changed_at: at(1) },
        { customer_id: 1, region: 0.1, changed_at: at(3) },
      ],
      late,
    )
    expect(await versions(h)).toEqual([
      [1, 0.1, 'DOUBLE', '2024-01-01'],
      [1, 0.2, 'DOUBLE', '2024-01-05'],
    ])
  })

  it('an untracked (type 1) column whose canonical text differs: an event sent again after the rewrite is not refused', async () => {
    const table: TableSpec = { ...TABLE, tracked: { kind: 'all_except', columns: ['region'] } }
    const h = (harness = await ScdHarness.create(table, TEXT))
    await h.load([{ customer_id: 1, region: '0.1', changed_at: at(1) }], { extractedAt: extracted(1) })
    await h.load([{ customer_id: 1, region: '0.2', changed_at: at(5) }], { extractedAt: extracted(2) })
    const DOUBLE = withRegion('DOUBLE')
    const refused = await h.stage([{ customer_id: 1, region: 0.2, changed_at: at(9) }], {
      extractedAt: extracted(3),
      columns: DOUBLE,
    })
    await expect(h.merge(refused)).rejects.toThrow('changed type from VARCHAR')
    await evolveColumn(
      { warehouse: h.warehouse, staging: h.batches },
      { table, schema: 'main', column: 'region' },
    )
    expect((await h.merge(refused)).counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
    const again = await h.load([{ customer_id: 1, region: 0.1, changed_at: at(1) }], {
      extractedAt: extracted(4),
      columns: DOUBLE,
    } as never)
    expect(again.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0, unchangedEvents: 1 })
    expect(await versions(h)).toEqual([[1, 0.2, 'DOUBLE', '2024-01-01']])
  })

  it("a partial-update table: the capture log's raw column is rewritten too, so a late partial event refolds with the new type (text to time)", async () => {
    const partial: TableSpec = { ...TABLE, partialUpdates: { ignoreNulls: { kind: 'all' } } }
    const h = (harness = await ScdHarness.create(partial, TEXT))
    await h.load([{ customer_id: 1, region: '10:30:00', changed_at: at(1) }], { extractedAt: extracted(1) })
    await h.load([{ customer_id: 1, region: '11:45:00', changed_at: at(5) }], { extractedAt: extracted(2) })
    const TIME = withRegion('TIME')
    const refused = await h.stage([{ customer_id: 1, region: '11:45:00', changed_at: at(9) }], {
      extractedAt: extracted(3),
      columns: TIME,
    })
    await expect(h.merge(refused)).rejects.toThrow('changed type from VARCHAR')
    await evolveColumn(
      { warehouse: h.warehouse, staging: h.batches },
      { table: partial, schema: 'main', column: 'region' },
    )
    const raw = await h.query(`SELECT DISTINCT typeof(raw_region) AS type FROM dim_customer_dimsync_captures`)
    expect(raw).toEqual([{ type: 'TIME' }])
    expect((await h.merge(refused)).counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
    // A late event saying nothing about region at 3 folds into 10:30 (the state at its time): no version opens,
    // and the later captures refold to the states they had.
    const late = await h.load([{ customer_id: 1, region: null, changed_at: at(3) }], {
      extractedAt: extracted(4),
      columns: TIME,
    } as never)
    expect(late.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
    const rows = await h.query(
      `SELECT CAST(region AS VARCHAR) AS region, typeof(region) AS type, CAST(valid_from AS VARCHAR) AS f FROM dim_customer ORDER BY valid_from`,
    )
    expect(rows.map((r) => [r.region, r.type, String(r.f).slice(0, 10)])).toEqual([
      ['10:30:00', 'TIME', '2024-01-01'],
      ['11:45:00', 'TIME', '2024-01-05'],
    ])
  })

  it('refuses a rewrite that loses values, naming the key and the value; nothing is changed', async () => {
    const h = (harness = await ScdHarness.create(TABLE, TEXT))
    await h.load(
      [
        { customer_id: 1, region: '7', changed_at: at(1) },
        { customer_id: 2, region: 'North', changed_at: at(1) },
        { customer_id: 3, region: '007', changed_at: at(1) },
      ],
      { extractedAt: extracted(1) },
    )
    const before = await h.history()
    await h.stage([{ customer_id: 1, region: 8, changed_at: at(9) }], {
      extractedAt: extracted(2),
      columns: NUMBER,
    })
    await expect(
      evolveColumn(
        { warehouse: h.warehouse, staging: h.batches },
        { table: TABLE, schema: 'main', column: 'region' },
      ),
    ).rejects.toThrow(
      'dimsync evolve: table customers, column region: 2 value(s) cannot become INTEGER without loss (from VARCHAR): ' +
        'customer_id=2 (version 2) holds "North"; customer_id=3 (version 3) holds "007". Nothing was changed.',
    )
    expect(await h.history()).toEqual(before)
  })

  it("a partial-update table: a value only the capture log's raw column holds is checked too, and refuses the rewrite naming its key and time", async () => {
    const columns = (region: string): StagedColumn[] => [
      ...withRegion(region),
      { name: 'segment', type: 'VARCHAR' },
    ]
    // columns_to_update: [segment]: the event at 5 says region "North", which the key's versions never take.
    const partial: TableSpec = { ...TABLE, partialUpdates: { columnsToUpdate: ['segment'] } }
    const h = (harness = await ScdHarness.create(partial, columns('VARCHAR')))
    await h.load([{ customer_id: 1, region: '7', segment: 'a', changed_at: at(1) }], {
      extractedAt: extracted(1),
    })
    await h.load([{ customer_id: 1, region: 'North', segment: 'b', changed_at: at(5) }], {
      extractedAt: extracted(2),
    })
    expect(await versions(h)).toEqual([
      [1, '7', 'VARCHAR', '2024-01-01'],
      [1, '7', 'VARCHAR', '2024-01-05'],
    ])
    const before = await h.history()
    const log = await h.query(`SELECT raw_region FROM dim_customer_dimsync_captures ORDER BY captured_at`)
    await h.stage([{ customer_id: 1, region: 8, segment: 'c', changed_at: at(9) }], {
      extractedAt: extracted(3),
      columns: columns('INTEGER'),
    })
    await expect(
      evolveColumn(
        { warehouse: h.warehouse, staging: h.batches },
        { table: partial, schema: 'main', column: 'region' },
      ),
    ).rejects.toThrow(
      'dimsync evolve: table customers, column region: 1 value(s) cannot become INTEGER without loss (from VARCHAR): ' +
        'customer_id=1 (event captured at 2024-01-05 00:00:00+00) said "North" in capture log column raw_region. Nothing was changed.',
    )
    expect(await h.history()).toEqual(before)
    expect(
      await h.query(`SELECT raw_region FROM dim_customer_dimsync_captures ORDER BY captured_at`),
    ).toEqual(log)
  })

  it('says what is missing: no staged batch with the new type, no such column, a bitemporal table', async () => {
    const h = (harness = await ScdHarness.create(TABLE, TEXT))
    await h.load([{ customer_id: 1, region: '7', changed_at: at(1) }], { extractedAt: extracted(1) })
    const deps = { warehouse: h.warehouse, staging: h.batches }
    await expect(evolveColumn(deps, { table: TABLE, schema: 'main', column: 'region' })).rejects.toThrow(
      'dimsync evolve: table customers, column region: no staged batch of the table holds region with a type other than VARCHAR',
    )
    await expect(evolveColumn(deps, { table: TABLE, schema: 'main', column: 'segment' })).rejects.toThrow(
      'dimsync evolve: table customers, column segment: dimension dim_customer has no column segment',
    )
    const bitemporal = { ...TABLE, systemTime: { systemFrom: 'system_from', systemTo: 'system_to' } }
    await expect(evolveColumn(deps, { table: bitemporal, schema: 'main', column: 'region' })).rejects.toThrow(
      'keeps bitemporal history (system_time: true), whose rows are never rewritten',
    )
  })
})

describe('dimsync evolve of a key column of a dbt-preset table', () => {
  it("recomputes dbt_scd_id from the key's new text (a decimal key whose scale grows), as a new version would get it", async () => {
    const table = tableSpec({ key: ['account'], target: 'dim_account', ...presetTableFields('dbt') })
    const keyed = (type: string): StagedColumn[] => [
      { name: 'account', type },
      { name: 'name', type: 'VARCHAR' },
    ]
    const h = (harness = await ScdHarness.create(table, keyed('DECIMAL(10,2)')))
    await h.load([{ account: '1.50', name: 'Ana' }], { extractedAt: extracted(1) })
    const idMatches = async (keyText: string) => {
      const rows = await h.query(
        // dbt-duckdb: md5(cast(key as varchar) || '|' || cast(<its snapshot time, a naive UTC timestamp> as varchar)).
        `SELECT dbt_scd_id = md5('${keyText}|' || CAST(dbt_updated_at AT TIME ZONE 'UTC' AS VARCHAR)) AS same FROM dim_account`,
      )
      return rows.map((r) => r.same)
    }
    expect(await idMatches('1.50')).toEqual([true])
    const refused = await h.stage([{ account: '1.500', name: 'Ana' }], {
      extractedAt: extracted(2),
      columns: keyed('DECIMAL(12,3)'),
    })
    await expect(h.merge(refused)).rejects.toThrow('changed type')
    await evolveColumn(
      { warehouse: h.warehouse, staging: h.batches },
      { table, schema: 'main', column: 'account' },
    )
    expect(await idMatches('1.500')).toEqual([true])
  })
})

describe('dimsync evolve of a column with type 3 and 6 columns derived from it', () => {
  it('rewrites previous_<col> and current_<col> with the column, so the refused batch then merges with no new version', async () => {
    const table = tableSpec({
      policies: { keepFirst: [], previousValue: ['region'], currentValue: ['region'] },
    })
    const typed = (type: string): StagedColumn[] => [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type },
    ]
    const h = (harness = await ScdHarness.create(table, typed('VARCHAR')))
    await h.load([{ customer_id: 1, region: '7' }], { extractedAt: extracted(1) })
    await h.load([{ customer_id: 1, region: '8' }], { extractedAt: extracted(2) })
    const refused = await h.stage([{ customer_id: 1, region: 8 }], {
      extractedAt: extracted(3),
      columns: typed('INTEGER'),
    })
    await expect(h.merge(refused)).rejects.toThrow('changed type')
    const result = await evolveColumn(
      { warehouse: h.warehouse, staging: h.batches },
      { table, schema: 'main', column: 'region' },
    )
    expect(result.columns).toEqual(['region', 'previous_region', 'current_region'])
    const rows = await h.query(
      `SELECT region, previous_region, current_region, typeof(previous_region) AS p, typeof(current_region) AS c
       FROM dim_customer ORDER BY valid_from`,
    )
    expect(rows.map((r) => [r.region, r.previous_region, r.current_region, r.p, r.c])).toEqual([
      [7, 7, 8, 'INTEGER', 'INTEGER'],
      [8, 7, 8, 'INTEGER', 'INTEGER'],
    ])
    const merged = await h.merge(refused)
    expect(merged.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
  })
})
