import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { presetTableFields } from '../../lib/config/table-options.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { dimensionObjects } from '../../lib/sql/render-ddl.ts'
import { BothWarehouses, type PairedDimension } from '../support/both-warehouses.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/**
 * "Presets that existing queries cannot tell apart": the same snapshots go through dimsync (dbt and fivetran
 * presets) and through a small model of what the tool itself writes for them, written here from the tool's
 * documented algorithm: dbt's snapshot materialization (check strategy, `hard_deletes: new_record`, the snapshot
 * time being the extraction time) and Fivetran's history mode (its SDK's rules for history batches). The
 * queries of the tools' own documentation then run, unchanged, against dimsync's table and against the model's
 * rows, on DuckDB and on the BigQuery emulator, and must return the same rows, every column of the tool compared.
 */

type Snapshot = { readonly at: string; readonly rows: readonly { customer_id: number; region: string }[] }

/** A change, a sub-second snapshot time, a delete, the key back, a second delete of another key. */
const SNAPSHOTS: readonly Snapshot[] = [
  {
    at: '2024-01-01T09:00:00Z',
    rows: [
      { customer_id: 101, region: 'South' },
      { customer_id: 102, region: 'North' },
      { customer_id: 103, region: 'East' },
    ],
  },
  {
    at: '2024-03-10T14:30:00.250Z',
    rows: [
      { customer_id: 101, region: 'North' },
      { customer_id: 103, region: 'East' },
    ],
  },
  {
    at: '2024-05-01T00:00:00Z',
    rows: [
      { customer_id: 101, region: 'North' },
      { customer_id: 102, region: 'West' },
    ],
  },
]
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
]
/** PairedDimension's clock: the n-th merge (from 1) loads at 2030-01-01 00:00:0n. */
const loadTime = (n: number) => new Date(Date.parse('2030-01-01T00:00:00Z') + n * 1000).toISOString()
/** Instants the point-in-time queries ask about: starts, deletes, between them, and just before. */
const INSTANTS = [
  '2023-12-31T00:00:00Z',
  '2024-01-01T09:00:00Z',
  '2024-02-01T00:00:00Z',
  '2024-03-10T14:30:00.249Z',
  '2024-03-10T14:30:00.250Z',
  '2024-04-01T00:00:00Z',
  '2024-05-01T00:00:00Z',
  '2024-06-01T00:00:00Z',
]

/** A value of the model, typed so that both warehouses read it as the dimension's column. */
type Cell = { readonly text: string } | { readonly at: string | null } | { readonly flag: boolean }
type ModelRow = Record<string, Cell>

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const md5 = (text: string) => createHash('md5').update(text).digest('hex')

/**
 * How the warehouse's cast to text writes an instant of a dbt snapshot's time: dbt-bigquery's TIMESTAMP casts to
 * `2024-03-10 14:30:00.250+00`, dbt-duckdb's `now()::timestamp` to `2024-03-10 14:30:00.25`.
 */
function snapshotTimeText(d: SqlDialect, instant: string): string {
  const iso = new Date(instant).toISOString()
  const wall = `${iso.slice(0, 10)} ${iso.slice(11, 19)}`
  const millis = iso.slice(20, 23)
  if (d.name === 'duckdb') {
    const fraction = millis.replace(/0+$/, '')
    return fraction === '' ? wall : `${wall}.${fraction}`
  }
  return `${wall}${millis === '000' ? '' : `.${millis}`}+00`
}

/** dbt's snapshot_hash_arguments: md5 of the arguments' texts joined by '|'. */
const dbtHash = (...texts: string[]) => md5(texts.join('|'))

/**
 * dbt's snapshot of `snapshots`: check strategy on `region`, `hard_deletes: new_record`, each run's snapshot time
 * the extraction time; `validToCurrent` is `dbt_valid_to_current` (null: not set).
 */
function dbtModel(d: SqlDialect, snapshots: readonly Snapshot[], validToCurrent: string | null): ModelRow[] {
  type Version = {
    key: number
    region: string
    from: string
    to: string | null
    id: string
    deleted: boolean
  }
  const versions: Version[] = []
  const isCurrent = (v: Version) => v.to === validToCurrent
  for (const { at, rows } of snapshots) {
    const time = snapshotTimeText(d, at)
    const current = new Map(versions.filter(isCurrent).map((v) => [v.key, v]))
    const inserts: Version[] = []
    for (const row of rows) {
      const snapshotted = current.get(row.customer_id)
      // insertions / updates: a new key, a changed check column, or a key whose current version is a deletion.
      if (snapshotted !== undefined && snapshotted.region === row.region && !snapshotted.deleted) continue
      if (snapshotted !== undefined) snapshotted.to = at
      inserts.push({
        key: row.customer_id,
        region: row.region,
        from: at,
        to: validToCurrent,
        id: dbtHash(String(row.customer_id), time),
        deleted: false,
      })
    }
    const present = new Set(rows.map((r) => r.customer_id))
    for (const snapshotted of current.values()) {
      // deletes and deletion_records: not when the current version already records the deletion.
      if (present.has(snapshotted.key) || snapshotted.deleted) continue
      inserts.push({
        key: snapshotted.key,
        region: snapshotted.region,
        from: at,
        to: snapshotted.to,
        id: dbtHash(snapshotted.id, time),
        deleted: true,
      })
      snapshotted.to = at
    }
    versions.push(...inserts)
  }
  return versions.map((v) => ({
    customer_id: { text: String(v.key) },
    region: { text: v.region },
    dbt_valid_from: { at: v.from },
    dbt_valid_to: { at: v.to },
    dbt_updated_at: { at: v.from },
    dbt_scd_id: { text: v.id },
    dbt_is_deleted: { text: v.deleted ? 'True' : 'False' },
  }))
}

/**
 * Fivetran's history mode for `snapshots`: a new or changed row ends the key's active version at its start less a
 * millisecond and is inserted active until 9999-12-31 23:59:59.999; a deleted row's active version ends at the
 * delete time and turns inactive; `_fivetran_synced` is the load time of the sync that wrote the row.
 */
function fivetranModel(snapshots: readonly Snapshot[]): ModelRow[] {
  type Version = { key: number; region: string; start: string; end: string; active: boolean; synced: string }
  const OPEN = '9999-12-31T23:59:59.999Z'
  const versions: Version[] = []
  for (const [i, { at, rows }] of snapshots.entries()) {
    const active = new Map(versions.filter((v) => v.active).map((v) => [v.key, v]))
    for (const row of rows) {
      const previous = active.get(row.customer_id)
      if (previous?.region === row.region) continue
      if (previous !== undefined) {
        previous.active = false
        previous.end = new Date(Date.parse(at) - 1).toISOString()
      }
      versions.push({
        key: row.customer_id,
        region: row.region,
        start: at,
        end: OPEN,
        active: true,
        synced: loadTime(i + 1),
      })
    }
    const present = new Set(rows.map((r) => r.customer_id))
    for (const v of active.values()) {
      if (present.has(v.key)) continue
      v.active = false
      v.end = at
    }
  }
  return versions.map((v) => ({
    customer_id: { text: String(v.key) },
    region: { text: v.region },
    _fivetran_start: { at: v.start },
    _fivetran_end: { at: v.end },
    _fivetran_active: { flag: v.active },
    _fivetran_synced: { at: v.synced },
  }))
}

/** The model's rows as a subquery with the dimension's column names and types. */
function modelTable(d: SqlDialect, rows: readonly ModelRow[]): string {
  const cell = (c: Cell) => {
    if ('text' in c) return d.stringLiteral(c.text)
    if ('flag' in c) return c.flag ? 'TRUE' : 'FALSE'
    return c.at === null ? `CAST(NULL AS ${d.type('timestamp')})` : d.timestampLiteral(c.at)
  }
  const select = rows.map(
    (r) =>
      `SELECT ${Object.entries(r)
        .map(
          ([name, c]) =>
            `${name === 'customer_id' ? `CAST(${cell(c)} AS ${d.type('int64')})` : cell(c)} AS ${d.quoteIdentifier(name)}`,
        )
        .join(', ')}`,
  )
  return `(${select.join('\nUNION ALL\n')})`
}

/**
 * Runs `query` (a documented query of the tool, over a table named by `{t}`) against dimsync's dimension and
 * against the model's rows, on both warehouses; every row returned, every value as the warehouse's text, must be
 * the same. Returns DuckDB's rows of the dimension, for the reader.
 */
async function expectSameRows(
  dimension: PairedDimension,
  model: (d: SqlDialect) => readonly ModelRow[],
  query: (d: SqlDialect, t: string) => string,
  why: string,
): Promise<Record<string, string | null>[]> {
  const columns = Object.keys(model(dialects(dimension).duckdb)[0]!)
  const texts = (d: SqlDialect, from: string) =>
    `SELECT ${columns.map((c) => `${d.castToString(`x.${d.quoteIdentifier(c)}`)} AS ${d.quoteIdentifier(c)}`).join(', ')}\n` +
    `FROM (${query(d, from)}) x ORDER BY ${columns.map((c) => d.quoteIdentifier(c)).join(', ')}`
  const dimsync = await dimension.read((d, schema) =>
    texts(d, `${d.table(dimensionObjects(dimension.table, schema).dimension)}`),
  )
  const reference = await dimension.read((d) => texts(d, `${modelTable(d, model(d))}`))
  const plain = (rows: readonly Record<string, unknown>[]) =>
    rows.map((r) => Object.fromEntries(columns.map((c) => [c, r[c] === null ? null : String(r[c])])))
  expect(plain(dimsync.duckdb), `${why} (DuckDB)`).toEqual(plain(reference.duckdb))
  expect(plain(dimsync.bigquery), `${why} (BigQuery)`).toEqual(plain(reference.bigquery))
  return plain(dimsync.duckdb)
}

function dialects(dimension: PairedDimension) {
  return { duckdb: dimension.warehouses.duckdb.dialect, bigquery: dimension.warehouses.bigquery.dialect }
}

async function loadAll(dimension: PairedDimension): Promise<void> {
  for (const { at, rows } of SNAPSHOTS) {
    const outcome = await dimension.load(rows, { extractedAt: at, allowMassDelete: true })
    for (const o of [outcome.duckdb, outcome.bigquery]) if ('error' in o) throw new Error(o.message)
  }
}

const DBT_COLUMNS =
  'customer_id, region, dbt_valid_from, dbt_valid_to, dbt_updated_at, dbt_scd_id, dbt_is_deleted'
const FIVETRAN_COLUMNS =
  'customer_id, region, _fivetran_start, _fivetran_end, _fivetran_active, _fivetran_synced'

describe("dbt's documented queries read dimsync's dbt table as they read dbt's snapshot, on both warehouses", () => {
  for (const validToCurrent of [null, '9999-12-31T00:00:00Z']) {
    it(`hard_deletes: new_record, dbt_valid_to_current ${validToCurrent ?? 'not set (NULL)'}`, async () => {
      const table: TableSpec = tableSpec({
        ...presetTableFields('dbt'),
        deletes: 'new_record',
        openEnd: validToCurrent,
      })
      const dimension = await both.open(table, COLUMNS)
      try {
        await loadAll(dimension)
        const model = (d: SqlDialect) => dbtModel(d, SNAPSHOTS, validToCurrent)
        const same = (where: (d: SqlDialect) => string, why: string) =>
          expectSameRows(dimension, model, (d, t) => `SELECT ${DBT_COLUMNS} FROM ${t} WHERE ${where(d)}`, why)
        await same(() => 'TRUE', 'every row, every column of dbt')
        const current =
          validToCurrent === null
            ? () => 'dbt_valid_to IS NULL'
            : (d: SqlDialect) => `dbt_valid_to = ${d.timestampLiteral(validToCurrent)}`
        const live = await same(current, 'current rows')
        expect(live.map((r) => `${r.customer_id} ${r.region} ${r.dbt_is_deleted}`)).toEqual([
          '101 North False',
          '102 West False',
          '103 East True',
        ])
        await same(() => `dbt_is_deleted = 'True'`, "WHERE dbt_is_deleted = 'True'")
        for (const t of INSTANTS) {
          const at = (d: SqlDialect) => d.timestampLiteral(t)
          await same(
            (d) =>
              `dbt_valid_from <= ${at(d)} AND (dbt_valid_to > ${at(d)} OR ${current(d)}) AND dbt_is_deleted = 'False'`,
            `as of ${t}`,
          )
        }
      } finally {
        await dimension.close()
      }
    }, 300_000)
  }
})

describe("Fivetran's documented queries read dimsync's fivetran table as they read a history-mode table, on both warehouses", () => {
  it('deletes end the version at the delete time, inactive; _fivetran_synced is the load time', async () => {
    const table = tableSpec({ ...presetTableFields('fivetran'), deletes: 'invalidate' })
    const dimension = await both.open(table, COLUMNS)
    try {
      await loadAll(dimension)
      const model = () => fivetranModel(SNAPSHOTS)
      const same = (where: (d: SqlDialect) => string, why: string) =>
        expectSameRows(
          dimension,
          model,
          (d, t) => `SELECT ${FIVETRAN_COLUMNS} FROM ${t} WHERE ${where(d)}`,
          why,
        )
      await same(() => 'TRUE', 'every row, every column of Fivetran')
      const active = await same(() => '_fivetran_active', 'WHERE _fivetran_active')
      expect(active.map((r) => `${r.customer_id} ${r.region}`)).toEqual(['101 North', '102 West'])
      for (const t of INSTANTS)
        await same(
          (d) => `${d.timestampLiteral(t)} BETWEEN _fivetran_start AND _fivetran_end`,
          `${t} BETWEEN`,
        )
      // "Querying for deleted records": the key's latest version is not active.
      await expectSameRows(
        dimension,
        model,
        (_d, t) =>
          `SELECT ${FIVETRAN_COLUMNS} FROM (SELECT *, MAX(_fivetran_start) OVER (PARTITION BY customer_id) AS max_start ` +
          `FROM ${t}) y WHERE _fivetran_start = max_start AND NOT _fivetran_active`,
        'deleted records',
      )
    } finally {
      await dimension.close()
    }
  }, 300_000)
})
