import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import {
  BothWarehouses,
  type MergeOutcome,
  type Paired,
  type PairedDimension,
} from '../support/both-warehouses.ts'
import type { Value } from '../support/staged-batches.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/*
 * Type 1 columns, partial updates and mirror tables on change feeds, on DuckDB and on the BigQuery emulator: each
 * case is a small feed whose stored rows (or refusal) the documentation states. Tracked columns are a and b, n is
 * type 1; times are change times (hours of 2024-01-01), events carry an operation (I/U/D) and, where the feed is
 * sequenced, a sequence.
 */

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const COLUMNS: StagedColumn[] = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'id', type: 'BIGINT' },
  { name: 'a', type: 'VARCHAR' },
  { name: 'b', type: 'VARCHAR' },
  { name: 'n', type: 'BIGINT' },
  { name: 'changed_at', type: 'TIMESTAMP' },
  { name: 'seq', type: 'BIGINT' },
]
const at = (hour: number) => `2024-01-01T${String(hour).padStart(2, '0')}:00:00Z`

interface Event {
  readonly op: 'I' | 'U' | 'D'
  readonly hour: number
  readonly a?: string | null
  readonly b?: string | null
  readonly n?: number | null
  readonly seq?: number
  readonly id?: number
}
const row = (e: Event): Record<string, Value> => ({
  Op: e.op,
  id: e.id ?? 1,
  a: e.a ?? null,
  b: e.b ?? null,
  n: e.n ?? null,
  changed_at: at(e.hour),
  seq: e.seq ?? 0,
})

function feed(overrides: Partial<TableSpec> = {}): TableSpec {
  return tableSpec({
    name: 'feed',
    target: 'dim_feed',
    key: ['id'],
    extract: { mode: 'full' },
    validFrom: { kind: 'column', column: 'changed_at' },
    tracked: { kind: 'list', columns: ['a', 'b'] },
    exclude: ['seq'],
    changes: {
      operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] },
      sequence: 'seq',
    },
    deletes: 'invalidate',
    ...overrides,
  })
}
/** Every version as [id, a, b, n, valid_from hour, is_deleted], in key then valid_from order. */
function versions(table: TableSpec) {
  return (d: SqlDialect, schema: string) => {
    const c = table.columns
    const text = (name: string) => `${d.castToString(d.quoteIdentifier(name))} AS ${d.quoteIdentifier(name)}`
    return (
      `SELECT ${['id', 'a', 'b', 'n', c.validFrom, c.isDeleted, c.surrogateKey].map(text).join(', ')} ` +
      `FROM ${d.table({ schema, name: table.target })} ORDER BY ${d.quoteIdentifier('id')}, ${d.quoteIdentifier(c.validFrom)}`
    )
  }
}

let batchNo = 0
async function load(dimension: PairedDimension, events: readonly Event[]): Promise<Paired<MergeOutcome>> {
  batchNo++
  const outcome = await dimension.load(events.map(row), {
    extractedAt: `2024-02-01T${String(batchNo % 24).padStart(2, '0')}:00:00Z`,
  })
  expect(outcome.bigquery, 'the same outcome on BigQuery').toEqual(outcome.duckdb)
  return outcome
}
async function merged(dimension: PairedDimension, events: readonly Event[]): Promise<void> {
  const outcome = await load(dimension, events)
  for (const o of [outcome.duckdb, outcome.bigquery]) if ('error' in o) throw new Error(o.message)
}

/** The stored versions on DuckDB as [a, b, n, hour, deleted], after checking BigQuery holds the same. */
async function stored(dimension: PairedDimension): Promise<unknown[][]> {
  const { duckdb, bigquery } = await dimension.read(versions(dimension.table))
  expect(bigquery, 'the same rows on BigQuery').toEqual(duckdb)
  return duckdb.map((r) => [
    r.a,
    r.b,
    r.n === null ? null : Number(r.n),
    new Date(String(r.valid_from).replace(' ', 'T').replace(/\+00$/, 'Z')).getUTCHours(),
    r.is_deleted === 'true',
  ])
}

async function withDimension(table: TableSpec, body: (d: PairedDimension) => Promise<void>): Promise<void> {
  const dimension = await both.open(table, COLUMNS)
  try {
    await body(dimension)
  } finally {
    await dimension.close()
  }
}

describe('aliases no column can shadow', () => {
  it('a late event of a table with columns named a and b (aliases the late path writes)', async () => {
    await withDimension(feed(), async (dimension) => {
      await merged(dimension, [{ op: 'I', hour: 5, a: 'x', b: 'p', n: 1 }])
      await merged(dimension, [{ op: 'I', hour: 3, a: 'w', b: 'q', n: 2 }])
      expect(await stored(dimension)).toEqual([
        ['w', 'q', 1, 3, false],
        ['x', 'p', 1, 5, false],
      ])
    })
  })
})
