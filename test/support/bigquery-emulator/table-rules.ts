import { invalidQuery } from './api-errors.ts'
import { typeText } from './field-types.ts'
import type { TableMetadata } from './table-store.ts'
import { scalarText, timestampMicros, isNull, type Value } from './values.ts'
import type { Proto } from './zetasql-service.ts'

/**
 * BigQuery's rules for PARTITION BY, CLUSTER BY and OPTIONS, checked on ZetaSQL's resolved DDL (which accepts
 * more than BigQuery does) and turned into the table metadata BigQuery keeps. Pure functions.
 */

/** `DateTimestampPart` numbers in ZetaSQL literals. */
const DATE_PART: Readonly<Record<number, string>> = Object.freeze({
  1: 'YEAR',
  2: 'MONTH',
  3: 'DAY',
  7: 'HOUR',
})

const PARTITION_RULE =
  'PARTITION BY expression must be DATE(<timestamp_column>), DATE(<datetime_column>), DATETIME_TRUNC(<datetime_column>, ' +
  'DAY/HOUR/MONTH/YEAR), a DATE-type column, TIMESTAMP_TRUNC(<timestamp_column>, DAY/HOUR/MONTH/YEAR), ' +
  'DATE_TRUNC(<date_column>, MONTH/YEAR), or RANGE_BUCKET(<int64_column>, GENERATE_ARRAY(<int64_value>, <int64_value>[, <int64_value>]))'

interface ColumnRef {
  readonly name: string
  readonly kind: string
}

function columnRef(expr: Proto): ColumnRef | undefined {
  const ref = unwrap(expr)
  if (ref.node !== 'resolvedColumnRefNode') return undefined
  return { name: String(ref.value.column.name), kind: String(ref.value.column.type?.typeKind) }
}

function functionCall(expr: Proto): { name: string; args: Proto[] } | undefined {
  const call = unwrap(expr)
  if (call.node !== 'resolvedFunctionCallNode') return undefined
  let level = call.value
  let name: string | undefined
  let args: Proto[] | undefined
  for (; level; level = level.parent) {
    name ??= level.function?.name
    args ??= level.argumentList
  }
  return name === undefined
    ? undefined
    : { name: name.replace(/^ZetaSQL:/, '').toLowerCase(), args: args ?? [] }
}

function literal(expr: Proto): Proto | undefined {
  const lit = unwrap(expr)
  return lit.node === 'resolvedLiteralNode' ? lit.value.value?.value : undefined
}

/** Follows `{ node, [node]: ... }` wrappers down to the concrete node. */
function unwrap(expr: Proto): { node: string; value: Proto } {
  let node = ''
  let value = expr
  while (value && typeof value.node === 'string' && value[value.node]) {
    node = value.node
    value = value[value.node]
  }
  return { node, value }
}

/** The partitioning a PARTITION BY clause (ZetaSQL's resolved expressions) describes, by BigQuery's rules. */
export function partitioningOf(
  partitionBy: readonly Proto[],
): Pick<TableMetadata, 'timePartitioning' | 'rangePartitioning'> {
  if (partitionBy.length === 0) return {}
  if (partitionBy.length > 1) throw invalidQuery('Only one PARTITION BY expression is allowed')
  const expr = partitionBy[0]
  const column = columnRef(expr)
  if (column !== undefined) {
    if (column.kind === 'TYPE_DATE') return { timePartitioning: { type: 'DAY', field: column.name } }
    throw invalidQuery(PARTITION_RULE)
  }
  const call = functionCall(expr)
  const arg = call?.args[0] === undefined ? undefined : columnRef(call.args[0])
  if (call === undefined || arg === undefined) throw invalidQuery(PARTITION_RULE)
  const part = DATE_PART[Number(literal(call.args[1])?.enumValue)]
  const allowed = (kind: string, parts: readonly string[]) =>
    arg.kind === kind && call.args.length === 2 && part !== undefined && parts.includes(part)
  switch (call.name) {
    case 'date':
      if (call.args.length === 1 && (arg.kind === 'TYPE_TIMESTAMP' || arg.kind === 'TYPE_DATETIME'))
        return { timePartitioning: { type: 'DAY', field: arg.name } }
      break
    case 'timestamp_trunc':
      if (allowed('TYPE_TIMESTAMP', ['DAY', 'HOUR', 'MONTH', 'YEAR']))
        return { timePartitioning: { type: part!, field: arg.name } }
      break
    case 'datetime_trunc':
      if (allowed('TYPE_DATETIME', ['DAY', 'HOUR', 'MONTH', 'YEAR']))
        return { timePartitioning: { type: part!, field: arg.name } }
      break
    case 'date_trunc':
      if (allowed('TYPE_DATE', ['MONTH', 'YEAR']))
        return { timePartitioning: { type: part!, field: arg.name } }
      break
    case 'range_bucket': {
      const generate = call.args[1] === undefined ? undefined : functionCall(call.args[1])
      const bounds = (generate?.args ?? []).map((a) => literal(a)?.int64Value)
      if (
        arg.kind === 'TYPE_INT64' &&
        generate?.name === 'generate_array' &&
        (bounds.length === 2 || bounds.length === 3) &&
        bounds.every((b) => b !== undefined)
      )
        return {
          rangePartitioning: {
            field: arg.name,
            range: { start: String(bounds[0]), end: String(bounds[1]), interval: String(bounds[2] ?? 1) },
          },
        }
      break
    }
  }
  throw invalidQuery(PARTITION_RULE)
}

/** Types BigQuery clusters on (top-level, not repeated). */
const CLUSTERABLE = new Set([
  'TYPE_STRING',
  'TYPE_INT64',
  'TYPE_BOOL',
  'TYPE_DATE',
  'TYPE_DATETIME',
  'TYPE_TIMESTAMP',
  'TYPE_NUMERIC',
  'TYPE_BIGNUMERIC',
  'TYPE_GEOGRAPHY',
  'TYPE_RANGE',
])
export const MAX_CLUSTERING_COLUMNS = 4

export function clusteringOf(clusterBy: readonly Proto[]): Pick<TableMetadata, 'clustering'> {
  if (clusterBy.length === 0) return {}
  if (clusterBy.length > MAX_CLUSTERING_COLUMNS)
    throw invalidQuery(
      `Too many clustering fields: ${clusterBy.length}; a table can be clustered by at most ${MAX_CLUSTERING_COLUMNS} columns`,
    )
  const fields = clusterBy.map((expr) => {
    const column = columnRef(expr)
    if (column === undefined) throw invalidQuery('CLUSTER BY expects column names')
    if (!CLUSTERABLE.has(column.kind))
      throw invalidQuery(
        `Field ${column.name} is of type ${column.kind.replace(/^TYPE_/, '').replace('DOUBLE', 'FLOAT64')}, which is not supported for clustering`,
      )
    return column.name
  })
  return { clustering: { fields } }
}

/** An option as evaluated: its name and typed value. */
export interface OptionValue {
  readonly name: string
  readonly type: Proto
  readonly value: Value
}

export type OptionTarget = 'table' | 'view' | 'column' | 'function'

const OPTION_TYPES: Readonly<Record<OptionTarget, Readonly<Record<string, string>>>> = Object.freeze({
  table: {
    description: 'STRING',
    friendly_name: 'STRING',
    expiration_timestamp: 'TIMESTAMP',
    labels: 'ARRAY<STRUCT<STRING, STRING>>',
    partition_expiration_days: 'FLOAT64',
    require_partition_filter: 'BOOL',
    kms_key_name: 'STRING',
    default_rounding_mode: 'STRING',
    enable_change_history: 'BOOL',
    enable_fine_grained_mutations: 'BOOL',
    max_staleness: 'INTERVAL',
    storage_uri: 'STRING',
    file_format: 'STRING',
    table_format: 'STRING',
  },
  view: {
    description: 'STRING',
    friendly_name: 'STRING',
    expiration_timestamp: 'TIMESTAMP',
    labels: 'ARRAY<STRUCT<STRING, STRING>>',
    privacy_policy: 'JSON',
  },
  column: { description: 'STRING', rounding_mode: 'STRING' },
  function: { description: 'STRING' },
})

/** Checks OPTIONS(...) against BigQuery's list for the object and turns them into table metadata. */
export function metadataOfOptions(
  target: OptionTarget,
  options: readonly OptionValue[],
  partitioned: boolean,
): TableMetadata {
  const allowed = OPTION_TYPES[target]
  const metadata: { -readonly [K in keyof TableMetadata]: TableMetadata[K] } = {}
  const ddlOptions: Record<string, unknown> = {}
  for (const option of options) {
    const name = option.name.toLowerCase()
    const expected = allowed[name]
    if (expected === undefined)
      throw invalidQuery(
        `Invalid option ${option.name} for ${target === 'function' ? 'a table function' : `a ${target}`}`,
      )
    const actual = typeText(option.type)
    const coercible = expected === 'FLOAT64' && actual === 'INT64'
    const labelArray =
      expected.startsWith('ARRAY<STRUCT') && /^ARRAY<STRUCT<\w* ?STRING, \w* ?STRING>>$/.test(actual)
    if (actual !== expected && !coercible && !labelArray && !isNull(option.value))
      throw invalidQuery(`Option ${option.name} must be ${expected}, not ${actual}`)
    if ((name === 'partition_expiration_days' || name === 'require_partition_filter') && !partitioned)
      throw invalidQuery(`Option ${option.name} is only allowed on partitioned tables`)
    if (isNull(option.value)) continue
    switch (name) {
      case 'description':
        metadata.description = String(option.value.stringValue)
        break
      case 'friendly_name':
        metadata.friendlyName = String(option.value.stringValue)
        break
      case 'expiration_timestamp':
        metadata.expirationMs = Number(timestampMicros(option.value) / 1000n)
        break
      case 'require_partition_filter':
        metadata.requirePartitionFilter = Boolean(option.value.boolValue)
        break
      case 'labels':
        metadata.labels = Object.fromEntries(
          (option.value.arrayValue.element ?? []).map((e: Proto) => [
            String(e.structValue.field[0].stringValue),
            String(e.structValue.field[1].stringValue),
          ]),
        )
        break
      default:
        ddlOptions[name] = scalarText(option.type, option.value)
    }
  }
  if (Object.keys(ddlOptions).length > 0) metadata.ddlOptions = ddlOptions
  return metadata
}
