import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { DimensionColumn } from '../core/dimension-layout.ts'
import { metadataColumnList } from '../core/metadata-columns.ts'
import { typeFamily } from '../core/staged-types.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { presetColumnNames, presetColumnValues } from './preset-columns.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * The unknown member of a dimension: the row facts point at when their natural key matches no version at their
 * event time, so that joining facts to the dimension never drops them. It has no natural key (NULL, so no key
 * equality ever matches it and no merge step treats it as a key), text attributes read `Unknown`, and its window
 * is one microsecond in year 1: it is never current and no as-of read finds it. It is never versioned. (A table
 * storing ends as their last millisecond stores its start as its end: a millisecond before year 1 is no instant.)
 */
export const UNKNOWN_MEMBER = Object.freeze({
  label: 'Unknown',
  validFrom: '0001-01-01T00:00:00.000000Z',
  validTo: '0001-01-01T00:00:00.000001Z',
  rowHash: 'dimsync unknown member',
  batchId: 'dimsync unknown member',
})

/** One row when `dimension` already holds its unknown member with surrogate key `key`. */
export function renderUnknownMemberQuery(
  d: SqlDialect,
  dimension: TableSpec,
  ref: TableRef,
  key: number,
): string {
  return `SELECT 1 AS present FROM ${d.table(ref)} WHERE ${d.quoteIdentifier(dimension.columns.surrogateKey)} = ${integer(key)}`
}

/**
 * Adds the unknown member to a dimension that lacks it: the key columns become nullable (DDL, before the load),
 * then the row is inserted unless it is there (so a second run adds nothing).
 */
export function renderUnknownMember(
  d: SqlDialect,
  dimension: TableSpec,
  ref: TableRef,
  columns: readonly DimensionColumn[],
  key: number,
): { readonly ddl: readonly CompiledStatement[]; readonly insert: CompiledStatement } {
  const q = (name: string) => d.quoteIdentifier(name)
  const n = dimension.columns
  const metadata = new Set([
    ...metadataColumnList(n).map((c) => c.name),
    ...presetColumnNames(dimension),
    ...(dimension.systemTime === undefined
      ? []
      : [dimension.systemTime.systemFrom, dimension.systemTime.systemTo]),
  ])
  const keys = new Set(dimension.key)
  const data = columns.filter((c) => !metadata.has(c.name))
  const value = (c: DimensionColumn) =>
    keys.has(c.name) || typeFamily(c.type).kind !== 'string' ? 'NULL' : d.stringLiteral(UNKNOWN_MEMBER.label)
  // A bitemporal dimension knows its unknown member from the start of time on, and never supersedes it.
  const system = dimension.systemTime
  const openEnd =
    dimension.openEnd === null
      ? `CAST(NULL AS ${d.type('timestamp')})`
      : d.timestampLiteral(dimension.openEnd)
  const names = [
    n.surrogateKey,
    ...data.map((c) => c.name),
    n.validFrom,
    n.validTo,
    n.isCurrent,
    n.isDeleted,
    ...(system === undefined ? [] : [system.systemFrom, system.systemTo]),
    ...presetColumnNames(dimension),
  ]
  const end = dimension.endStyle === 'last_millisecond' ? UNKNOWN_MEMBER.validFrom : UNKNOWN_MEMBER.validTo
  const unknownKey = dimension.key.map(() => ({ expression: 'NULL', type: 'VARCHAR' }))
  const values = [
    integer(key),
    ...data.map(value),
    d.timestampLiteral(UNKNOWN_MEMBER.validFrom),
    d.timestampLiteral(end),
    'FALSE',
    'FALSE',
    ...(system === undefined ? [] : [d.timestampLiteral(UNKNOWN_MEMBER.validFrom), openEnd]),
    // No batch loads it: its load time is its start, like its other times fixed in year 1.
    ...presetColumnValues(d, dimension, {
      keys: unknownKey,
      start: d.timestampLiteral(UNKNOWN_MEMBER.validFrom),
      deleted: 'FALSE',
      loadedAt: d.timestampLiteral(UNKNOWN_MEMBER.validFrom),
    }),
  ]
  return {
    ddl: dimension.key.map((k) => ({
      label: `let ${dimension.target}.${k} hold the unknown member`,
      sql: `ALTER TABLE ${d.table(ref)} ALTER COLUMN ${q(k)} DROP NOT NULL`,
    })),
    insert: {
      label: `add the unknown member of ${dimension.target}`,
      sql:
        `INSERT INTO ${d.table(ref)} (${[...names, n.rowHash, n.batchId].map(q).join(', ')})\n` +
        `SELECT ${[...values, d.stringLiteral(UNKNOWN_MEMBER.rowHash), d.stringLiteral(UNKNOWN_MEMBER.batchId)].join(', ')}\n` +
        `FROM (SELECT 1 AS one) x\nWHERE NOT EXISTS (SELECT 1 FROM ${d.table(ref)} WHERE ${q(n.surrogateKey)} = ${integer(key)})`,
    },
  }
}

function integer(value: number): string {
  if (!Number.isSafeInteger(value)) throw new Error(`not a whole number: ${value}`)
  return String(value)
}
