import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { ChangeDetectionSpec, TableSpec } from '../../lib/core/table-spec.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import {
  BothWarehouses,
  PairedDimension,
  type MergeOutcome,
  type Paired,
} from '../support/both-warehouses.ts'
import type { Value } from '../support/staged-batches.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/*
 * change_detection: { version_column } on DuckDB and the BigQuery emulator: a snapshot whose versions start at
 * the extraction time, and a delta whose valid_from is the version column itself. Extraction times are days of
 * February; version values are hours of 2024-01-01.
 */

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const hour = (h: number) => `2024-01-01T${String(h).padStart(2, '0')}:00:00Z`
const day = (d: number) => `2024-02-${String(d).padStart(2, '0')}T00:00:00Z`

const COLUMNS: StagedColumn[] = [
  { name: 'id', type: 'BIGINT' },
  { name: 'a', type: 'VARCHAR' },
  { name: 'updated_at', type: 'TIMESTAMP' },
]

function snapshotTable(onSameVersion: ChangeDetectionSpec['onSameVersion']): TableSpec {
  return tableSpec({
    name: 'snap',
    target: 'dim_snap',
    key: ['id'],
    changeDetection: { versionColumn: 'updated_at', onSameVersion },
  })
}

function deltaTable(onSameVersion: ChangeDetectionSpec['onSameVersion']): TableSpec {
  return tableSpec({
    name: 'delta',
    target: 'dim_delta',
    key: ['id'],
    extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
    validFrom: { kind: 'column', column: 'updated_at' },
    changeDetection: { versionColumn: 'updated_at', onSameVersion },
  })
}

const withDimension = (table: TableSpec, body: (d: PairedDimension) => Promise<void>) =>
  both.withDimension(table, COLUMNS, body)

async function load(
  dimension: PairedDimension,
  rows: readonly Record<string, Value>[],
  extractedAt: string,
): Promise<Paired<MergeOutcome>> {
  const mode = dimension.table.extract.mode
  const outcome = await dimension.load(rows, { extractedAt, mode })
  expect(outcome.bigquery, 'the same outcome on BigQuery').toEqual(outcome.duckdb)
  return outcome
}

async function merged(dimension: PairedDimension, rows: readonly Record<string, Value>[], at: string) {
  const outcome = await load(dimension, rows, at)
  if ('error' in outcome.duckdb) throw new Error(outcome.duckdb.message)
}

/** The refusal's message (the same on both warehouses). */
async function refused(dimension: PairedDimension, rows: readonly Record<string, Value>[], at: string) {
  const outcome = await load(dimension, rows, at)
  if (!('error' in outcome.duckdb))
    throw new Error(`expected a refusal, got ${JSON.stringify(outcome.duckdb)}`)
  return outcome.duckdb.message
}

/**
 * Every version as [id, a, updated_at hour, valid_from, valid_to (null: open)], equal on both warehouses;
 * updated_at left out where it is the valid_from column (not stored again).
 */
async function stored(dimension: PairedDimension): Promise<unknown[][]> {
  const storesVersion = dimension.table.validFrom.kind === 'extracted_at'
  const table = dimension.table
  const c = table.columns
  const select = (d: SqlDialect, schema: string) => {
    const text = (name: string) => `${d.castToString(d.quoteIdentifier(name))} AS ${d.quoteIdentifier(name)}`
    return (
      `SELECT ${['id', 'a', ...(storesVersion ? ['updated_at'] : []), c.validFrom, c.validTo].map(text).join(', ')} ` +
      `FROM ${d.table({ schema, name: table.target })} ORDER BY ${d.quoteIdentifier('id')}, ${d.quoteIdentifier(c.validFrom)}`
    )
  }
  const { duckdb, bigquery } = await dimension.read(select)
  expect(bigquery, 'the same rows on BigQuery').toEqual(duckdb)
  const time = (v: unknown) => (v === null ? null : String(v).slice(0, 13).replace(' ', 'T'))
  return duckdb.map((r) => [
    Number(r.id),
    r.a,
    ...(storesVersion ? [time(r.updated_at)] : []),
    time(r[c.validFrom]),
    time(r[c.validTo]),
  ])
}

describe('change_detection: { version_column } on a snapshot', () => {
  it('opens a version when the version column grows; refuses a change at the same version, naming key, column and values', async () => {
    await withDimension(snapshotTable('refuse'), async (dimension) => {
      await merged(
        dimension,
        [
          { id: 1, a: 'x', updated_at: hour(1) },
          { id: 2, a: 'y', updated_at: hour(1) },
        ],
        day(1),
      )
      await merged(
        dimension,
        [
          { id: 1, a: 'x2', updated_at: hour(2) },
          { id: 2, a: 'y', updated_at: hour(1) },
        ],
        day(2),
      )
      const before = await stored(dimension)
      expect(before).toEqual([
        [1, 'x', '2024-01-01T01', '2024-02-01T00', '2024-02-02T00'],
        [1, 'x2', '2024-01-01T02', '2024-02-02T00', null],
        [2, 'y', '2024-01-01T01', '2024-02-01T00', null],
      ])
      const message = await refused(
        dimension,
        [
          { id: 1, a: 'x2', updated_at: hour(2) },
          { id: 2, a: 'z', updated_at: hour(1) },
        ],
        day(3),
      )
      expect(message).toContain('table snap')
      expect(message).toContain('key id=2')
      expect(message).toContain('version column updated_at is 2024-01-01 01:00:00')
      expect(message).toContain('on_same_version: overwrite')
      expect(await stored(dimension)).toEqual(before)
    })
  })

  it('on_same_version: overwrite writes the new content into the version in place; no version opens', async () => {
    await withDimension(snapshotTable('overwrite'), async (dimension) => {
      await merged(dimension, [{ id: 1, a: 'x', updated_at: hour(1) }], day(1))
      await merged(dimension, [{ id: 1, a: 'x-fixed', updated_at: hour(1) }], day(2))
      expect(await stored(dimension)).toEqual([[1, 'x-fixed', '2024-01-01T01', '2024-02-01T00', null]])
      // Idempotent: the same row again changes nothing; a grown version column then opens a version.
      await merged(dimension, [{ id: 1, a: 'x-fixed', updated_at: hour(1) }], day(3))
      await merged(dimension, [{ id: 1, a: 'x-fixed', updated_at: hour(5) }], day(4))
      expect(await stored(dimension)).toEqual([
        [1, 'x-fixed', '2024-01-01T01', '2024-02-01T00', '2024-02-04T00'],
        [1, 'x-fixed', '2024-01-01T05', '2024-02-04T00', null],
      ])
    })
  })

  it('refuses a version column that goes backwards, whatever on_same_version says', async () => {
    for (const choice of ['refuse', 'overwrite'] as const) {
      await withDimension(snapshotTable(choice), async (dimension) => {
        await merged(dimension, [{ id: 7, a: 'x', updated_at: hour(3) }], day(1))
        const message = await refused(dimension, [{ id: 7, a: 'older', updated_at: hour(2) }], day(2))
        expect(message).toMatch(
          /table snap.*key id=7: version column updated_at is 2024-01-01 03:00:00.* then 2024-01-01 02:00:00.*went backwards/,
        )
        expect(await stored(dimension)).toEqual([[7, 'x', '2024-01-01T03', '2024-02-01T00', null]])
      })
    }
  })

  it('refuses a NULL version column', async () => {
    await withDimension(snapshotTable('refuse'), async (dimension) => {
      const message = await refused(dimension, [{ id: 4, a: 'x', updated_at: null }], day(1))
      expect(message).toContain('NULL version column (updated_at), for example key id=4')
    })
  })
})

describe('change_detection: { version_column } on a delta whose valid_from is the version column', () => {
  it('a row changed without a new updated_at is overwritten in place (overwrite) or refused (refuse)', async () => {
    await withDimension(deltaTable('overwrite'), async (dimension) => {
      await merged(dimension, [{ id: 1, a: 'x', updated_at: hour(1) }], day(1))
      await merged(dimension, [{ id: 1, a: 'y', updated_at: hour(4) }], day(2))
      await merged(dimension, [{ id: 1, a: 'x-fixed', updated_at: hour(1) }], day(3))
      expect(await stored(dimension)).toEqual([
        [1, 'x-fixed', '2024-01-01T01', '2024-01-01T04'],
        [1, 'y', '2024-01-01T04', null],
      ])
      // A late row between them slots in; its captures agree with the overwritten version.
      await merged(dimension, [{ id: 1, a: 'x-fixed', updated_at: hour(2) }], day(4))
      await merged(dimension, [{ id: 1, a: 'z', updated_at: hour(3) }], day(5))
      expect(await stored(dimension)).toEqual([
        [1, 'x-fixed', '2024-01-01T01', '2024-01-01T03'],
        [1, 'z', '2024-01-01T03', '2024-01-01T04'],
        [1, 'y', '2024-01-01T04', null],
      ])
    })
    await withDimension(deltaTable('refuse'), async (dimension) => {
      await merged(dimension, [{ id: 1, a: 'x', updated_at: hour(1) }], day(1))
      const message = await refused(dimension, [{ id: 1, a: 'x-fixed', updated_at: hour(1) }], day(2))
      expect(message).toContain('key id=1: version column updated_at is 2024-01-01 01:00:00')
      expect(await stored(dimension)).toEqual([[1, 'x', '2024-01-01T01', null]])
    })
  })
})

describe('change_detection and the table contract', () => {
  it('adding version_column (the cursor of a delta) is a safe change: the cursor becomes tracked, current versions are rehashed once, no version opens', async () => {
    const plain = tableSpec({
      name: 'cur',
      target: 'dim_cur',
      key: ['id'],
      extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
    })
    const dimension = await both.open(plain, COLUMNS)
    try {
      await dimension.load([{ id: 1, a: 'x', updated_at: hour(1) }], { extractedAt: day(1) })
      const versioned = new PairedDimension(
        { ...plain, changeDetection: { versionColumn: 'updated_at', onSameVersion: 'refuse' } },
        COLUMNS,
        both,
        dimension.warehouses,
        dimension.emulator,
      )
      await merged(versioned, [{ id: 1, a: 'x', updated_at: hour(1) }], day(2))
      expect(await stored(versioned)).toEqual([[1, 'x', '2024-01-01T01', '2024-02-01T00', null]])
      const contracts = await versioned.read(
        (d, schema) =>
          `SELECT contract FROM ${d.table({ schema, name: '_dimsync_batches' })} WHERE contract IS NOT NULL ORDER BY applied_at`,
      )
      expect(contracts.bigquery).toEqual(contracts.duckdb)
      const last = JSON.parse(String(contracts.duckdb.at(-1)!.contract)) as Record<string, unknown>
      expect(last).toMatchObject({
        tracked: ['a', 'updated_at'],
        changeDetection: { versionColumn: 'updated_at', onSameVersion: 'refuse' },
      })
      // The contract now holds: a changed row at the same updated_at is refused; a grown one opens a version.
      expect(await refused(versioned, [{ id: 1, a: 'y', updated_at: hour(1) }], day(3))).toContain(
        'key id=1: version column updated_at is 2024-01-01 01:00:00',
      )
      await merged(versioned, [{ id: 1, a: 'x', updated_at: hour(2) }], day(4))
      expect(await stored(versioned)).toEqual([
        [1, 'x', '2024-01-01T01', '2024-02-01T00', '2024-02-04T00'],
        [1, 'x', '2024-01-01T02', '2024-02-04T00', null],
      ])
    } finally {
      await dimension.close()
    }
  })
})

describe('change_detection with a version column apart from the change time', () => {
  const table = tableSpec({
    name: 'rv',
    target: 'dim_rv',
    key: ['id'],
    extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
    validFrom: { kind: 'column', column: 'changed_at' },
    changeDetection: { versionColumn: 'rv', onSameVersion: 'overwrite' },
  })
  const columns: StagedColumn[] = [
    { name: 'id', type: 'BIGINT' },
    { name: 'a', type: 'VARCHAR' },
    { name: 'rv', type: 'BIGINT' },
    { name: 'changed_at', type: 'TIMESTAMP' },
  ]

  it('a later row at the same version overwrites it; two rows of a batch, or a late row, at one version with different content are refused', async () => {
    const dimension = await both.open(table, columns)
    try {
      await merged(dimension, [{ id: 1, a: 'x', rv: 1, changed_at: hour(1) }], day(1))
      await merged(dimension, [{ id: 1, a: 'x-fixed', rv: 1, changed_at: hour(2) }], day(2))
      const rows = await dimension.read(
        (d, schema) =>
          `SELECT ${d.castToString('a')} AS a, ${d.castToString('rv')} AS rv FROM ${d.table({ schema, name: 'dim_rv' })}`,
      )
      expect(rows.bigquery).toEqual(rows.duckdb)
      expect(rows.duckdb).toEqual([{ a: 'x-fixed', rv: '1' }])
      const twoInBatch = await refused(
        dimension,
        [
          { id: 1, a: 'p', rv: 2, changed_at: hour(3) },
          { id: 1, a: 'q', rv: 2, changed_at: hour(4) },
        ],
        day(3),
      )
      expect(twoInBatch).toContain('key id=1: version column rv is 2 at ')
      expect(twoInBatch).toContain('(this batch) then 2 at ')
      expect(twoInBatch).toContain('which one the version holds is ambiguous')
      await merged(dimension, [{ id: 1, a: 'y', rv: 3, changed_at: hour(5) }], day(4))
      const lateAhead = await refused(dimension, [{ id: 1, a: 'w', rv: 4, changed_at: hour(4) }], day(5))
      expect(lateAhead).toMatch(
        /version column rv is 4 at .* \(this batch\) then 3 at .* \(stored\).*went backwards/,
      )
    } finally {
      await dimension.close()
    }
  })
})

describe('change_detection overwrite with untracked (type 1) columns', () => {
  it('a row at the same change time that also changed a type 1 column is overwritten, not refused as a conflicting capture', async () => {
    const table = tableSpec({
      name: 't1',
      target: 'dim_t1',
      key: ['id'],
      extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
      validFrom: { kind: 'column', column: 'updated_at' },
      tracked: { kind: 'list', columns: ['a'] },
      changeDetection: { versionColumn: 'updated_at', onSameVersion: 'overwrite' },
    })
    const columns: StagedColumn[] = [
      { name: 'id', type: 'BIGINT' },
      { name: 'a', type: 'VARCHAR' },
      { name: 'b', type: 'VARCHAR' },
      { name: 'updated_at', type: 'TIMESTAMP' },
    ]
    const dimension = await both.open(table, columns)
    try {
      await merged(dimension, [{ id: 1, a: 'x', b: 'p', updated_at: hour(1) }], day(1))
      await merged(dimension, [{ id: 1, a: 'x2', b: 'q', updated_at: hour(1) }], day(2))
      // The same row again changes nothing.
      await merged(dimension, [{ id: 1, a: 'x2', b: 'q', updated_at: hour(1) }], day(3))
      const rows = await dimension.read(
        (d, schema) =>
          `SELECT ${d.castToString('a')} AS a, ${d.castToString('b')} AS b FROM ${d.table({ schema, name: 'dim_t1' })}`,
      )
      expect(rows.bigquery).toEqual(rows.duckdb)
      expect(rows.duckdb).toEqual([{ a: 'x2', b: 'q' }])
    } finally {
      await dimension.close()
    }
  })
})
