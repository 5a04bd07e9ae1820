import type { DimensionColumn } from '../core/dimension-layout.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { CompiledStatement, SqlDialect } from './dialect.ts'
import { CAPTURE_UNTRACKED_HASH_COLUMN, type DimensionObjects } from './render-ddl.ts'
import { dbtVersionScdId, keyValues } from './dbt-ids.ts'
import { renderRowHash } from './row-hash.ts'

/** What `dimsync evolve` changes: a column of the dimension (and the columns derived from it), to a new type. */
export interface EvolveRequest {
  readonly table: TableSpec
  readonly objects: DimensionObjects
  /** The column and the columns derived from it (`previous_<col>`, `current_<col>`) the dimension has. */
  readonly columns: readonly string[]
  readonly from: string
  readonly to: string
  /**
   * The capture log's column keeping what each partial event said in the column (`raw_<col>`), when the table
   * refolds partial updates and its log has one: rewritten too, so a late event refolds with the new type.
   */
  readonly rawColumn?: string
  /**
   * `<table>.<column>` of the columns an earlier evolve stopped rewriting after it dropped them (their values are
   * in the dialect's evolveWorkColumn): only the rest of their rewrite is left.
   */
  readonly droppedMidRewrite?: ReadonlySet<string>
}

/** The key of a column in EvolveRequest.droppedMidRewrite. */
export function rewriteKey(ref: TableRef, column: string): string {
  return `${ref.name}.${column}`
}

const where = (r: EvolveRequest, column: string) => ({ table: r.table.name, column })
const dropped = (r: EvolveRequest, ref: TableRef, column: string) =>
  r.droppedMidRewrite?.has(rewriteKey(ref, column)) ?? false

/**
 * The versions (and captured partial events) holding a value of one of the columns that does not convert to the
 * new type without loss: the cast fails, or casting back does not give the same value. Rows: the key columns, the
 * surrogate key (`sk`, NULL for a capture), `captured_at` (as text, NULL for a version), `column_name` and `value` (as text);
 * at most `limit`, and `total` (the count of such values) on every row.
 */
export function renderLossyValuesQuery(d: SqlDialect, r: EvolveRequest, limit: number): string {
  const n = r.table.columns
  const q = (c: string) => d.quoteIdentifier(c)
  const keys = (alias: string) => r.table.key.map((k) => `${alias}.${q(k)}`).join(', ')
  const isLossy = (value: string, c: string) => {
    const converted = d.tryCast(value, r.to, where(r, c))
    const back = d.tryCast(converted, r.from, where(r, c))
    return `${value} IS NOT NULL AND (${converted} IS NULL OR ${back} IS DISTINCT FROM ${value})`
  }
  const noVersion = `CAST(NULL AS ${d.type('int64')})`
  const noCapture = `CAST(NULL AS ${d.type('string')})`
  const lossy = r.columns.map(
    (c) =>
      `SELECT ${keys('d')}, d.${q(n.surrogateKey)} AS sk, ${noCapture} AS captured_at, ${d.stringLiteral(c)} AS column_name, ` +
      `${d.castToString(`d.${q(c)}`)} AS value\n  FROM ${d.table(r.objects.dimension)} d\n  WHERE ${isLossy(`d.${q(c)}`, c)}`,
  )
  if (r.rawColumn !== undefined && r.objects.captures !== undefined) {
    const raw = `c.${q(r.rawColumn)}`
    lossy.push(
      `SELECT ${keys('c')}, ${noVersion} AS sk, ${d.castToString('c.captured_at')} AS captured_at, ${d.stringLiteral(r.rawColumn)} AS column_name, ` +
        `${d.castToString(raw)} AS value\n  FROM ${d.table(r.objects.captures)} c\n  WHERE ${isLossy(raw, r.rawColumn)}`,
    )
  }
  // Versions first, then captures, each in order, so the message is the same on every warehouse.
  return (
    `WITH lossy AS (\n  ${lossy.join('\n  UNION ALL\n  ')}\n)\n` +
    `SELECT l.*, (SELECT COUNT(*) FROM lossy) AS total FROM lossy l\n` +
    `ORDER BY CASE WHEN l.sk IS NULL THEN 1 ELSE 0 END, l.sk, l.captured_at LIMIT ${limit}`
  )
}

/**
 * The rewrite: each column cast to the new type (a key column in the capture log and retired versions too; an
 * attribute of a partial-update table in the capture log's raw column too), then, when the column is tracked, every version's row hash computed again over `tracked` (the columns with
 * their new types) and the capture log's state hashes mapped from each version's old hash to its new one, so
 * later batches compare with the same hashes.
 */
export function renderEvolveColumn(
  d: SqlDialect,
  r: EvolveRequest,
  tracked: readonly DimensionColumn[],
  key: readonly DimensionColumn[] = [],
): CompiledStatement[] {
  const out: CompiledStatement[] = []
  const n = r.table.columns
  const q = (c: string) => d.quoteIdentifier(c)
  const change = { from: r.from, to: r.to }
  const isKey = r.table.key.includes(r.columns[0]!)
  const tables = [
    r.objects.dimension,
    ...(isKey ? [r.objects.captures, r.objects.retired].filter((t) => t !== undefined) : []),
  ]
  for (const ref of tables)
    for (const c of ref === r.objects.dimension ? r.columns : r.columns.slice(0, 1))
      for (const sql of d.rewriteColumnType(ref, c, change, where(r, c), dropped(r, ref, c)))
        out.push({ label: `evolve: rewrite ${c} of ${ref.name} as ${r.to}`, sql })
  if (r.rawColumn !== undefined && r.objects.captures !== undefined && !isKey) {
    const c = r.rawColumn
    for (const sql of d.rewriteColumnType(
      r.objects.captures,
      c,
      change,
      where(r, c),
      dropped(r, r.objects.captures, c),
    ))
      out.push({ label: `evolve: rewrite ${c} of ${r.objects.captures.name} as ${r.to}`, sql })
  }
  // dbt_scd_id is derived from the key's text, which a new type may write differently (1.50 → 1.500); a deletion
  // version's from the id of the version before it.
  if (isKey && r.table.dbtIds !== undefined && key.length > 0) {
    const dim = d.table(r.objects.dimension)
    const previous = d.quoteIdentifier('__dimsync_previous_start')
    const id = dbtVersionScdId(d, keyValues(d, key, 'd'), `d.${q(n.validFrom)}`, {
      deleted: `d.${q(n.isDeleted)}`,
      previousStart: `p.${previous}`,
    })
    const keyList = key.map((c) => q(c.name)).join(', ')
    const column = `d.${q(r.table.dbtIds.scdId)}`
    out.push({
      label: 'evolve: dbt_scd_id from the key as now typed',
      sql: `UPDATE ${dim} AS d SET ${q(r.table.dbtIds.scdId)} = ${id}
FROM (SELECT ${q(n.surrogateKey)}, LAG(${q(n.validFrom)}) OVER (PARTITION BY ${keyList} ORDER BY ${q(n.validFrom)}) AS ${previous} FROM ${dim}) p
WHERE d.${q(n.surrogateKey)} = p.${q(n.surrogateKey)} AND ${column} IS DISTINCT FROM ${id}`,
    })
  }
  if (r.objects.captures !== undefined && !isKey && !tracked.some((c) => c.name === r.columns[0])) {
    // The log keeps a hash of each event's untracked values as they were typed, which no version can map to the
    // new type's text: those hashes are no longer compared (an event sent again is then taken as the same).
    const log = d.table(r.objects.captures)
    out.push({
      label: `evolve: rewrite ${r.objects.captures.name}: make sure it has the column ${CAPTURE_UNTRACKED_HASH_COLUMN}`,
      sql: `ALTER TABLE ${log} ADD COLUMN IF NOT EXISTS ${CAPTURE_UNTRACKED_HASH_COLUMN} ${d.type('string')}`,
    })
    out.push({
      label: 'evolve: hashes of captured untracked values are forgotten',
      sql: `UPDATE ${log} SET ${CAPTURE_UNTRACKED_HASH_COLUMN} = NULL WHERE ${CAPTURE_UNTRACKED_HASH_COLUMN} IS NOT NULL`,
    })
  }
  if (!tracked.some((c) => r.columns.includes(c.name))) return out
  const dim = d.table(r.objects.dimension)
  const hash = renderRowHash(d, tracked, 'd')
  const keys = r.table.key
  const map = d.table({ name: '__dimsync_evolve_hashes' })
  out.push({
    label: 'evolve: old and new row hash of every version',
    sql: d.createTempTableAs(
      '__dimsync_evolve_hashes',
      `SELECT DISTINCT ${keys.map((k) => `d.${q(k)}`).join(', ')}, d.${q(n.rowHash)} AS old_hash, ${hash} AS new_hash\n` +
        `FROM ${dim} d WHERE d.${q(n.rowHash)} <> ${hash}`,
    ),
  })
  if (r.objects.captures !== undefined) {
    out.push({
      label: 'evolve: captured states take the new hashes',
      sql:
        `UPDATE ${d.table(r.objects.captures)} AS c SET state_hash = m.new_hash\nFROM ${map} m\n` +
        `WHERE ${keys.map((k) => `c.${q(k)} = m.${q(k)}`).join(' AND ')} AND c.state_hash = m.old_hash`,
    })
  }
  out.push({
    label: 'evolve: versions take the new hashes',
    sql: `UPDATE ${dim} AS d SET ${q(n.rowHash)} = ${hash}\nWHERE d.${q(n.rowHash)} <> ${hash}`,
  })
  return out
}
