import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import { planDimensionLayout } from '../../lib/core/dimension-layout.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { dimensionObjects } from '../../lib/sql/render-ddl.ts'
import { renderFeedPlanQuery } from '../../lib/sql/render-feed-plan.ts'
import { mergeBatch } from '../../lib/use-cases/merge-batch.ts'
import { BothWarehouses } from '../support/both-warehouses.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/*
 * What `dimsync plan` reads of a change feed's batch (render-feed-plan.ts) gives the same counts on DuckDB and on
 * the BigQuery emulator: events, keys touched, delete and truncate events, and corrections at a change time
 * already captured (by an earlier batch) or held by an earlier event of the batch.
 */

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const table = tableSpec({
  name: 'feed',
  target: 'dim_feed',
  key: ['id'],
  validFrom: { kind: 'column', column: 'changed_at' },
  changes: {
    operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'], truncate: ['T'] },
    sequence: 'seq',
  },
  deletes: 'invalidate',
})
const COLUMNS: StagedColumn[] = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'seq', type: 'BIGINT' },
  { name: 'changed_at', type: 'TIMESTAMP' },
  { name: 'id', type: 'BIGINT' },
  { name: 'a', type: 'VARCHAR' },
]
const hour = (h: number) => `2024-01-01T${String(h).padStart(2, '0')}:00:00Z`
type Event = [op: string, seq: number, hour: number, id: number | null, a: string | null]

/** A table of `events` in schema `schema`, built with `d`'s literals. */
function stageTable(d: SqlDialect, schema: string, events: readonly Event[]): string {
  const rows = events.map(
    ([op, seq, h, id, a]) =>
      `SELECT ${d.stringLiteral(op)} AS ${d.quoteIdentifier('Op')}, CAST(${seq} AS ${d.type('int64')}) AS seq, ` +
      `${d.timestampLiteral(hour(h))} AS changed_at, CAST(${id ?? 'NULL'} AS ${d.type('int64')}) AS id, ` +
      `CAST(${a === null ? 'NULL' : d.stringLiteral(a)} AS ${d.type('string')}) AS a`,
  )
  return `CREATE TABLE ${d.table({ schema, name: 'feed_stage' })} AS\n${rows.join('\nUNION ALL\n')}`
}

describe('the counts dimsync plan reads of a change feed', () => {
  it('are the same on DuckDB and BigQuery, and count corrections against captures and earlier events', async () => {
    const dimension = await both.open(table, COLUMNS)
    try {
      const first = await dimension.load(
        [
          { Op: 'I', seq: 1, changed_at: hour(1), id: 1, a: 'x' },
          { Op: 'I', seq: 2, changed_at: hour(1), id: 2, a: 'y' },
        ],
        { extractedAt: '2024-02-01T00:00:00Z' },
      )
      expect(first.duckdb).toMatchObject({ status: 'merged' })
      const events: Event[] = [
        ['U', 3, 1, 1, 'x2'], // corrects key 1 at 1h (captured with seq 1)
        ['U', 4, 2, 2, 'y2'],
        ['U', 5, 2, 2, 'y3'], // corrects the event before it (same key and time, seq 4)
        ['D', 6, 3, 1, null],
        ['I', 7, 3, 3, 'z'],
        ['T', 8, 4, null, null],
      ]
      const counts = await Promise.all(
        (['duckdb', 'bigquery'] as const).map(async (side) => {
          const warehouse = dimension.warehouses[side]
          const d = warehouse.dialect
          const schema = dimension.schemaOf(side)
          await warehouse.query(stageTable(d, schema, events))
          const plan = {
            table,
            layout: planDimensionLayout(table, 'b2', COLUMNS, undefined),
            objects: dimensionObjects(table, schema),
            batchId: 'b2',
            extractedAt: '2024-02-02T00:00:00Z',
            appliedAt: '2024-02-02T00:00:00Z',
            mode: 'full' as const,
            allowMassDelete: false,
            stage: { schema, name: 'feed_stage' },
          }
          const [row] = await warehouse.query(renderFeedPlanQuery(d, plan, true))
          return Object.fromEntries(Object.entries(row!).map(([k, v]) => [k, Number(v)]))
        }),
      )
      expect(counts[1], 'the same counts on BigQuery').toEqual(counts[0])
      expect(counts[0]).toEqual({
        events: 6,
        keys_touched: 3,
        delete_events: 1,
        truncate_events: 1,
        corrections: 2,
      })
    } finally {
      await dimension.close()
    }
  })

  it('a dry-run merge reports them on both warehouses (BigQuery prices its script instead of running it)', async () => {
    const dimension = await both.open(table, COLUMNS)
    try {
      await dimension.load([{ Op: 'I', seq: 1, changed_at: hour(1), id: 1, a: 'x' }], {
        extractedAt: '2024-02-01T00:00:00Z',
      })
      const batchId = await dimension.stage(
        [
          { Op: 'U', seq: 2, changed_at: hour(1), id: 1, a: 'x2' },
          { Op: 'I', seq: 3, changed_at: hour(2), id: 2, a: 'y' },
          { Op: 'D', seq: 4, changed_at: hour(3), id: 2, a: null },
        ],
        { extractedAt: '2024-02-02T00:00:00Z' },
      )
      for (const side of ['duckdb', 'bigquery'] as const) {
        const result = await mergeBatch(
          { warehouse: dimension.warehouses[side], staging: both.batches },
          {
            table,
            schema: dimension.schemaOf(side),
            batchId,
            now: new Date('2030-01-01T00:00:00Z'),
            dryRun: true,
          },
        )
        expect(result.status, side).toBe('dry-run')
        expect(result.feed, side).toEqual({
          events: 3,
          keysTouched: 2,
          deleteEvents: 1,
          truncateEvents: 0,
          corrections: 1,
        })
      }
    } finally {
      await dimension.close()
    }
  })
})
