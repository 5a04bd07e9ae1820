import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BatchWork, TransactionWork } from '../../../../lib/core/batch-work.ts'
import { DuckDbWarehouse } from '../../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { PostgresWarehouse } from '../../../../lib/adapters/warehouse/postgres-warehouse.ts'
import type { ApplyWorkRequest, Warehouse } from '../../../../lib/ports/warehouse.ts'
import type { SqlDialect } from '../../../../lib/sql/dialect.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'
import { PG_URL } from '../../../integration/sources/support/db-services.ts'

/**
 * DuckDB and PostgreSQL apply a batch's work in one transaction, DDL included (it rolls back with it): the
 * statements, the report and the reads around it; a dry run, a failed statement or a failed lease check leaves
 * nothing. They never ask for the script form.
 */
const schema = `apply_work_${randomBytes(4).toString('hex')}`
const warehouses: [string, () => Promise<Warehouse<SqlDialect>>][] = [
  ['DuckDB', () => DuckDbWarehouse.open({ path: ':memory:' })],
  ['PostgreSQL', () => PostgresWarehouse.open({ url: PG_URL })],
]

function work(d: SqlDialect, extra: TransactionWork['statements'] = []): BatchWork {
  const t = d.table({ schema, name: 'facts' })
  const v = d.table({ schema, name: 'facts_view' })
  const transaction: TransactionWork = {
    ddl: [{ label: 'create facts', sql: `CREATE TABLE IF NOT EXISTS ${t} (id INTEGER)` }],
    statements: [{ label: 'insert facts', sql: `INSERT INTO ${t} VALUES (1), (2)` }, ...extra],
    ddlAfter: [{ label: 'create view', sql: `CREATE OR REPLACE VIEW ${v} AS SELECT * FROM ${t}` }],
    report: `SELECT COUNT(*) AS facts FROM ${t}`,
    alreadyRun: [{ label: 'ledger (run before)', sql: 'SELECT 1' }],
  }
  return {
    inTransaction: () => transaction,
    asScript: () => {
      throw new Error('a session warehouse asked for the script form')
    },
  }
}

const request = (options: Partial<ApplyWorkRequest> = {}): ApplyWorkRequest => ({
  table: tableSpec({}),
  batchId: 'b1',
  staged: { columns: [] },
  dryRun: false,
  ...options,
})

describe.each(warehouses)('%s applies a batch work in one transaction', (_name, open) => {
  let warehouse: Warehouse<SqlDialect>
  const exists = async () => (await warehouse.describeTable({ schema, name: 'facts' })) !== undefined
  beforeAll(async () => {
    warehouse = await open()
    await warehouse.createSchemaIfMissing(schema)
  })
  afterAll(async () => {
    await warehouse.query(`DROP SCHEMA IF EXISTS ${warehouse.dialect.quoteIdentifier(schema)} CASCADE`)
    await warehouse.close()
  })

  it('a dry run reports and leaves nothing, the DDL rolled back with it', async () => {
    let checked = false
    const applied = await warehouse.applyWork(
      work(warehouse.dialect),
      request({ dryRun: true, beforeCommit: async () => void (checked = true) }),
    )
    expect(Number(applied.row?.facts)).toBe(2)
    expect(applied.statements.map((s) => s.label)).toEqual([
      'ledger (run before)',
      'create facts',
      'insert facts',
      'create view',
    ])
    expect(checked).toBe(false)
    expect(await exists()).toBe(false)
  })

  it('a failed statement or lease check rolls everything back', async () => {
    const missing = warehouse.dialect.table({ schema, name: 'missing' })
    const failing = [
      { label: 'insert into a table that is not there', sql: `INSERT INTO ${missing} VALUES (1)` },
    ]
    await expect(warehouse.applyWork(work(warehouse.dialect, failing), request())).rejects.toThrow()
    expect(await exists()).toBe(false)
    await expect(
      warehouse.applyWork(
        work(warehouse.dialect),
        request({
          beforeCommit: async () => {
            throw new Error('lease lost')
          },
        }),
      ),
    ).rejects.toThrow('lease lost')
    expect(await exists()).toBe(false)
  })

  it('commits, and reads the queries around it before the work and inside its transaction', async () => {
    const count = `SELECT COUNT(*) AS n FROM ${warehouse.dialect.table({ schema, name: 'facts' })}`
    const first = await warehouse.applyWork(work(warehouse.dialect), request())
    expect(Number(first.row?.facts)).toBe(2)
    const second = await warehouse.applyWork(
      work(warehouse.dialect),
      request({ dryRun: true, around: { queries: [count], before: true } }),
    )
    expect(second.around?.before.map((rows) => Number(rows[0]?.n))).toEqual([2])
    expect(second.around?.after.map((rows) => Number(rows[0]?.n))).toEqual([4])
    expect(Number((await warehouse.query(count))[0]?.n)).toBe(2)
  })
})
