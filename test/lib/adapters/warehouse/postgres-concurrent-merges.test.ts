import { randomBytes } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { PostgresWarehouse } from '../../../../lib/adapters/warehouse/postgres-warehouse.ts'
import type { StagedColumn } from '../../../../lib/core/batch.ts'
import type { Row } from '../../../../lib/ports/warehouse.ts'
import { DimsyncError } from '../../../../lib/core/errors.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import { PG_URL, dropPostgresSchemas } from '../../../integration/sources/support/db-services.ts'
import { TestBatches } from '../../../support/staged-batches.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

/**
 * Two dimsync installations (two machines, two copies of a project: each with its own state, so no lease between
 * them) merging into one PostgreSQL dimension at the same time. Nothing in dimsync's state serializes them: the
 * warehouse must, or both close the same current version and each inserts its own (two current versions of a
 * key, exit 0).
 */
const COLUMNS: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
]
const KEYS = 2_000
const table = tableSpec({ deletes: 'invalidate' })
const snapshot = (region: (k: number) => string) =>
  Array.from({ length: KEYS }, (_, i) => ({ customer_id: i + 1, region: region(i + 1) }))

let schema: string
let batches: TestBatches
let warehouses: PostgresWarehouse[]

beforeEach(async () => {
  schema = `dimsync_concurrent_${randomBytes(5).toString('hex')}`
  batches = await TestBatches.create()
  warehouses = [await PostgresWarehouse.open({ url: PG_URL }), await PostgresWarehouse.open({ url: PG_URL })]
  await warehouses[0]!.createSchemaIfMissing(schema)
})
afterEach(async () => {
  for (const w of warehouses) await w.close()
  await batches.dispose()
  await dropPostgresSchemas(schema)
})

async function merge(warehouse: PostgresWarehouse, batchId: string, at: string) {
  return mergeBatch(
    { warehouse, staging: batches },
    { table, schema, batchId, now: new Date(at), allowMassDelete: true },
  )
}

async function versions(warehouse: PostgresWarehouse): Promise<Row[]> {
  return warehouse.query(
    `SELECT customer_id, region, CAST(valid_from AS text) AS valid_from, CAST(valid_to AS text) AS valid_to, ` +
      `is_current FROM ${warehouse.dialect.table({ schema, name: table.target })} ORDER BY customer_id, valid_from`,
  )
}

const month = (m: number) => `2024-${String(m).padStart(2, '0')}-01 00:00:00`
/** A window's bound as PostgreSQL's text of the stored timestamptz. */
const stored = (m: number) => `${month(m)}+00`

/**
 * Merges one snapshot per installation at once, each of month `m` with region `R<m>`. Each must either land or
 * refuse with a DimsyncError naming the table (a snapshot older than one merged before it is refused): never land
 * wrong. Answers the months that landed.
 */
async function race(months: readonly number[]): Promise<number[]> {
  const staged = await Promise.all(
    months.map((m) =>
      batches.stage(
        table.name,
        COLUMNS,
        snapshot(() => `R${m}`),
        {
          extractedAt: `${month(m).replace(' ', 'T')}Z`,
          mode: 'full',
        },
      ),
    ),
  )
  const outcomes = await Promise.allSettled(
    staged.map((batchId, i) => merge(warehouses[i]!, batchId, `${month(months[i]!).replace(' ', 'T')}Z`)),
  )
  const landed: number[] = []
  for (const [i, outcome] of outcomes.entries()) {
    if (outcome.status === 'fulfilled') {
      expect(outcome.value.status).toBe('merged')
      landed.push(months[i]!)
    } else {
      expect(outcome.reason, String(outcome.reason)).toBeInstanceOf(DimsyncError)
      expect(String(outcome.reason)).toContain(table.name)
    }
  }
  expect(landed.length, 'at least one of the racing merges lands').toBeGreaterThan(0)
  return landed
}

/** Every key holds one version per landed month, each until the next: one current version per key. */
async function expectHistory(landed: readonly number[]): Promise<void> {
  const months = [...landed].sort((a, b) => a - b)
  const rows = await versions(warehouses[0]!)
  const current = rows.filter((r) => r.is_current === true)
  expect(current.length, 'one current version per key').toBe(KEYS)
  expect(rows.length, 'versions').toBe(months.length * KEYS)
  expect(rows.slice(0, months.length).map((r) => [r.region, r.valid_from, r.valid_to])).toEqual(
    months.map((m, i) => [`R${m}`, stored(m), i === months.length - 1 ? null : stored(months[i + 1]!)]),
  )
}

describe('merges of one PostgreSQL dimension from two installations at once (real PostgreSQL)', () => {
  it('first loads: one founds the dimension; the other lands after it or is refused', async () => {
    await expectHistory(await race([1, 2]))
  })

  it('later snapshots: applied one after the other (an older one refused), one current version per key', async () => {
    const landed = await race([1])
    for (let m = 2; m <= 10; m += 2) {
      landed.push(...(await race([m, m + 1])))
      await expectHistory(landed)
    }
  })
})
