import type { LogicalType, SqlDialect, TableOptionsRequest, TableRef, TableRole } from '../dialect.ts'
import { typeFamily } from '../canonical-types.ts'
import { BIGQUERY_LOGICAL_TYPES, bigQueryColumnType } from './bigquery-types.ts'

/** Types BigQuery accepts as clustering columns (FLOAT64, BYTES, TIME are not among them). */
const CLUSTERABLE = new Set(['STRING', 'INT64', 'BOOL', 'DATE', 'DATETIME', 'TIMESTAMP'])
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
export function createBigQueryDialect(options: BigQueryDialectOptions): SqlDialect {
  const quote = (name: string) => '`' + name.replaceAll('\\', '\\\\').replaceAll('`', '\\`') + '`'
  const str = (value: string) => "'" + escapeString(value) + "'"
  const dialect: SqlDialect = {
    name: 'bigquery',
    quoteIdentifier: quote,
    table: (ref: TableRef) =>
      ref.schema === undefined
        ? quote(ref.name)
        : `${quote(options.project)}.${quote(ref.schema)}.${quote(ref.name)}`,
    stringLiteral: str,
    timestampLiteral: (iso: string) => `TIMESTAMP ${str(timestampText(iso))}`,
    type: (logical: LogicalType) => BIGQUERY_LOGICAL_TYPES[logical],
    castToString: (expression: string) => `CAST(${expression} AS STRING)`,
    canonicalText(expression: string, columnType?: string): string {
      if (columnType === undefined) return `CAST(${expression} AS STRING)`
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
        case 'float':
          return `FORMAT('%.17g', ${expression})`
        case 'bytes':
          return `TO_HEX(${expression})`
        default:
          return `CAST(${expression} AS STRING)`
      }
    },
    // One n-ary CONCAT instead of a chain of ||: the same value, and a flat expression tree for long rows.
    concat: (parts: readonly string[], multiline = false) =>
      multiline ? `CONCAT(\n    ${parts.join(',\n    ')})` : `CONCAT(${parts.join(', ')})`,
    md5Hex: (expression: string) => `TO_HEX(MD5(${expression}))`,
    castToTimestamp: (expression: string) => `CAST(${expression} AS TIMESTAMP)`,
    // ERROR() aborts the statement, and with it the script and its transaction.
    raiseError: (messageExpression: string) => `ERROR(${messageExpression})`,
    createTempTableAs: (name: string, select: string) =>
      `CREATE OR REPLACE TEMP TABLE ${quote(name)} AS\n${select}`,
    dropTableIfExists: (ref: TableRef) => `DROP TABLE IF EXISTS ${dialect.table(ref)}`,
    columnType: bigQueryColumnType,
    primaryKey: (quotedColumns: readonly string[]) =>
      `PRIMARY KEY (${quotedColumns.join(', ')}) NOT ENFORCED`,
    tableOptions: (role: TableRole, request: TableOptionsRequest) => tableOptions(role, request, str),
    columnDescription: (text: string) => ` OPTIONS(description = ${str(text)})`,
    filterCurrentOnValidTo: true,
  }
  return Object.freeze(dialect)
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
  if (role !== 'ledger') {
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
    return bigQueryColumnType(stagedType, { table: '', column: '' })
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
