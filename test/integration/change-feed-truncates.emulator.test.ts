import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { ChangeFeedSpec, TableSpec } from '../../lib/core/table-spec.ts'
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
 * Truncates in a change feed (ops.truncate), on DuckDB and on the BigQuery emulator: a truncate event (T, no key)
 * closes every key that has a state at its change time, as a delete of each key would. Times are hours of
 * 2024-01-01.
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
  { name: 'changed_at', type: 'TIMESTAMP' },
  { name: 'seq', type: 'BIGINT' },
]
const at = (hour: number) => `2024-01-01T${String(hour).padStart(2, '0')}:00:00Z`

interface Event {
  readonly op: string
  readonly hour: number
  readonly id?: number
  readonly a?: string
  readonly seq?: number
}
const row = (e: Event): Record<string, Value> => ({
  Op: e.op,
  id: e.id ?? null,
  a: e.a ?? null,
  changed_at: at(e.hour),
  seq: e.seq ?? 0,
})

const OPS: ChangeFeedSpec['operation'] = {
  column: 'Op',
  insert: ['I'],
  update: ['U'],
  delete: ['D'],
  truncate: ['T'],
}
function feed(overrides: Partial<TableSpec> = {}, sequenced = false): TableSpec {
  return tableSpec({
    name: 'feed',
    target: 'dim_feed',
    key: ['id'],
    extract: { mode: 'full' },
    validFrom: { kind: 'column', column: 'changed_at' },
    tracked: { kind: 'list', columns: ['a'] },
    changes: { operation: OPS, ...(sequenced ? { sequence: 'seq' } : {}) },
    deletes: 'invalidate',
    ...overrides,
  })
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

/** Every version as [id, a, from hour, to hour (null: open), deleted], after checking BigQuery holds the same. */
async function stored(dimension: PairedDimension): Promise<unknown[][]> {
  const table = dimension.table
  const c = table.columns
  const select = (d: SqlDialect, schema: string) => {
    const text = (name: string) => `${d.castToString(d.quoteIdentifier(name))} AS ${d.quoteIdentifier(name)}`
    return (
      `SELECT ${['id', 'a', c.validFrom, c.validTo, c.isDeleted].map(text).join(', ')} ` +
      `FROM ${d.table({ schema, name: table.target })} ORDER BY ${d.quoteIdentifier('id')}, ${d.quoteIdentifier(c.validFrom)}`
    )
  }
  const { duckdb, bigquery } = await dimension.read(select)
  expect(bigquery, 'the same rows on BigQuery').toEqual(duckdb)
  const hour = (v: unknown) =>
    v === null || String(v).startsWith('9999')
      ? null
      : new Date(String(v).replace(' ', 'T').replace(/\+00$/, 'Z')).getUTCHours()
  return duckdb.map((r) => [
    Number(r.id),
    r.a,
    hour(r[c.validFrom]),
    hour(r[c.validTo]),
    r[c.isDeleted] === 'true',
  ])
}

const withDimension = (table: TableSpec, body: (d: PairedDimension) => Promise<void>) =>
  both.withDimension(table, COLUMNS, body)

describe('ops.truncate: a truncate closes every current version at its change time', () => {
  it('in the batch of the keys: those with a state then are closed, a key first inserted after it is not', async () => {
    await withDimension(feed(), async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, id: 1, a: 'x' },
        { op: 'I', hour: 1, id: 2, a: 'y' },
        { op: 'T', hour: 3 },
        { op: 'I', hour: 4, id: 3, a: 'z' },
      ])
      expect(await stored(dimension)).toEqual([
        [1, 'x', 1, 3, false],
        [2, 'y', 1, 3, false],
        [3, 'z', 4, null, false],
      ])
    })
  })

  it('in a later batch: the dimension keys are closed, a key deleted before stays as it was, a key inserted again after reopens', async () => {
    await withDimension(feed(), async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, id: 1, a: 'x' },
        { op: 'I', hour: 1, id: 2, a: 'y' },
        { op: 'D', hour: 2, id: 2 },
      ])
      await merged(dimension, [
        { op: 'T', hour: 3 },
        { op: 'I', hour: 5, id: 1, a: 'w' },
      ])
      expect(await stored(dimension)).toEqual([
        [1, 'x', 1, 3, false],
        [1, 'w', 5, null, false],
        [2, 'y', 1, 2, false],
      ])
      // A late update of key 1 before the truncate is slotted in, and still ends at the truncate.
      await merged(dimension, [{ op: 'U', hour: 2, id: 1, a: 'v' }])
      expect(await stored(dimension)).toEqual([
        [1, 'x', 1, 2, false],
        [1, 'v', 2, 3, false],
        [1, 'w', 5, null, false],
        [2, 'y', 1, 2, false],
      ])
    })
  })

  it('a key first seen after the truncate was merged, with events before it, is ended by it too', async () => {
    await withDimension(feed(), async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, id: 1, a: 'x' },
        { op: 'T', hour: 3 },
      ])
      // Key 2 lived from hour 2 in the source and was truncated with the rest at hour 3; its insert arrives late.
      await merged(dimension, [{ op: 'I', hour: 2, id: 2, a: 'y' }])
      // Key 3's insert and update both precede the truncate; key 4 lived on after it.
      await merged(dimension, [
        { op: 'I', hour: 1, id: 3, a: 'p' },
        { op: 'U', hour: 2, id: 3, a: 'q' },
        { op: 'I', hour: 4, id: 4, a: 'r' },
      ])
      expect(await stored(dimension)).toEqual([
        [1, 'x', 1, 3, false],
        [2, 'y', 2, 3, false],
        [3, 'p', 1, 2, false],
        [3, 'q', 2, 3, false],
        [4, 'r', 4, null, false],
      ])
      // The same late insert again changes nothing.
      await merged(dimension, [{ op: 'I', hour: 2, id: 2, a: 'y' }])
      expect((await stored(dimension))[1]).toEqual([2, 'y', 2, 3, false])
    })
  })

  it('under deletes: new_record a truncate opens a version flagged deleted for each live key', async () => {
    await withDimension(feed({ deletes: 'new_record' }), async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, id: 1, a: 'x' },
        { op: 'I', hour: 1, id: 2, a: 'y' },
        { op: 'D', hour: 2, id: 2 },
      ])
      await merged(dimension, [{ op: 'T', hour: 3 }])
      expect(await stored(dimension)).toEqual([
        [1, 'x', 1, 3, false],
        [1, 'x', 3, null, true],
        [2, 'y', 1, 2, false],
        [2, 'y', 2, null, true],
      ])
    })
  })

  it('under deletes: ignore a truncate closes nothing', async () => {
    await withDimension(feed({ deletes: 'ignore' }), async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, id: 1, a: 'x' },
        { op: 'T', hour: 3 },
      ])
      expect(await stored(dimension)).toEqual([[1, 'x', 1, null, false]])
    })
  })

  it('sequenced: an insert at the truncate time after it (a higher sequence) survives it, one before it does not', async () => {
    await withDimension(feed({}, true), async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, id: 1, a: 'x', seq: 1 },
        { op: 'U', hour: 3, id: 1, a: 'y', seq: 2 },
        { op: 'T', hour: 3, seq: 3 },
        { op: 'I', hour: 3, id: 2, a: 'z', seq: 4 },
      ])
      expect(await stored(dimension)).toEqual([
        [1, 'x', 1, 3, false],
        [2, 'z', 3, null, false],
      ])
      // Arriving in later batches, by the truncate's sequence: key 3's insert before it is ended by it, key 4's
      // insert at the same time after it is not.
      await merged(dimension, [{ op: 'I', hour: 3, id: 3, a: 'p', seq: 2 }])
      await merged(dimension, [{ op: 'I', hour: 3, id: 4, a: 'q', seq: 5 }])
      expect(await stored(dimension)).toEqual([
        [1, 'x', 1, 3, false],
        [2, 'z', 3, null, false],
        [4, 'q', 3, null, false],
      ])
    })
  })

  it('merging the batch again changes nothing', async () => {
    await withDimension(feed(), async (dimension) => {
      const events = [
        { op: 'I', hour: 1, id: 1, a: 'x' },
        { op: 'T', hour: 3 },
      ]
      await merged(dimension, events)
      const before = await stored(dimension)
      await merged(dimension, events)
      expect(await stored(dimension)).toEqual(before)
    })
  })
})

describe('an operation value named nowhere', () => {
  it('refuses the batch naming the value, the key and the way out', async () => {
    await withDimension(feed(), async (dimension) => {
      const outcome = await load(dimension, [
        { op: 'I', hour: 1, id: 1, a: 'x' },
        { op: 'X', hour: 2, id: 1, a: 'y' },
      ])
      expect(outcome.duckdb).toMatchObject({
        message: expect.stringContaining(
          'events whose operation (column Op) is NULL or not one of I, U, D, for example key id=1 with Op X; ' +
            'nothing was written. Say what the value means in extract.ops (insert, update, delete or truncate), ' +
            'or skip its rows with ops.ignore',
        ),
      })
    })
  })
})
