import type { DimensionColumn, DimensionLayout } from '../core/dimension-layout.ts'
import { METADATA_COLUMNS, metadataColumnList, metadataColumnNamed } from '../core/metadata-columns.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { CompiledStatement, SqlDialect, TableRef } from './dialect.ts'
import { assertSafeTypeText } from './safe-type.ts'

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

/** Throws naming the table and column when a staged type is not plain type text (never pasted into SQL). */
export function assertSafeType(table: string, column: DimensionColumn): void {
  assertSafeTypeText(table, column.name, column.type)
}

export function renderBatchLedgerDdl(d: SqlDialect, batches: TableRef): CompiledStatement {
  return {
    label: 'create batch ledger',
    sql:
      `CREATE TABLE IF NOT EXISTS ${d.table(batches)} (\n  target ${d.type('string')} NOT NULL, table_name ${d.type('string')} NOT NULL, ` +
      `batch_id ${d.type('string')} NOT NULL,\n  extracted_at ${d.type('timestamp')} NOT NULL, mode ${d.type('string')} NOT NULL, applied_at ${d.type('timestamp')} NOT NULL,\n` +
      `  events ${d.type('int64')}, inserted_versions ${d.type('int64')}, closed_versions ${d.type('int64')}, deleted_keys ${d.type('int64')},\n` +
      `  unchanged_events ${d.type('int64')}, late_keys ${d.type('int64')},\n  ${d.primaryKey(['target', 'batch_id'])}\n)` +
      d.tableOptions('ledger', {
        key: [],
        description: 'dimsync: one row per merged batch (idempotence ledger)',
      }),
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
  const column = (c: DimensionColumn, notNull: boolean, description = `${SOURCE_TYPE_NOTE}${c.type}`) => {
    assertSafeType(table.name, c)
    const type = d.columnType(c.type, { table: table.name, column: c.name })
    return `${d.quoteIdentifier(c.name)} ${type}${notNull ? ' NOT NULL' : ''}${d.columnDescription(description)}`
  }
  const keyTypes = layout.key.map((c) => ({ name: c.name, type: c.type }))
  if (layout.createDimension) {
    const n = table.columns
    const metadata = metadataColumnList(n)
    const first = metadata[0]!
    const rest = metadata.slice(1)
    const meta = (c: DimensionColumn) => {
      const contract = METADATA_COLUMNS[metadataColumnNamed(n, c.name)!]
      return column(c, contract.notNull, `dimsync: ${contract.meaning}\n${SOURCE_TYPE_NOTE}${c.type}`)
    }
    const columns = [
      meta(first),
      ...layout.stored.map((c) => column(c, keyNames.has(c.name))),
      ...rest.map((c) => meta(c)),
    ]
    out.push({
      label: 'create dimension',
      sql:
        `CREATE TABLE IF NOT EXISTS ${d.table(objects.dimension)} (\n  ${columns.join(',\n  ')}\n)` +
        d.tableOptions('dimension', {
          validTo: d.quoteIdentifier(n.validTo),
          key: keyTypes,
          description: `dimsync: type 2 history of table ${table.name}, one row per version`,
        }),
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
        `state_hash ${d.type('string')} NOT NULL, is_deleted ${d.type('bool')} NOT NULL, batch_id ${d.type('string')} NOT NULL\n)` +
        d.tableOptions('captures', {
          key: keyTypes,
          description: `dimsync: every state of table ${table.name} captured so far (late events)`,
        }),
    })
  }
  return out
}

/** Description line recording a column's staged type (read back by the BigQuery adapter). */
export const SOURCE_TYPE_NOTE = 'dimsync source type: '
