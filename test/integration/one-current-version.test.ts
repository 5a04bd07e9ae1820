import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PostgresWarehouse } from '../../lib/adapters/warehouse/postgres-warehouse.ts'
import type { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { CompiledStatement } from '../../lib/core/compiled-sql.ts'
import type { WarehouseTransaction } from '../../lib/ports/warehouse.ts'
import { mergeBatch } from '../../lib/use-cases/merge-batch.ts'
import { MemoryBatches } from '../support/memory-batches.ts'
import { openSmallWarehouse } from '../support/small-warehouse.ts'
import { tableSpec } from '../support/table-spec-builder.ts'
import { dropPostgresSchemas, PG_URL } from './sources/support/db-services.ts'

/*
 * Invariant 2 (docs/invariants.md) checked on what a merge wrote, before it commits: a key the batch touched with
 * more than one current version refuses the batch. Only a defect of dimsync's own statements can leave one (every
 * input is checked before), so the defect is planted: the statement that closes changed current versions is made
 * to close none, as a wrong predicate would. Without the check the merge commits a second current version.
 */
const CLOSE_LABEL = 'close changed current versions'
const closeNone = (sql: string) => `${sql} AND FALSE`
/** The late path's window move marks every version it moves current, instead of those left open. */
const LATE_MOVE_LABEL = 'late keys: move windows of existing versions'
const markMovedCurrent = (sql: string) => {
  const planted = sql.replace(/ = v\.("[^"]+"|`[^`]+`) IS NULL(?=[,\n])/, ' = TRUE')
  if (planted === sql) throw new Error(`the late path's window move changed shape: ${sql}`)
  return planted
}
const COLUMNS: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
]

type Transactional = Pick<DuckDbWarehouse, 'transaction'> & Parameters<typeof mergeBatch>[0]['warehouse']

/** Rewrites the warehouse's statement labelled `label` with `defect` while `planted()` holds. */
function plantDefect(
  warehouse: Transactional,
  label: string,
  defect: (sql: string) => string,
  planted: () => boolean,
): void {
  const transaction = warehouse.transaction.bind(warehouse)
  warehouse.transaction = (work, options) =>
    transaction(
      (tx: WarehouseTransaction) =>
        work({
          query: (sql) => tx.query(sql),
          execute: (statement: CompiledStatement) =>
            tx.execute(
              planted() && statement.label === label
                ? { ...statement, sql: defect(statement.sql) }
                : statement,
            ),
        }),
      options,
    )
}

const warehouses: [
  string,
  () => Promise<{ warehouse: Transactional; schema: string; drop(): Promise<void> }>,
][] = [
  [
    'DuckDB',
    async () => {
      const warehouse = await openSmallWarehouse()
      return { warehouse, schema: 'main', drop: () => warehouse.close() }
    },
  ],
  [
    'PostgreSQL',
    async () => {
      const schema = `dimsync_test_${randomBytes(6).toString('hex')}`
      const warehouse = await PostgresWarehouse.open({ url: PG_URL })
      await warehouse.createSchemaIfMissing(schema)
      return {
        warehouse,
        schema,
        drop: async () => {
          await warehouse.close()
          await dropPostgresSchemas(schema)
        },
      }
    },
  ],
]

let batches: MemoryBatches
beforeAll(async () => {
  batches = await MemoryBatches.create()
})
afterAll(async () => {
  await batches?.dispose()
})

describe.each(warehouses)('on %s, a merge that would leave a key with two current versions', (_, open) => {
  it('is refused naming the key, writes nothing, and merges once the defect is gone', async () => {
    const table = tableSpec({ deletes: 'invalidate' })
    const { warehouse, schema, drop } = await open()
    let planted = true
    plantDefect(warehouse, CLOSE_LABEL, closeNone, () => planted)
    const merge = (batchId: string) =>
      mergeBatch({ warehouse, staging: batches }, { table, schema, batchId, now: new Date() })
    const versions = async () =>
      (
        await warehouse.query(
          `SELECT customer_id, region, is_current FROM ${schema}.${table.target} ORDER BY customer_id, valid_from`,
        )
      ).map((r) => [Number(r.customer_id), r.region, r.is_current])
    try {
      const first = await batches.stage(
        table.name,
        COLUMNS,
        [
          { customer_id: 101, region: 'South' },
          { customer_id: 102, region: 'West' },
        ],
        { extractedAt: '2024-01-01T00:00:00Z' },
      )
      await merge(first)
      const moved = await batches.stage(
        table.name,
        COLUMNS,
        [
          { customer_id: 101, region: 'North' },
          { customer_id: 102, region: 'West' },
          { customer_id: 103, region: 'East' },
        ],
        { extractedAt: '2024-03-01T00:00:00Z' },
      )
      await expect(merge(moved)).rejects.toThrow(
        `table customers: batch ${moved} would leave 1 key with more than one current version, for example: ` +
          'customer_id=101 (2 current versions); nothing was written',
      )
      expect(await versions()).toEqual([
        [101, 'South', true],
        [102, 'West', true],
      ])
      planted = false
      await merge(moved)
      expect(await versions()).toEqual([
        [101, 'South', false],
        [101, 'North', true],
        [102, 'West', true],
        [103, 'East', true],
      ])
    } finally {
      await drop()
    }
  })
  it('in the late path (a late event splits a closed version) is refused the same way', async () => {
    const table = tableSpec({
      deletes: 'invalidate',
      extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
      validFrom: { kind: 'column', column: 'updated_at' },
    })
    const columns: StagedColumn[] = [...COLUMNS, { name: 'updated_at', type: 'TIMESTAMP' }]
    const { warehouse, schema, drop } = await open()
    let planted = true
    plantDefect(warehouse, LATE_MOVE_LABEL, markMovedCurrent, () => planted)
    const load = async (region: string, updated_at: string, extractedAt: string) =>
      mergeBatch(
        { warehouse, staging: batches },
        {
          table,
          schema,
          batchId: await batches.stage(table.name, columns, [{ customer_id: 101, region, updated_at }], {
            extractedAt,
            mode: 'incremental',
          }),
          now: new Date(),
        },
      )
    const versions = async () =>
      (
        await warehouse.query(`SELECT region, is_current FROM ${schema}.${table.target} ORDER BY valid_from`)
      ).map((r) => [r.region, r.is_current])
    try {
      await load('South', '2024-01-01 00:00:00', '2024-01-02T00:00:00Z')
      await load('North', '2024-03-01 00:00:00', '2024-03-02T00:00:00Z')
      const late = () => load('West', '2024-02-01 00:00:00', '2024-03-03T00:00:00Z')
      await expect(late()).rejects.toThrow(
        'would leave 1 key with more than one current version, for example: customer_id=101 (2 current versions); ' +
          'nothing was written',
      )
      expect(await versions()).toEqual([
        ['South', false],
        ['North', true],
      ])
      planted = false
      await late()
      expect(await versions()).toEqual([
        ['South', false],
        ['West', false],
        ['North', true],
      ])
    } finally {
      await drop()
    }
  })
})
