import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { BothWarehouses, PairedDimension, type Paired } from '../support/both-warehouses.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/**
 * The contract a dimension was built under (key, mode, valid_from, system time, metadata columns, tracked set,
 * column policies, extract) is recorded in the batch ledger inside the merge's transaction, on DuckDB and on the
 * BigQuery emulator alike; each merge compares the config with it before writing anything.
 */
let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const COLUMNS: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'price', type: 'BIGINT' },
]
const JAN = '2024-01-01T00:00:00Z'
const FEB = '2024-02-01T00:00:00Z'
const MAR = '2024-03-01T00:00:00Z'
const rows = [
  { customer_id: 1, name: 'Ana', price: 10 },
  { customer_id: 2, name: 'Bruno', price: 20 },
]

/** The same warehouses, merging under another config of the table. */
function under(dimension: PairedDimension, table: TableSpec): PairedDimension {
  return new PairedDimension(table, COLUMNS, both, dimension.warehouses, dimension.emulator)
}

/** Each side's recorded contracts, oldest first (batch id, the contract's tracked columns and key). */
async function recorded(dimension: PairedDimension): Promise<Paired<string[]>> {
  const read = await dimension.read(
    (d: SqlDialect, schema: string) =>
      `SELECT contract FROM ${d.table({ schema, name: '_dimsync_batches' })} WHERE contract IS NOT NULL ORDER BY applied_at`,
  )
  const summary = (r: readonly Record<string, unknown>[]) =>
    r.map((row) => {
      const c = JSON.parse(String(row.contract)) as { key: string[]; tracked: string[] }
      return `key ${c.key.join(',')} tracked ${c.tracked.join(',')}`
    })
  return { duckdb: summary(read.duckdb), bigquery: summary(read.bigquery) }
}

describe('the table contract on DuckDB and the BigQuery emulator', () => {
  it('a changed key is refused on both with the same message and nothing written; the contract is recorded once', async () => {
    const table = tableSpec({ tracked: { kind: 'list', columns: ['name'] } })
    const dimension = await both.open(table, COLUMNS)
    try {
      await dimension.load(rows, { extractedAt: JAN })
      await dimension.load(rows, { extractedAt: FEB })
      const held = await dimension.holdings()
      const rekeyed = under(dimension, { ...table, key: ['customer_id', 'name'] })
      const refused = await rekeyed.load(rows, { extractedAt: MAR })
      expect(refused.duckdb).toMatchObject({
        error: 'ContractChangedError',
        message: expect.stringMatching(
          /^table customers: key \(customer_id\) → \(customer_id, name\) since dim_customer was built \(recorded by batch \w+\); .* nothing was written\. Put key back to \(customer_id\) in the config, or load table customers into a new target \(target: dim_customer_v2\) to start its history over$/,
        ),
      })
      expect(refused.bigquery).toEqual(refused.duckdb)
      expect(await dimension.holdings()).toEqual(held)
      expect(await recorded(dimension)).toEqual({
        duckdb: ['key customer_id tracked name'],
        bigquery: ['key customer_id tracked name'],
      })
    } finally {
      await dimension.close()
    }
  })

  it('a tracked column added rehashes the current versions once on both: no version, the same rows, a new contract recorded', async () => {
    const table = tableSpec({ tracked: { kind: 'list', columns: ['name'] } })
    const dimension = await both.open(table, COLUMNS)
    try {
      await dimension.load(rows, { extractedAt: JAN })
      const wider = under(dimension, { ...table, tracked: { kind: 'list', columns: ['name', 'price'] } })
      const applied = await wider.load(rows, { extractedAt: FEB })
      expect(applied.duckdb).toMatchObject({
        status: 'merged',
        counts: { insertedVersions: 0, closedVersions: 0, unchangedEvents: 2 },
      })
      expect(applied.bigquery).toEqual(applied.duckdb)
      const changed = await wider.load([{ ...rows[0]!, price: 11 }, rows[1]!], { extractedAt: MAR })
      expect(changed.duckdb).toMatchObject({ counts: { insertedVersions: 1, closedVersions: 1 } })
      expect(changed.bigquery).toEqual(changed.duckdb)
      const held = await dimension.holdings()
      expect(held.bigquery).toEqual(held.duckdb)
      expect(held.duckdb.dimension).toHaveLength(3)
      expect(await recorded(dimension)).toEqual({
        duckdb: ['key customer_id tracked name', 'key customer_id tracked name,price'],
        bigquery: ['key customer_id tracked name', 'key customer_id tracked name,price'],
      })
    } finally {
      await dimension.close()
    }
  })

  it('a column no longer tracked becomes type 1 on every version on both, once; a previous_value and a current_value added are filled on every version', async () => {
    const table = tableSpec({ tracked: { kind: 'list', columns: ['name', 'price'] } })
    const dimension = await both.open(table, COLUMNS)
    try {
      await dimension.load(rows, { extractedAt: JAN })
      await dimension.load([{ ...rows[0]!, price: 11 }, rows[1]!], { extractedAt: FEB })
      const narrower = under(dimension, {
        ...table,
        tracked: { kind: 'list', columns: ['name'] },
        policies: { keepFirst: [], previousValue: ['name'], currentValue: ['price'] },
      })
      const applied = await narrower.load([{ ...rows[0]!, price: 11 }, rows[1]!], { extractedAt: MAR })
      expect(applied.duckdb).toMatchObject({ status: 'merged', counts: { insertedVersions: 0 } })
      expect(applied.bigquery).toEqual(applied.duckdb)
      const held = await dimension.holdings()
      expect(held.bigquery).toEqual(held.duckdb)
      expect(
        held.duckdb.dimension!.map((r) => [r.customer_id, r.price, r.current_price, r.previous_name]).sort(),
      ).toEqual([
        ['1', '11', '11', null],
        ['1', '11', '11', null],
        ['2', '20', '20', null],
      ])
    } finally {
      await dimension.close()
    }
  })

  it('a dimension written before contracts were recorded gets one on its next merge; a key it no longer names is refused from its NOT NULL columns', async () => {
    const table = tableSpec({ key: ['customer_id', 'name'], tracked: { kind: 'list', columns: ['price'] } })
    const dimension = await both.open(table, COLUMNS)
    try {
      await dimension.load(rows, { extractedAt: JAN })
      // As an earlier dimsync left it: no contract in the ledger.
      for (const side of ['duckdb', 'bigquery'] as const) {
        const warehouse = dimension.warehouses[side]
        const d = warehouse.dialect
        await warehouse.query(
          `UPDATE ${d.table({ schema: dimension.schemaOf(side), name: '_dimsync_batches' })} SET contract = NULL WHERE TRUE`,
        )
      }
      const held = await dimension.holdings()
      const shorter = under(dimension, { ...table, key: ['customer_id'] })
      const refused = await shorter.load(rows, { extractedAt: FEB })
      expect(refused.duckdb).toMatchObject({
        error: 'ContractChangedError',
        message:
          'table customers: key (customer_id) leaves out name, a key column of dim_customer (NOT NULL): the ' +
          'dimension was built with another key, and its versions cannot be read by this one; nothing was ' +
          'written. Put key back in the config, or load table customers into a new target ' +
          '(target: dim_customer_v2) to start its history over',
      })
      expect(refused.bigquery).toEqual(refused.duckdb)
      expect(await dimension.holdings()).toEqual(held)

      const same = await dimension.load(rows, { extractedAt: FEB })
      expect(same.duckdb).toMatchObject({
        status: 'merged',
        counts: { insertedVersions: 0, unchangedEvents: 2 },
      })
      expect(same.bigquery).toEqual(same.duckdb)
      expect(await recorded(dimension)).toEqual({
        duckdb: ['key customer_id,name tracked price'],
        bigquery: ['key customer_id,name tracked price'],
      })
    } finally {
      await dimension.close()
    }
  })

  it('a ledger an earlier dimsync created, without the record columns, gains them; the next merge records the contract', async () => {
    const table = tableSpec({ tracked: { kind: 'list', columns: ['name'] } })
    const dimension = await both.open(table, COLUMNS)
    try {
      await dimension.load(rows, { extractedAt: JAN })
      for (const side of ['duckdb', 'bigquery'] as const) {
        const warehouse = dimension.warehouses[side]
        const ledger = warehouse.dialect.table({ schema: dimension.schemaOf(side), name: '_dimsync_batches' })
        for (const column of ['contract', 'watermark'])
          await warehouse.query(`ALTER TABLE ${ledger} DROP COLUMN ${column}`)
      }
      const held = await dimension.holdings()
      const next = await dimension.load(rows, { extractedAt: FEB })
      expect(next.duckdb).toMatchObject({
        status: 'merged',
        counts: { insertedVersions: 0, unchangedEvents: 2 },
      })
      expect(next.bigquery).toEqual(next.duckdb)
      const after = await dimension.holdings()
      expect(after.duckdb.dimension).toEqual(held.duckdb.dimension)
      expect(after.bigquery.dimension).toEqual(held.bigquery.dimension)
      expect(await recorded(dimension)).toEqual({
        duckdb: ['key customer_id tracked name'],
        bigquery: ['key customer_id tracked name'],
      })
    } finally {
      await dimension.close()
    }
  })

  it('a table with late events (valid_from a column) refuses a config change of what is tracked', async () => {
    const columns: StagedColumn[] = [...COLUMNS, { name: 'changed_at', type: 'TIMESTAMP WITH TIME ZONE' }]
    const table = tableSpec({
      validFrom: { kind: 'column', column: 'changed_at' },
      tracked: { kind: 'list', columns: ['name'] },
    })
    const dimension = await both.open(table, columns)
    try {
      const at = (changedAt: string) => rows.map((r) => ({ ...r, changed_at: changedAt }))
      await dimension.load(at(JAN), { extractedAt: JAN })
      const held = await dimension.holdings()
      const wider = new PairedDimension(
        { ...table, tracked: { kind: 'list', columns: ['name', 'price'] } },
        columns,
        both,
        dimension.warehouses,
        dimension.emulator,
      )
      const refused = await wider.load(at(FEB), { extractedAt: FEB })
      expect(refused.duckdb).toMatchObject({
        error: 'ContractChangedError',
        message: expect.stringContaining(
          'table customers: tracked columns [name] → [name, price] since dim_customer was built',
        ),
      })
      expect(refused.bigquery).toEqual(refused.duckdb)
      expect(await dimension.holdings()).toEqual(held)
    } finally {
      await dimension.close()
    }
  })
})
