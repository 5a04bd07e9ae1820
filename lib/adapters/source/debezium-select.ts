/**
 * Debezium change events as a Kafka S3 sink writes them: JSON lines, one record value per line, with the schema
 * envelope (`{ schema, payload }`) or without. Read by DuckDB as one relation of events: the row image (`after`
 * for c, u and r; for a delete, the key of `before`, its other columns NULL), the operation (`op`), and the fields
 * of `source` the config names as `source_<field>` (`source_ts_ms`, the commit time, as a timestamp; `source_lsn`,
 * the log position). A tombstone (a null value) is skipped. The SQL is built from names DuckDB described, quoted.
 */
import type { DuckDBConnection } from '@duckdb/node-api'

import { SourceError } from '../../core/errors.ts'
import type { TableSpec } from '../../core/table-spec.ts'
import { sqlIdentifier, sqlString, sqlStringList } from '../duckdb/parquet-schema.ts'

/** Prefix of the staged columns taken from an event's `source` block. */
export const SOURCE_FIELD_PREFIX = 'source_'
/** Epoch times in `source` and the microseconds in one of their units. */
const EPOCH_MICROS: Readonly<Record<string, string>> = { ts_ms: '* 1000', ts_us: '', ts_ns: '// 1000' }

/** The SELECT reading `files` (local JSON lines files) as the events of `table` (its extract format debezium). */
export async function debeziumSelect(
  connection: DuckDBConnection,
  table: TableSpec,
  files: readonly string[],
  shown: string,
): Promise<string> {
  const feed = table.changes!
  const read =
    `read_json(${sqlStringList(files)}, format='newline_delimited', records=true, sample_size=-1, ` +
    `union_by_name=true)`
  const refuse = (text: string) => new SourceError(table.name, `${table.name}: ${shown}: ${text}`)
  const top = await fieldsOf(connection, `SELECT * FROM ${read}`)
  if (top === undefined) throw refuse('not JSON lines of Debezium change events')
  const enveloped = top.has('payload')
  const base = enveloped ? 'r.payload' : 'r'
  const part = (name: string) =>
    enveloped ? `struct_extract(r.payload, ${sqlString(name)})` : `r.${sqlIdentifier(name)}`
  const events =
    `SELECT ${['before', 'after', 'source', 'op'].map((p) => `${part(p)} AS ${sqlIdentifier(`__dbz_${p}`)}`).join(', ')} ` +
    `FROM ${read} r WHERE ${enveloped ? `${base} IS NOT NULL` : 'NOT (r.op IS NULL AND r.before IS NULL AND r.after IS NULL)'}`
  const envelope = await fieldsOf(connection, events)
  if (envelope === undefined)
    throw refuse('its records have no op, before, after and source (a Debezium envelope)')
  const after =
    (await fieldsOf(connection, `SELECT unnest(${sqlIdentifier('__dbz_after')}) FROM (${events})`)) ??
    new Map()
  const before =
    (await fieldsOf(connection, `SELECT unnest(${sqlIdentifier('__dbz_before')}) FROM (${events})`)) ??
    new Map()
  const source =
    (await fieldsOf(connection, `SELECT unnest(${sqlIdentifier('__dbz_source')}) FROM (${events})`)) ??
    new Map()
  const image = after.size > 0 ? after : before
  if (image.size === 0) throw refuse('no event has a row image (after or before)')

  const operation = feed.operation.column
  const named = [table.validFrom.kind === 'column' ? table.validFrom.column : undefined, feed.sequence]
  const sourceColumns = [
    ...new Set(named.filter((n): n is string => n?.startsWith(SOURCE_FIELD_PREFIX) === true)),
  ]
  for (const name of [operation, ...sourceColumns]) {
    if (image.has(name))
      throw refuse(
        `the row has a column ${name}, the name dimsync gives Debezium's ${name === operation ? 'op' : name}`,
      )
  }
  const isDelete = `COALESCE(CAST(e.__dbz_op AS VARCHAR) IN (${feed.operation.delete.map(sqlString).join(', ')}), FALSE)`
  const field = (struct: string, name: string) =>
    `struct_extract(e.${sqlIdentifier(struct)}, ${sqlString(name)})`
  const keys = new Set(table.key)
  const columns = [...image.keys()].map((name) => {
    const whenDeleted = keys.has(name) && before.has(name) ? field('__dbz_before', name) : 'NULL'
    const otherwise = after.has(name) ? field('__dbz_after', name) : 'NULL'
    return `CASE WHEN ${isDelete} THEN ${whenDeleted} ELSE ${otherwise} END AS ${sqlIdentifier(name)}`
  })
  columns.push(`e.__dbz_op AS ${sqlIdentifier(operation)}`)
  for (const name of sourceColumns) {
    const key = name.slice(SOURCE_FIELD_PREFIX.length)
    if (!source.has(key))
      throw refuse(
        `${name} names the field ${key} of the events' source, which has ${[...source.keys()].join(', ')}`,
      )
    const value = field('__dbz_source', key)
    const micros = EPOCH_MICROS[key]
    columns.push(
      `${micros === undefined ? value : `make_timestamp(CAST(${value} AS BIGINT) ${micros})`} AS ${sqlIdentifier(name)}`,
    )
  }
  return `SELECT ${columns.join(', ')} FROM (${events}) e`
}

/** The columns `select` gives, by name (DuckDB types), or undefined when DuckDB cannot describe it. */
async function fieldsOf(
  connection: DuckDBConnection,
  select: string,
): Promise<Map<string, string> | undefined> {
  try {
    const reader = await connection.runAndReadAll(`DESCRIBE ${select}`)
    return new Map(
      reader.getRowObjectsJson().map((row) => [String(row.column_name), String(row.column_type)]),
    )
  } catch {
    return undefined
  }
}
