import { DimsyncError } from '../core/errors.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { Row, Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { dimensionObjects } from '../sql/render-ddl.ts'
import { renderHistoryQuery } from '../sql/render-history.ts'

export interface HistoryRequest {
  readonly table: TableSpec
  readonly schema: string
  /** `101`, or `tenant=a,customer_id=1` for composite keys. */
  readonly key?: string
  /** ISO instant: only the versions valid at that time. */
  readonly asOf?: string
  /** ISO instant, bitemporal tables only: the versions as the table said then (absent: as it says now). */
  readonly knownAt?: string
}

/** The versions of a dimension, ordered by key and valid_from. */
export async function readHistory(warehouse: Warehouse<SqlDialect>, request: HistoryRequest): Promise<Row[]> {
  const { table } = request
  const d = warehouse.dialect
  if (request.knownAt !== undefined && table.systemTime === undefined)
    throw new DimsyncError(
      `--known-at: table ${table.name} keeps no system time (set system_time: true for bitemporal history); ` +
        'its versions are the same whenever you ask',
    )
  const objects = dimensionObjects(table, request.schema)
  if ((await warehouse.describeTable(objects.dimension)) === undefined)
    throw new DimsyncError(
      `table ${table.name}: dimension ${table.target} does not exist yet; run dimsync run first`,
    )
  const key = request.key === undefined ? undefined : parseKey(table, request.key)
  const asOf = request.asOf === undefined ? undefined : parseInstant('--as-of', request.asOf)
  const knownAt = request.knownAt === undefined ? undefined : parseInstant('--known-at', request.knownAt)
  return warehouse.query(renderHistoryQuery(d, table, objects.dimension, { key, asOf, knownAt }))
}

function parseInstant(option: string, text: string): string {
  const at = Date.parse(text)
  if (Number.isNaN(at)) throw new DimsyncError(`${option}: "${text}" is not an ISO date or date-time`)
  return new Date(at).toISOString()
}

export function parseKey(table: TableSpec, text: string): [string, string][] {
  if (table.key.length === 1 && !text.includes('=')) return [[table.key[0]!, text]]
  const pairs = text.split(',').map((part) => {
    const eq = part.indexOf('=')
    if (eq < 0)
      throw new DimsyncError(
        `--key: expected column=value pairs for the key (${table.key.join(', ')}), got "${text}"`,
      )
    return [part.slice(0, eq).trim(), part.slice(eq + 1)] as [string, string]
  })
  for (const [column] of pairs) {
    if (!table.key.includes(column))
      throw new DimsyncError(
        `--key: "${column}" is not a key column of table ${table.name} (${table.key.join(', ')})`,
      )
  }
  return pairs
}
