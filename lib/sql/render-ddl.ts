import type { DimensionColumn, DimensionLayout } from '../core/dimension-layout.ts'
import { metadataColumnList } from '../core/dimension-layout.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { CompiledStatement, SqlDialect, TableRef } from './dialect.ts'

/** The warehouse objects of one dimension. */
export interface DimensionObjects {
  readonly dimension: TableRef
  readonly captures?: TableRef
  readonly batches: TableRef
  readonly currentView: TableRef
  readonly asOfFunction: TableRef
}

/** Tables are named after the target; the batch ledger is shared by all dimensions of a schema. */
export function dimensionObjects(table: TableSpec, schema: string): DimensionObjects {
  return Object.freeze({
    dimension: { schema, name: table.target },
    captures:
      table.validFrom.kind === 'column' ? { schema, name: `${table.target}_dimsync_captures` } : undefined,
    batches: { schema, name: '_dimsync_batches' },
    currentView: { schema, name: `${table.target}_current` },
    asOfFunction: { schema, name: `${table.target}_as_of` },
  })
}

// Types come from DuckDB's description of staged Parquet; anything outside this shape is refused, never pasted.
const SAFE_TYPE = /^[A-Za-z][A-Za-z0-9_ ,()[\]]*$/

export function assertSafeType(table: string, column: DimensionColumn): void {
  if (!SAFE_TYPE.test(column.type))
    throw new Error(
      `table ${table}: column "${column.name}" has an unsupported type ${JSON.stringify(column.type)}`,
    )
}

export function renderBatchLedgerDdl(d: SqlDialect, batches: TableRef): CompiledStatement {
  return {
    label: 'create batch ledger',
    sql:
      `CREATE TABLE IF NOT EXISTS ${d.table(batches)} (\n  target ${d.type('string')} NOT NULL, table_name ${d.type('string')} NOT NULL, ` +
      `batch_id ${d.type('string')} NOT NULL,\n  extracted_at ${d.type('timestamp')} NOT NULL, mode ${d.type('string')} NOT NULL, applied_at ${d.type('timestamp')} NOT NULL,\n` +
      `  events ${d.type('int64')}, inserted_versions ${d.type('int64')}, closed_versions ${d.type('int64')}, deleted_keys ${d.type('int64')},\n` +
      `  unchanged_events ${d.type('int64')}, late_keys ${d.type('int64')},\n  PRIMARY KEY (target, batch_id)\n)`,
  }
}

/** DDL that makes the dimension (and its capture log) match `layout`: create on first run, add new columns. */
export function renderDimensionDdl(
  d: SqlDialect,
  table: TableSpec,
  layout: DimensionLayout,
  objects: DimensionObjects,
): CompiledStatement[] {
  const out: CompiledStatement[] = []
  const keyNames = new Set(layout.key.map((c) => c.name))
  const column = (c: DimensionColumn, notNull: boolean) => {
    assertSafeType(table.name, c)
    return `${d.quoteIdentifier(c.name)} ${c.type}${notNull ? ' NOT NULL' : ''}`
  }
  if (layout.createDimension) {
    const n = table.columns
    const metadata = metadataColumnList(n)
    const first = metadata[0]!
    const rest = metadata.slice(1)
    const notNullMetadata = new Set([
      n.surrogateKey,
      n.validFrom,
      n.isCurrent,
      n.isDeleted,
      n.rowHash,
      n.batchId,
    ])
    const columns = [
      column(first, true),
      ...layout.stored.map((c) => column(c, keyNames.has(c.name))),
      ...rest.map((c) => column(c, notNullMetadata.has(c.name))),
    ]
    out.push({
      label: 'create dimension',
      sql: `CREATE TABLE IF NOT EXISTS ${d.table(objects.dimension)} (\n  ${columns.join(',\n  ')}\n)`,
    })
  }
  for (const c of layout.addColumns) {
    out.push({
      label: `add column ${c.name}`,
      sql: `ALTER TABLE ${d.table(objects.dimension)} ADD COLUMN ${column(c, false)}`,
    })
  }
  if (objects.captures !== undefined) {
    const keys = layout.key.map((c) => column(c, true))
    out.push({
      label: 'create capture log',
      sql:
        `CREATE TABLE IF NOT EXISTS ${d.table(objects.captures)} (\n  ${keys.join(', ')},\n  captured_at ${d.type('timestamp')} NOT NULL, ` +
        `state_hash ${d.type('string')} NOT NULL, is_deleted ${d.type('bool')} NOT NULL, batch_id ${d.type('string')} NOT NULL\n)`,
    })
  }
  return out
}
