import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import { planDimensionLayout } from '../../lib/core/dimension-layout.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { createBigQueryDialect } from '../../lib/sql/bigquery/bigquery-dialect.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { duckDbDialect } from '../../lib/sql/duckdb/duckdb-dialect.ts'
import { dimensionObjects } from '../../lib/sql/render-ddl.ts'
import { renderMerge } from '../../lib/sql/render-merge.ts'
import { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { Row } from '../../lib/ports/warehouse.ts'
import { SHORT_NAMES } from '../../lib/sql/table-aliases.ts'
import { mergeBatch } from '../../lib/use-cases/merge-batch.ts'
import { BothWarehouses } from '../support/both-warehouses.ts'
import type { Value } from '../support/staged-batches.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/*
 * In GoogleSQL a column hides a table alias or CTE name of the same name wherever the column is in scope (a
 * correlated subquery over a table that has it; QUALIFY and ORDER BY after SELECT *). Every name the merge
 * writes unquoted is collected from its SQL (rendered for each kind of table below); then the same batches are
 * merged into a table whose columns carry those names and into one whose columns do not, on DuckDB and on the
 * BigQuery emulator: every merge must pass and store the same rows.
 */

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const at = (hour: number) => `2024-01-01T${String(hour).padStart(2, '0')}:00:00Z`

/** The kinds of table whose statements differ: each renders its own parts of the merge. */
type Kind = 'history' | 'partial' | 'policies' | 'mirror' | 'snapshot' | 'bitemporal'

/** Attribute columns: `t` tracked, `u` type 1 (keep_first under policies), `w` previous and current value. */
function spec(kind: Kind, names: { t: string; u: string; w: string }): TableSpec {
  const feed = {
    key: ['id'],
    validFrom: { kind: 'column', column: 'changed_at' },
    exclude: ['sq'],
    changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] }, sequence: 'sq' },
    deletes: 'new_record',
  } as const
  switch (kind) {
    case 'history':
      return tableSpec({ ...feed, tracked: { kind: 'list', columns: [names.t, names.w] } })
    case 'partial':
      return tableSpec({
        ...feed,
        deletes: 'invalidate',
        tracked: { kind: 'list', columns: [names.t, names.w] },
        partialUpdates: { ignoreNulls: { kind: 'all' } },
      })
    case 'policies':
      return tableSpec({
        ...feed,
        tracked: { kind: 'list', columns: [names.t, names.w] },
        policies: { keepFirst: [names.u], previousValue: [names.w], currentValue: [names.w] },
      })
    case 'mirror':
      return tableSpec({
        ...feed,
        deletes: 'invalidate',
        mode: 'mirror',
        tracked: { kind: 'list', columns: [] },
      })
    case 'bitemporal':
      return tableSpec({
        ...feed,
        tracked: { kind: 'list', columns: [names.t, names.w] },
        systemTime: { systemFrom: 'system_from', systemTo: 'system_to' },
      })
    case 'snapshot':
      return tableSpec({
        key: ['id'],
        exclude: ['Op', 'sq', 'changed_at'],
        deletes: 'new_record',
        tracked: { kind: 'all_except', columns: [names.u] },
        removedColumns: 'keep_last',
      })
  }
}

const KINDS: readonly Kind[] = ['history', 'partial', 'policies', 'mirror', 'snapshot', 'bitemporal']

function columnsOf(attributes: readonly string[]): StagedColumn[] {
  return [
    { name: 'Op', type: 'VARCHAR' },
    { name: 'id', type: 'BIGINT' },
    ...attributes.map((name) => ({ name, type: 'VARCHAR' })),
    { name: 'changed_at', type: 'TIMESTAMP' },
    { name: 'sq', type: 'BIGINT' },
  ]
}

/**
 * The unquoted names in the merge's SQL that a column could hide: those qualifying a column (`d.`, `cur.`) and
 * CTE names (`dup AS (`), in every statement of every kind of table, first and later batches, both dialects.
 */
function namesTheMergeWrites(): string[] {
  const found = new Set<string>()
  const plain = { t: 'p_t', u: 'p_u', w: 'p_w' }
  for (const d of [duckDbDialect, createBigQueryDialect({ project: 'p' })]) {
    for (const kind of KINDS) {
      const table = spec(kind, plain)
      const layout = planDimensionLayout(table, 'b1', columnsOf(Object.values(plain)), undefined)
      for (const createDimension of [true, false]) {
        for (const policyRewrite of [undefined, { type1: [plain.u], policies: true }]) {
          const statements = renderMerge(d, {
            table,
            layout: { ...layout, createDimension },
            objects: dimensionObjects(table, 's'),
            batchId: 'b1',
            extractedAt: at(9),
            appliedAt: at(10),
            mode: 'full',
            allowMassDelete: true,
            rehashCurrent: true,
            ...(policyRewrite === undefined ? {} : { policyRewrite }),
          })
          for (const s of statements) {
            // Quoted identifiers and string literals hold no alias.
            const sql = `${s.sql}\n${s.onlyIf ?? ''}`
              .replace(/'(?:[^'\\]|\\.|'')*'/g, "''")
              .replace(/"[^"]*"/g, '""')
              .replace(/`[^`]*`/g, '``')
            for (const m of sql.matchAll(/\b([a-z_][a-z0-9_]*)\.(?![0-9])/g)) found.add(m[1]!)
            for (const m of sql.matchAll(/\b([a-z_][a-z0-9_]*) AS \(/g)) found.add(m[1]!)
          }
        }
      }
    }
  }
  return [...found].sort()
}

interface Event {
  readonly op: 'I' | 'U' | 'D'
  readonly id: number
  readonly hour: number
  readonly sq?: number
  /** Values of the attributes, in order (a partial update's NULL keeps the value). */
  readonly v?: readonly (string | null)[]
}

/** Batches that take every path: a first load, the fast path, late events, corrections, deletes, re-deliveries. */
const FEED: readonly (readonly Event[])[] = [
  [
    { op: 'I', id: 1, hour: 1, v: ['a1', 'u1', 'w1'] },
    { op: 'U', id: 1, hour: 3, v: ['a2', 'u2', 'w1'] },
    { op: 'I', id: 2, hour: 1, v: ['b1', 'u1', 'w1'] },
  ],
  [
    { op: 'U', id: 1, hour: 5, v: ['a3', null, 'w2'] },
    { op: 'D', id: 2, hour: 4 },
    { op: 'I', id: 3, hour: 4, v: ['c1', 'u3', null] },
  ],
  // Late events, a sequenced correction, a key coming back.
  [
    { op: 'U', id: 1, hour: 2, v: ['a9', 'u9', 'w9'] },
    { op: 'U', id: 1, hour: 3, sq: 1, v: ['a2', 'u4', 'w3'] },
    { op: 'I', id: 2, hour: 6, v: ['b2', null, 'w4'] },
  ],
  // The first batch again, and a late delete.
  [
    { op: 'I', id: 1, hour: 1, v: ['a1', 'u1', 'w1'] },
    { op: 'D', id: 3, hour: 2 },
    { op: 'U', id: 3, hour: 7, v: [null, 'u5', 'w5'] },
  ],
]

/** The snapshot table: full extracts, deletes by absence. */
const SNAPSHOTS: readonly (readonly Event[])[] = [
  [
    { op: 'I', id: 1, hour: 0, v: ['a1', 'u1', 'w1'] },
    { op: 'I', id: 2, hour: 0, v: ['b1', 'u1', 'w1'] },
  ],
  [
    { op: 'I', id: 1, hour: 0, v: ['a2', 'u2', 'w1'] },
    { op: 'I', id: 3, hour: 0, v: ['c1', 'u3', null] },
  ],
  [
    { op: 'I', id: 1, hour: 0, v: ['a2', 'u4', 'w2'] },
    { op: 'I', id: 2, hour: 0, v: ['b2', null, 'w4'] },
  ],
]

/** Every version as text, the attributes under their role's name, sorted: comparable across column names. */
function versions(table: TableSpec, names: { t: string; u: string; w: string }) {
  return (d: SqlDialect, schema: string) => {
    const c = table.columns
    const text = (name: string, as: string) =>
      `${d.castToString(d.quoteIdentifier(name))} AS ${d.quoteIdentifier(as)}`
    const roles = [
      ['id', 'id'],
      [names.t, 'role_t'],
      [names.u, 'role_u'],
      [names.w, 'role_w'],
      ...(table.policies === undefined
        ? []
        : [
            [`previous_${names.w}`, 'role_previous'],
            [`current_${names.w}`, 'role_current'],
          ]),
      [c.surrogateKey, 'sk'],
      [c.validFrom, 'valid_from'],
      [c.validTo, 'valid_to'],
      [c.isCurrent, 'is_current'],
      [c.isDeleted, 'is_deleted'],
    ]
    return (
      `SELECT ${roles.map(([name, as]) => text(name!, as!)).join(', ')} FROM ${d.table({ schema, name: table.target })} ` +
      `ORDER BY ${[c.surrogateKey, ...(table.systemTime === undefined ? [] : [table.systemTime.systemFrom])].map((n) => d.quoteIdentifier(n)).join(', ')}`
    )
  }
}

/** The rows of each batch of `kind`, for a table whose attributes are named `attributes`. */
function batchesOf(kind: Kind, attributes: readonly string[]): Record<string, Value>[][] {
  return (kind === 'snapshot' ? SNAPSHOTS : FEED).map((batch) =>
    batch.map((e) => {
      const values = Object.fromEntries(attributes.map((name, i) => [name, e.v?.[i % 3] ?? null]))
      return { Op: e.op, id: e.id, changed_at: at(e.hour), sq: e.sq ?? 0, ...values }
    }),
  )
}
const extractedAt = (no: number) => `2024-02-01T${String(no + 1).padStart(2, '0')}:00:00Z`
const roles = (attributes: readonly string[]) => ({ t: attributes[0]!, u: attributes[1]!, w: attributes[2]! })

/** Merges the batches of `kind` on both warehouses; every version, after checking both hold the same. */
async function onBoth(kind: Kind, attributes: readonly string[]): Promise<Row[]> {
  const table = spec(kind, roles(attributes))
  const dimension = await both.open(table, columnsOf(attributes))
  try {
    for (const [no, rows] of batchesOf(kind, attributes).entries()) {
      const outcome = await dimension.load(rows, { extractedAt: extractedAt(no), allowMassDelete: true })
      for (const [side, o] of Object.entries(outcome))
        if ('error' in o) throw new Error(`${kind}, batch ${no}, ${side}: ${o.message}`)
    }
    const { duckdb, bigquery } = await dimension.read(versions(table, roles(attributes)))
    expect(bigquery, `${kind}: the same rows on BigQuery`).toEqual(duckdb)
    return duckdb
  } finally {
    await dimension.close()
  }
}

/** The same on DuckDB alone (what the table with plain names stores, to compare with). */
async function onDuckDb(kind: Kind, attributes: readonly string[]): Promise<Row[]> {
  const table = spec(kind, roles(attributes))
  const warehouse = await DuckDbWarehouse.open({ path: ':memory:' })
  try {
    for (const [no, rows] of batchesOf(kind, attributes).entries()) {
      const batchId = await both.batches.stage(table.name, columnsOf(attributes), rows, {
        extractedAt: extractedAt(no),
        mode: 'full',
      })
      await mergeBatch(
        { warehouse, staging: both.batches },
        {
          table,
          schema: 'main',
          batchId,
          now: new Date(Date.parse('2030-01-01T00:00:00Z') + (no + 1) * 1000),
          allowMassDelete: true,
        },
      )
    }
    return await warehouse.query(versions(table, roles(attributes))(warehouse.dialect, 'main'))
  } finally {
    await warehouse.close()
  }
}

describe('no column hides a name the merge writes', () => {
  const written = namesTheMergeWrites()

  it('the merge writes short names (what the tables below are named after)', () => {
    expect(written).toEqual(expect.arrayContaining(['d', 's', 'a']))
  })

  it('every name the merge writes unquoted is one it renames when a column has it', () => {
    expect(written.filter((name) => !SHORT_NAMES.has(name))).toEqual([])
  })

  it.each(KINDS)(
    '%s: columns named like every alias and CTE name',
    async (kind) => {
      // Three attribute roles, each played by several columns with the written names (and the same values).
      const shadowing = [...written]
      while (shadowing.length % 3 !== 0) shadowing.push(`pad_${shadowing.length}`)
      const plain = shadowing.map((_, i) => `p_${i}`)
      expect(await onBoth(kind, shadowing)).toEqual(await onDuckDb(kind, plain))
    },
    300_000,
  )
})
