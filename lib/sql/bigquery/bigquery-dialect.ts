import type { TableRef } from '../../core/table-ref.ts'
import { DEFAULT_CAPABILITIES, type DialectCapabilities } from '../capabilities.ts'
import { MAX_QUERY_CHARACTERS } from './script-length.ts'
import { typeFamily } from '../../core/staged-types.ts'
import { SqlDialectBase } from '../dialect-base.ts'
import type {
  BatchValue,
  ColumnTypeChange,
  ColumnWhere,
  LogicalType,
  RowHashPiece,
  ScriptParts,
  SessionScript,
  SqlDialect,
  TableFunctionParameter,
  TableOptionsRequest,
  TableRole,
} from '../dialect.ts'
import {
  EVENTS_FROM_VARIABLE,
  renderBigQueryScriptText,
  renderBigQuerySessionScript,
} from './bigquery-script.ts'
import { arrayElementType, BIGQUERY_LOGICAL_TYPES, bigQueryColumnType } from './bigquery-types.ts'

/**
 * Types BigQuery accepts as clustering columns, without their parameters (FLOAT64, BYTES, TIME are not among them).
 * https://cloud.google.com/bigquery/docs/clustered-tables#cluster_column_types
 */
const CLUSTERABLE = new Set([
  'STRING',
  'INT64',
  'BOOL',
  'DATE',
  'DATETIME',
  'TIMESTAMP',
  'NUMERIC',
  'BIGNUMERIC',
])
const MAX_CLUSTER_COLUMNS = 4

export interface BigQueryDialectOptions {
  /** Project that holds the datasets; table references are `project`.`dataset`.`table`. */
  readonly project: string
  /** Days a per-batch staging table lives before BigQuery deletes it (default 7). */
  readonly stagingExpirationDays?: number
}

/**
 * GoogleSQL for BigQuery. Identifiers in backticks (each path part quoted on its own, so project ids with `-` or
 * `:` and dataset names are never parsed as paths), string literals with backslash escapes, instants as
 * TIMESTAMP (UTC). https://cloud.google.com/bigquery/docs/reference/standard-sql/lexical
 */
class BigQueryDialect extends SqlDialectBase {
  readonly name = 'bigquery'
  // DDL on permanent tables is refused inside a transaction; the dimension is partitioned on valid_to.
  override readonly capabilities: DialectCapabilities = Object.freeze({
    ...DEFAULT_CAPABILITIES,
    transactionalDdl: false,
    partitionedOnValidTo: true,
    // An unpartitioned ROW_NUMBER() runs on one worker: around 100M rows it fails with resourcesExceeded.
    rowsPerKeyBucket: 1_000_000,
    maxQueryCharacters: MAX_QUERY_CHARACTERS,
  })
  readonly #project: string

  constructor(options: BigQueryDialectOptions) {
    super()
    this.#project = options.project
  }

  override quoteIdentifier(name: string): string {
    return '`' + name.replaceAll('\\', '\\\\').replaceAll('`', '\\`') + '`'
  }

  override table(ref: TableRef): string {
    const name = this.quoteIdentifier(ref.name)
    return ref.schema === undefined
      ? name
      : `${this.quoteIdentifier(this.#project)}.${this.quoteIdentifier(ref.schema)}.${name}`
  }

  override stringLiteral(value: string): string {
    return "'" + escapeString(value) + "'"
  }

  override timestampLiteral(iso: string): string {
    return `TIMESTAMP ${this.stringLiteral(timestampText(iso))}`
  }

  type(logical: LogicalType): string {
    return BIGQUERY_LOGICAL_TYPES[logical]
  }

  canonicalText(expression: string, columnType?: string): string {
    if (columnType === undefined) return this.castToString(expression)
    const element = arrayElementType(columnType)
    if (element !== undefined) return this.#listText(expression, element)
    // The sources stage JSON as its canonical text, which is what TO_JSON_STRING gives back (and what DuckDB
    // hashes): lib/core/canonical-json.ts. TO_JSON_STRING(NULL) is the text 'null', a SQL NULL stays NULL.
    if (columnType.trim().toUpperCase() === 'JSON')
      return `IF(${expression} IS NULL, NULL, TO_JSON_STRING(${expression}))`
    const family = typeFamily(columnType)
    // CAST(DATE AS STRING) is always YYYY-MM-DD (4-digit year, zero padded), like DuckDB's strftime %Y.
    switch (family.kind) {
      case 'string':
        return expression
      case 'instant':
        return `CAST(DATE(${expression}, 'UTC') AS STRING) || ' ' || FORMAT_TIMESTAMP('%H:%M:%E6S', ${expression}, 'UTC')`
      case 'datetime':
        return `CAST(DATE(${expression}) AS STRING) || ' ' || FORMAT_DATETIME('%H:%M:%E6S', ${expression})`
      case 'time':
        return `FORMAT_TIME('%H:%M:%E6S', ${expression})`
      case 'decimal':
        return `FORMAT('%.${family.scale}f', ${expression})`
      // Both zeros are 0, as on DuckDB (lib/core/staged-types.ts).
      case 'float':
        return `FORMAT('%.17g', IF(${expression} = 0, 0.0, ${expression}))`
      case 'bytes':
        return `TO_HEX(${expression})`
      default:
        return this.castToString(expression)
    }
  }

  /**
   * DuckDB's text of a list, which the row hash has hashed there since lists were first staged (so a DuckDB
   * dimension moved to BigQuery keeps its hashes): `[a, 'b, c', 1.50]`, elements joined by `, `, a text element
   * in single quotes (with `'` and `\\` escaped by a backslash) when it is empty, is `null` in any case, starts or
   * ends with ASCII white space, or holds one of `,[]{}()'":=`. BigQuery stores no NULL elements (the load
   * refuses them) and reads a NULL array as empty, so neither appears here. Only the element types
   * bigQueryStorableType allows in arrays are rendered.
   */
  #listText(expression: string, elementType: string): string {
    const e = 'dimsync_e'
    const family = typeFamily(elementType)
    let element: string
    if (family.kind === 'decimal') element = `FORMAT('%.${family.scale}f', ${e})`
    else if (family.kind === 'string' || elementType.trim().toUpperCase() === 'UUID') {
      // RE2 patterns: the characters DuckDB quotes for, and the two it escapes inside quotes.
      const quoted = `CONCAT("'", REGEXP_REPLACE(${e}, ${this.stringLiteral(String.raw`(['\\])`)}, ${this.stringLiteral(String.raw`\\\1`)}), "'")`
      const needsQuotes =
        `${e} = '' OR LOWER(${e}) = 'null' OR ` +
        `REGEXP_CONTAINS(${e}, ${this.stringLiteral(String.raw`^[ \t\n\r\x0b\x0c]|[ \t\n\r\x0b\x0c]$|[,\[\]{}()'":=]`)})`
      element = `IF(${needsQuotes}, ${quoted}, ${e})`
    } else element = `CAST(${e} AS STRING)`
    return (
      `IF(${expression} IS NULL, NULL, CONCAT('[', ARRAY_TO_STRING(ARRAY(SELECT ${element} ` +
      `FROM UNNEST(${expression}) AS ${e} WITH OFFSET AS dimsync_o ORDER BY dimsync_o), ', '), ']'))`
    )
  }

  // One n-ary CONCAT instead of a chain of ||: the same value, and a flat expression tree for long rows.
  override concat(parts: readonly string[], multiline = false): string {
    return multiline ? `CONCAT(\n    ${parts.join(',\n    ')})` : `CONCAT(${parts.join(', ')})`
  }

  /**
   * The same hash as the portable CASE/CONCAT form, in about a third of its text: a script may hold at most
   * 1,024K characters, and the portable form repeats each column's canonical text (for LENGTH and for the value)
   * and its name four times, which passed the limit at about 1,070 columns. Here each column is one
   * `(tag, text)` pair of an array; a NULL text contributes '' (CONCAT is NULL). FORMAT renders NULL as 'NULL',
   * so its texts are made NULL for a NULL column; every other canonical text is NULL exactly when its column is.
   */
  override rowHashOf(pieces: readonly RowHashPiece[]): string {
    return `TO_HEX(MD5(${this.rowHashText(pieces)}))`
  }

  override rowHashText(pieces: readonly RowHashPiece[]): string {
    const pairs = pieces.map(({ tag, column, text }) => {
      const value = text.startsWith('FORMAT(') ? `IF(${column} IS NULL, NULL, ${text})` : text
      return `(${tag}, ${value})`
    })
    return (
      "ARRAY_TO_STRING(ARRAY(SELECT IFNULL(CONCAT(p.t, CAST(LENGTH(p.v) AS STRING), ':', p.v, ';'), '') " +
      `FROM UNNEST(ARRAY<STRUCT<t STRING, v STRING>>[\n    ${pairs.join(',\n    ')}]) AS p WITH OFFSET AS o ORDER BY o), '')`
    )
  }

  // BigQuery has no TIMESTAMP ± INTERVAL operator for TIMESTAMP columns in every context; TIMESTAMP_ADD is exact.
  override addMilliseconds(expression: string, milliseconds: number): string {
    return `TIMESTAMP_ADD(${expression}, INTERVAL ${milliseconds} MILLISECOND)`
  }

  // MD5 returns BYTES in BigQuery; TO_HEX gives the same lowercase hex text as md5() elsewhere.
  override md5Hex(expression: string): string {
    return `TO_HEX(MD5(${expression}))`
  }

  // ERROR() aborts the statement, and with it the script and its transaction.
  raiseError(messageExpression: string): string {
    return `ERROR(${messageExpression})`
  }

  isNan(expression: string): string {
    return `IS_NAN(${expression})`
  }

  columnType(stagedType: string, where: { readonly table: string; readonly column: string }): string {
    return bigQueryColumnType(stagedType, where)
  }

  override primaryKey(quotedColumns: readonly string[]): string {
    return `PRIMARY KEY (${quotedColumns.join(', ')}) NOT ENFORCED`
  }

  /**
   * A script variable, set once: a filter on a variable prunes partitions, a filter on a subquery does not ("If you
   * use dynamic expressions in your query filter, BigQuery must scan all of the partitions").
   * https://cloud.google.com/bigquery/docs/querying-partitioned-tables#best_practices_for_partition_pruning
   */
  override earliestEventTime(query: string): BatchValue {
    return { statements: [`SET ${EVENTS_FROM_VARIABLE} = (${query})`], value: EVENTS_FROM_VARIABLE }
  }

  /**
   * The whole count: BigQuery's LIMIT takes only a literal or a query parameter, and a LIMIT does not lower the
   * bytes a query reads (billed by the columns it reads, not the rows).
   */
  override countUpTo(select: string): string {
    return `(SELECT COUNT(*) FROM (${select}) AS counted)`
  }

  override tableOptions(role: TableRole, request: TableOptionsRequest): string {
    return tableOptions(role, request, (value) => this.stringLiteral(value))
  }

  override columnDescription(text: string): string {
    return ` OPTIONS(description = ${this.stringLiteral(text)})`
  }

  /**
   * BigQuery widens a column with `SET DATA TYPE` where the BigQuery types differ (NUMERIC(10, 2) →
   * NUMERIC(18, 2), NUMERIC → BIGNUMERIC; INTEGER and BIGINT are both INT64: nothing to do). The adapter records
   * the new staged type with the merge.
   * https://cloud.google.com/bigquery/docs/reference/standard-sql/data-definition-language#alter_column_set_data_type_statement
   */
  override alterColumnType(
    ref: TableRef,
    column: string,
    change: ColumnTypeChange,
    where: ColumnWhere,
  ): string[] {
    const alter = `ALTER TABLE ${this.table(ref)} ALTER COLUMN ${this.quoteIdentifier(column)}`
    const [from, to] = [this.columnType(change.from, where), this.columnType(change.to, where)]
    return from === to ? [] : [`${alter} SET DATA TYPE ${to}`]
  }

  override tryCast(expression: string, stagedType: string, where: ColumnWhere): string {
    return `SAFE_CAST(${expression} AS ${this.columnType(stagedType, where)})`
  }

  /**
   * BigQuery changes a column's type in place only where the new type is a superset: the values go through a
   * new column `<column>__dimsync_evolve` (added, filled, then renamed over the old one). BigQuery DDL does not
   * roll back: a rewrite that stops half-way leaves that column; run again, it adds it only if missing and fills
   * it again, or, once the old column is dropped, only renames it.
   */
  override rewriteColumnType(
    ref: TableRef,
    column: string,
    change: ColumnTypeChange,
    where: ColumnWhere,
    oldColumnDropped = false,
  ): string[] {
    const table = this.table(ref)
    const name = this.quoteIdentifier(column)
    const next = this.quoteIdentifier(this.evolveWorkColumn(column))
    const type = this.columnType(change.to, where)
    if (oldColumnDropped) return [`ALTER TABLE ${table} RENAME COLUMN ${next} TO ${name}`]
    return [
      `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${next} ${type}`,
      `UPDATE ${table} SET ${next} = CAST(${name} AS ${type}) WHERE TRUE`,
      `ALTER TABLE ${table} DROP COLUMN IF EXISTS ${name}`,
      `ALTER TABLE ${table} RENAME COLUMN ${next} TO ${name}`,
    ]
  }

  override evolveWorkColumn(column: string): string {
    return `${column}__dimsync_evolve`
  }

  override createView(ref: TableRef, select: string, description: string): string {
    return `CREATE OR REPLACE VIEW ${this.table(ref)}\nOPTIONS(description = ${this.stringLiteral(description)}) AS\n${select}`
  }

  /** A table function (https://cloud.google.com/bigquery/docs/table-functions); parameters are typed. */
  createTableFunction(
    ref: TableRef,
    parameters: readonly TableFunctionParameter[],
    body: (args: readonly string[]) => string,
  ): string {
    const declared = parameters.map((p) => `${p.name} ${this.type(p.type)}`)
    return `CREATE OR REPLACE TABLE FUNCTION ${this.table(ref)}(${declared.join(', ')}) AS\n${body(parameters.map((p) => p.name))}`
  }

  override scriptText(script: ScriptParts): string {
    return renderBigQueryScriptText(this, script)
  }

  override sessionScript(script: ScriptParts, maxCharacters: number): SessionScript {
    return renderBigQuerySessionScript(this, script, maxCharacters)
  }
}

export function createBigQueryDialect(options: BigQueryDialectOptions): SqlDialect {
  return Object.freeze(new BigQueryDialect(options))
}

/**
 * Physical layout (see README "BigQuery"): the dimension is partitioned by month of valid_to, so open versions
 * (valid_to NULL → the __NULL__ partition, or the sentinel's month) sit apart from closed history and a filter on
 * valid_to reads only them; it is clustered on the natural key so key lookups and joins read few blocks.
 * Months, not days: 10,000 partitions per table is BigQuery's limit, about 800 years of months.
 */
function tableOptions(role: TableRole, request: TableOptionsRequest, str: (v: string) => string): string {
  const parts: string[] = []
  if (role === 'dimension' && request.validTo !== undefined)
    parts.push(`PARTITION BY TIMESTAMP_TRUNC(${request.validTo}, MONTH)`)
  // A merge reads the capture log from its batch's earliest event time on: the months before are pruned.
  if (role === 'captures' && request.capturedAt !== undefined)
    parts.push(`PARTITION BY TIMESTAMP_TRUNC(${request.capturedAt}, MONTH)`)
  // The ledger is read for one target and batch at every merge: clustered, a lookup reads a few blocks, not the
  // ledger of every table.
  if (role === 'ledger') parts.push('CLUSTER BY target, batch_id')
  else {
    const cluster = request.key
      .filter((c) => CLUSTERABLE.has(safeColumnType(c.type)))
      .slice(0, MAX_CLUSTER_COLUMNS)
      .map((c) => '`' + c.name + '`')
    if (cluster.length > 0) parts.push(`CLUSTER BY ${cluster.join(', ')}`)
  }
  if (request.description !== undefined) parts.push(`OPTIONS(description = ${str(request.description)})`)
  return parts.length === 0 ? '' : `\n${parts.join('\n')}`
}

function safeColumnType(stagedType: string): string {
  try {
    return bigQueryColumnType(stagedType, { table: '', column: '' }).replace(/\(.*\)$/, '')
  } catch {
    return ''
  }
}

/** BigQuery string literal body: backslash escapes for `\`, `'` and control characters. */
function escapeString(value: string): string {
  let out = ''
  for (const ch of value) {
    const code = ch.codePointAt(0)!
    if (ch === '\\') out += '\\\\'
    else if (ch === "'") out += "\\'"
    else if (ch === '\n') out += '\\n'
    else if (ch === '\r') out += '\\r'
    else if (ch === '\t') out += '\\t'
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`
    else out += ch
  }
  return out
}

const ISO = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.(\d+))?)?))?\s*(Z|[+-]\d{2}:?\d{2})?$/

/**
 * `2024-03-10T14:30:00.123456Z` → `2024-03-10 14:30:00.123456+00:00` (BigQuery's canonical timestamp literal;
 * at most 6 fractional digits, anything finer is truncated because BigQuery stores microseconds).
 */
export function timestampText(iso: string): string {
  const m = ISO.exec(iso.trim())
  if (m === null) throw new Error(`not an ISO instant: ${JSON.stringify(iso)}`)
  const [, date, time = '00:00:00', fraction, zone = 'Z'] = m
  const hms = time.length === 5 ? `${time}:00` : time.slice(0, 8)
  const micros = fraction === undefined ? '' : `.${fraction.slice(0, 6).padEnd(6, '0')}`
  const offset = zone === 'Z' ? '+00:00' : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`
  return `${date} ${hms}${micros}${offset}`
}
