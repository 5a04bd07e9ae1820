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
const unsequenced = (overrides: Partial<TableSpec> = {}) =>
  feed({
    changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } },
    ...overrides,
  })
const mirror = (deletes: 'ignore' | 'invalidate') =>
  unsequenced({ mode: 'mirror', tracked: { kind: 'list', columns: [] }, deletes })

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

const withDimension = (table: TableSpec, body: (d: PairedDimension) => Promise<void>) =>
  both.withDimension(table, COLUMNS, body)

describe('type 1 columns on change feeds carry the value of the key newest event that is not a delete', () => {
  it('an update then a delete in a later batch: both versions take the update value', async () => {
    await withDimension(feed(), async (dimension) => {
      await merged(dimension, [{ op: 'I', hour: 1, a: 'x', n: 1 }])
      await merged(dimension, [
        { op: 'U', hour: 2, a: 'y', n: 2 },
        { op: 'D', hour: 3 },
      ])
      expect(await stored(dimension)).toEqual([
        ['x', null, 2, 1, false],
        ['y', null, 2, 2, false],
      ])
    })
  })

  it('the same events in one first batch: both versions take the update value', async () => {
    await withDimension(feed(), async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, a: 'x', n: 1 },
        { op: 'U', hour: 2, a: 'y', n: 2 },
        { op: 'D', hour: 3 },
      ])
      expect(await stored(dimension)).toEqual([
        ['x', null, 2, 1, false],
        ['y', null, 2, 2, false],
      ])
    })
  })

  it('a late update before a delete: its value is the newest', async () => {
    await withDimension(feed({ deletes: 'new_record' }), async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, a: 'x', n: 7 },
        { op: 'D', hour: 5 },
      ])
      await merged(dimension, [{ op: 'U', hour: 3, a: 'y', n: 9 }])
      expect(await stored(dimension)).toEqual([
        ['x', null, 9, 1, false],
        ['y', null, 9, 3, false],
        ['y', null, 9, 5, true],
      ])
    })
  })

  it('a sequenced correction of an older change time does not overwrite the newer value', async () => {
    await withDimension(feed(), async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, a: 'x', n: 1, seq: 1 },
        { op: 'U', hour: 2, a: 'y', n: 2, seq: 1 },
      ])
      await merged(dimension, [{ op: 'U', hour: 1, a: 'z', n: 9, seq: 2 }])
      expect(await stored(dimension)).toEqual([
        ['z', null, 2, 1, false],
        ['y', null, 2, 2, false],
      ])
    })
  })
})

describe('type 1 columns: the rule at the edges', () => {
  it('a delete superseding an update at the same change time keeps the update values', async () => {
    await withDimension(feed(), async (dimension) => {
      await merged(dimension, [{ op: 'I', hour: 1, a: 'x', n: 1, seq: 1 }])
      await merged(dimension, [
        { op: 'U', hour: 2, a: 'y', n: 2, seq: 1 },
        { op: 'D', hour: 2, seq: 2 },
      ])
      expect(await stored(dimension)).toEqual([['x', null, 2, 1, false]])
    })
  })

  it('partial updates: a late event refolds a later NULL, whose folded value is the newest', async () => {
    const table = feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['n'] } } })
    await withDimension(table, async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, a: 'x', n: 1 },
        { op: 'U', hour: 5, a: 'y', n: null },
      ])
      expect((await stored(dimension)).map((v) => v[2])).toEqual([1, 1])
      await merged(dimension, [{ op: 'U', hour: 3, a: 'w', n: 3 }])
      expect(await stored(dimension)).toEqual([
        ['x', null, 3, 1, false],
        ['w', null, 3, 3, false],
        ['y', null, 3, 5, false],
      ])
    })
  })
})

describe('partial updates: a delete sent again folds as it did', () => {
  it('an old delete re-delivered beside a later partial row: the row folds into the current state', async () => {
    const table = feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['a', 'b'] } } })
    await withDimension(table, async (dimension) => {
      await merged(dimension, [
        { op: 'D', hour: 1 },
        { op: 'I', hour: 2, a: 'A', b: 'B' },
      ])
      await merged(dimension, [
        { op: 'D', hour: 1 },
        { op: 'U', hour: 3, a: null, b: 'C' },
      ])
      expect(await stored(dimension)).toEqual([
        ['A', 'B', null, 2, false],
        ['A', 'C', null, 3, false],
      ])
    })
  })

  it('a delete that a correction at its change time superseded, sent again beside a later partial row', async () => {
    const table = feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['a', 'b'] } } })
    await withDimension(table, async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, a: 'A', b: 'B' },
        { op: 'D', hour: 3, seq: 0 },
      ])
      await merged(dimension, [{ op: 'U', hour: 3, seq: 1, a: 'A', b: 'B' }])
      await merged(dimension, [
        { op: 'D', hour: 3, seq: 0 },
        { op: 'U', hour: 4, a: null, b: 'C' },
      ])
      expect(await stored(dimension)).toEqual([
        ['A', 'B', null, 1, false],
        ['A', 'C', null, 4, false],
      ])
    })
  })

  it('an old update sent again beside a later partial row lends it none of its values: the row folds into the current state', async () => {
    const table = feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['a', 'b'] } } })
    await withDimension(table, async (dimension) => {
      await merged(dimension, [{ op: 'I', hour: 1, a: 'A', b: 'B' }])
      await merged(dimension, [{ op: 'U', hour: 2, a: 'A2', b: 'B2' }])
      await merged(dimension, [
        { op: 'I', hour: 1, a: 'A', b: 'B' },
        { op: 'U', hour: 3, a: null, b: 'C' },
      ])
      expect(await stored(dimension)).toEqual([
        ['A', 'B', null, 1, false],
        ['A2', 'B2', null, 2, false],
        ['A2', 'C', null, 3, false],
      ])
    })
  })

  it('a captured delete sent again beside a later partial row lends it none of its values: the row starts from nothing', async () => {
    const table = feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['a', 'b'] } } })
    await withDimension(table, async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, a: 'A', b: 'B' },
        { op: 'D', hour: 2, a: 'A', b: 'B' },
      ])
      await merged(dimension, [
        { op: 'D', hour: 2, a: 'A', b: 'B' },
        { op: 'U', hour: 3, a: null, b: 'C' },
      ])
      expect(await stored(dimension)).toEqual([
        ['A', 'B', null, 1, false],
        [null, 'C', null, 3, false],
      ])
    })
  })

  it('a new delete between the current version and a later partial row ends the state', async () => {
    const table = feed({ partialUpdates: { ignoreNulls: { kind: 'list', columns: ['a', 'b'] } } })
    await withDimension(table, async (dimension) => {
      await merged(dimension, [{ op: 'I', hour: 2, a: 'A', b: 'B' }])
      await merged(dimension, [
        { op: 'D', hour: 3 },
        { op: 'U', hour: 4, a: null, b: 'C' },
      ])
      expect(await stored(dimension)).toEqual([
        ['A', 'B', null, 2, false],
        [null, 'C', null, 4, false],
      ])
    })
  })
})

describe('an event sent again at a merged change time with other untracked values is refused', () => {
  const refused = (outcome: Paired<MergeOutcome>) =>
    expect(outcome.duckdb).toMatchObject({
      error: 'BatchRejectedError',
      message: expect.stringMatching(
        /key id=1 already has a different state captured at 2024-01-01 01:00:00\+00 .*nothing was written/,
      ),
    })

  it('history: an event that differs only in a type 1 column', async () => {
    await withDimension(unsequenced(), async (dimension) => {
      await merged(dimension, [{ op: 'I', hour: 1, a: 'x', n: 1 }])
      const before = await stored(dimension)
      refused(await load(dimension, [{ op: 'U', hour: 1, a: 'x', n: 5 }]))
      expect(await stored(dimension)).toEqual(before)
      // The same event again is re-delivered, not refused.
      await merged(dimension, [{ op: 'I', hour: 1, a: 'x', n: 1 }])
      expect(await stored(dimension)).toEqual(before)
    })
  })

  it('history, sequenced: an event that differs only in a type 1 column at the same sequence', async () => {
    await withDimension(feed(), async (dimension) => {
      await merged(dimension, [{ op: 'I', hour: 1, a: 'x', n: 1, seq: 3 }])
      refused(await load(dimension, [{ op: 'I', hour: 1, a: 'x', n: 5, seq: 3 }]))
      expect(await stored(dimension)).toEqual([['x', null, 1, 1, false]])
    })
  })

  it.each(['ignore', 'invalidate'] as const)('mirror (deletes: %s): a changed event', async (deletes) => {
    await withDimension(mirror(deletes), async (dimension) => {
      await merged(dimension, [
        { op: 'I', hour: 1, a: 'x', n: 1 },
        { op: 'U', hour: 2, a: 'y', n: 2 },
      ])
      expect(await stored(dimension)).toEqual([['y', null, 2, 1, false]])
      refused(await load(dimension, [{ op: 'U', hour: 1, a: 'z', n: 1 }]))
      expect(await stored(dimension)).toEqual([['y', null, 2, 1, false]])
      await merged(dimension, [{ op: 'I', hour: 1, a: 'x', n: 1 }])
      expect(await stored(dimension)).toEqual([['y', null, 2, 1, false]])
    })
  })
})

describe('mirror: a snapshot sent again', () => {
  // (A mirror refuses deletes: new_record.)
  it.each(['ignore', 'invalidate'] as const)(
    'deletes: %s: an older snapshot sent again unchanged changes nothing; changed, it is refused',
    async (deletes) => {
      const table = tableSpec({
        name: 'lookup',
        target: 'dim_lookup',
        key: ['id'],
        mode: 'mirror',
        tracked: { kind: 'list', columns: [] },
        deletes,
      })
      const columns: StagedColumn[] = [
        { name: 'id', type: 'BIGINT' },
        { name: 'a', type: 'VARCHAR' },
      ]
      const dimension = await both.open(table, columns)
      const snapshot = (extractedAt: string, rows: Record<string, Value>[]) =>
        dimension.load(rows, { extractedAt, allowMassDelete: true })
      const s0 = [
        { id: 1, a: 'x' },
        { id: 2, a: 'y' },
      ]
      const read = (d: SqlDialect, schema: string) =>
        `SELECT ${['id', 'a', table.columns.surrogateKey].map((c) => `${d.castToString(d.quoteIdentifier(c))} AS ${d.quoteIdentifier(c)}`).join(', ')} ` +
        `FROM ${d.table({ schema, name: table.target })} ORDER BY 1`
      try {
        const merge = async (extractedAt: string, rows: Record<string, Value>[]) => {
          const outcome = await snapshot(extractedAt, rows)
          for (const o of [outcome.duckdb, outcome.bigquery]) if ('error' in o) throw new Error(o.message)
          const held = await dimension.read(read)
          expect(held.bigquery).toEqual(held.duckdb)
          return held
        }
        const first = await merge('2024-01-01T00:00:00Z', s0)
        const before = await merge('2024-01-04T00:00:00Z', [{ id: 1, a: 'z' }])
        // The update overwrote key 1's row in place (docs/concepts.md, table modes).
        expect(before.duckdb[0]).toEqual({ ...first.duckdb[0], a: 'z' })

        const again = await snapshot('2024-01-01T00:00:00Z', s0)
        expect(again.bigquery).toEqual(again.duckdb)
        expect(again.duckdb).toMatchObject({ status: 'already-applied' })
        expect(await dimension.read(read)).toEqual(before)

        const changed = await snapshot('2024-01-01T00:00:00Z', [...s0, { id: 3, a: 'w' }])
        expect(changed.bigquery).toEqual(changed.duckdb)
        expect(changed.duckdb).toMatchObject({
          message: expect.stringContaining('a different snapshot at that extraction time is already merged'),
        })
        expect(await dimension.read(read)).toEqual(before)
      } finally {
        await dimension.close()
      }
    },
  )
})

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
