import { afterRenames, plannedRenames } from '../core/column-renames.ts'
import { derivedColumnName, planDimensionLayout, type DerivedColumn } from '../core/dimension-layout.ts'
import { DimsyncError } from '../core/errors.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { isWidening } from '../core/type-widening.ts'
import type { StagingStore } from '../ports/staging-store.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { CompiledStatement, SqlDialect } from '../sql/dialect.ts'
import {
  captureRawColumn,
  dimensionObjects,
  refoldsPartialUpdates,
  type DimensionObjects,
} from '../sql/render-ddl.ts'
import { renderColumnRenames } from '../sql/render-column-renames.ts'
import {
  renderEvolveColumn,
  renderLossyValuesQuery,
  rewriteKey,
  type EvolveRequest,
} from '../sql/render-evolve.ts'

export interface EvolveColumnRequest {
  readonly table: TableSpec
  readonly schema: string
  readonly column: string
}

export interface EvolveColumnResult {
  readonly column: string
  readonly from: string
  readonly to: string
  /** The staged batch whose type the column takes. */
  readonly batchId: string
  /** The columns rewritten: the column and those derived from it. */
  readonly columns: readonly string[]
  readonly statements: readonly CompiledStatement[]
}

/** The columns a stored column may have derived from it (types 3 and 6). */
const DERIVED_KINDS: readonly DerivedColumn['kind'][] = ['previous', 'current']

/** How many values that cannot convert an error names. */
const SHOWN = 5

/**
 * `dimsync evolve --table T --column C`: the way out of a type change the merge refuses (a change that is not a
 * widening). The new type is the one the source now sends, read from the oldest staged batch of the table that
 * holds the column with another type (the batch the merge refused stays staged). Every value of the column (and
 * of the columns derived from it) is cast to the new type, in the dimension (and, for a key, in the capture log
 * and retired versions), after a check that none is lost: a value that does not convert, or does not convert
 * back to itself, stops the command naming its key, and nothing is changed. Row hashes are computed again where
 * the column is tracked, so the next merge opens no version for the change of type alone.
 *
 * Refused on a bitemporal table, whose rows are never rewritten.
 */
export async function evolveColumn(
  deps: { readonly warehouse: Warehouse<SqlDialect>; readonly staging: StagingStore },
  request: EvolveColumnRequest,
): Promise<EvolveColumnResult> {
  const { table, column } = request
  const prefix = `dimsync evolve: table ${table.name}, column ${column}`
  if (table.systemTime !== undefined)
    throw new DimsyncError(
      `${prefix}: ${table.target} keeps bitemporal history (system_time: true), whose rows are never rewritten; ` +
        'give the new type a new column name in the source instead',
    )
  const objects = dimensionObjects(table, request.schema)
  return await deps.warehouse.whileWriting([objects.dimension], () => evolveLocked(deps, request, prefix))
}

async function evolveLocked(
  deps: { readonly warehouse: Warehouse<SqlDialect>; readonly staging: StagingStore },
  request: EvolveColumnRequest,
  prefix: string,
): Promise<EvolveColumnResult> {
  const { table, column } = request
  const d = deps.warehouse.dialect
  const objects = dimensionObjects(table, request.schema)
  const existing = await withRenamesApplied(
    deps,
    table,
    objects,
    column,
    await deps.warehouse.describeTable(objects.dimension),
  )
  if (existing === undefined)
    throw new DimsyncError(`${prefix}: dimension ${table.target} does not exist yet; nothing to rewrite`)
  const resumed = await interruptedRewrite(deps.warehouse, table, objects, column, existing)
  const current = existing.find((c) => c.name === column)
  if (current === undefined && resumed === undefined)
    throw new DimsyncError(
      `${prefix}: dimension ${table.target} has no column ${column} (columns: ${existing.map((c) => c.name).join(', ')})`,
    )
  // An interrupted rewrite already chose the new type: the batch is the one holding the column with it.
  const storedAs = (type: string) => d.columnType(type, { table: table.name, column })
  const batch = (await deps.staging.listBatches(table.name)).find((m) =>
    m.columns.some((c) =>
      c.name !== column
        ? false
        : resumed !== undefined
          ? storedAs(c.type) === storedAs(resumed.type)
          : c.type !== current!.type,
    ),
  )
  const staged = batch?.columns.find((c) => c.name === column)
  if (batch === undefined || staged === undefined)
    throw new DimsyncError(
      resumed !== undefined
        ? `${prefix}: an earlier evolve stopped half-way (column ${resumed.workColumn} holds the values as ` +
            `${resumed.type}), but no staged batch of the table holds ${column} as ${resumed.type} any more; ` +
            `rename ${resumed.workColumn} to ${column} by hand`
        : `${prefix}: no staged batch of the table holds ${column} with a type other than ${current!.type}, so the ` +
            'new type is not known; run the table (its refused batch stays staged), then evolve',
    )
  const work = (c: string) => d.evolveWorkColumn(c)
  const derivedNames = DERIVED_KINDS.map((kind) => derivedColumnName(kind, column))
  const derived = derivedNames.filter((name) =>
    existing.some((c) => c.name === name || c.name === work(name)),
  )
  const from =
    current !== undefined && storedAs(current.type) !== storedAs(staged.type) ? current.type : staged.type
  const evolve: EvolveRequest = {
    table,
    objects,
    columns: [column, ...derived],
    from,
    to: staged.type,
    rawColumn: await rawCaptureColumn(deps.warehouse, table, objects, column),
    ...(resumed !== undefined ? { droppedMidRewrite: resumed.dropped } : {}),
  }
  // Values still in the old column are checked again; values an interrupted rewrite moved were checked by it.
  if (from !== staged.type && !isWidening(from, staged.type))
    await assertLossless(deps.warehouse, evolve, prefix)
  // The layout the next merge will see: the dimension as it will be, and the batch's columns.
  const workColumns = new Map(evolve.columns.map((c) => [work(c), c]))
  const after = existing
    .filter((c) => !(workColumns.has(c.name) && existing.some((o) => o.name === workColumns.get(c.name))))
    .map((c) => {
      const name = workColumns.get(c.name) ?? c.name
      return evolve.columns.includes(name) ? { name, type: staged.type } : c
    })
  const layout = planDimensionLayout(table, batch.batchId, batch.columns, after)
  const statements = renderEvolveColumn(d, evolve, layout.tracked, layout.key)
  const rewrite = statements.filter((s) => s.label.startsWith('evolve: rewrite'))
  const rest = statements.filter((s) => !rewrite.includes(s))
  // The rewrite (rendered first) is the DDL: where DDL cannot roll back, it runs before the transaction, on its own
  // (an interrupted one is resumed).
  await deps.warehouse.applyInTransaction({ ddl: rewrite, statements: rest, ddlAfter: [] }, { dryRun: false })
  return {
    column,
    from,
    to: staged.type,
    batchId: batch.batchId,
    columns: evolve.columns,
    statements,
  }
}

/**
 * The dimension's columns once the renames (`renamed: { old: column }`) that give it `column` are applied: a
 * source that renamed a column and changed its type at once has its batch refused before the merge renames
 * anything, and the refusal names the column by its new name. The renames are those the next merge would apply
 * (checked against the staged batch the same way); they stay applied if the rewrite then stops, as after a merge
 * refused once they ran, and the next merge finds them done.
 */
async function withRenamesApplied<T extends { readonly name: string }>(
  deps: { readonly warehouse: Warehouse<SqlDialect>; readonly staging: StagingStore },
  table: TableSpec,
  objects: DimensionObjects,
  column: string,
  existing: readonly T[] | undefined,
): Promise<readonly T[] | undefined> {
  if (existing === undefined || existing.some((c) => c.name === column)) return existing
  if (!(table.renamed ?? []).some((r) => r.to === column)) return existing
  const batch = (await deps.staging.listBatches(table.name)).find((m) =>
    m.columns.some((c) => c.name === column),
  )
  if (batch === undefined) return existing
  const renames = plannedRenames(table, batch.columns, existing, (message) => {
    throw new DimsyncError(`dimsync evolve: table ${table.name}: ${message}`)
  })
  for (const s of renderColumnRenames(deps.warehouse.dialect, objects.dimension, renames))
    await deps.warehouse.query(s.sql)
  return afterRenames(existing, renames)
}

/**
 * What an earlier evolve of `column` left half-done, on warehouses whose rewrite is not transactional: the type its
 * work column holds and the columns (`<table>.<column>`) it had already dropped; undefined when nothing is left.
 */
async function interruptedRewrite(
  warehouse: Warehouse<SqlDialect>,
  table: TableSpec,
  objects: DimensionObjects,
  column: string,
  dimensionColumns: readonly { name: string; type: string }[],
): Promise<{ type: string; workColumn: string; dropped: Set<string> } | undefined> {
  const d = warehouse.dialect
  if (d.evolveWorkColumn(column) === undefined) return undefined
  const candidates = [
    column,
    ...DERIVED_KINDS.map((kind) => derivedColumnName(kind, column)),
    captureRawColumn(column),
  ]
  const tables = [objects.dimension, objects.captures, objects.retired].filter((t) => t !== undefined)
  let found: { type: string; workColumn: string; dropped: Set<string> } | undefined
  for (const ref of tables) {
    const described = ref === objects.dimension ? dimensionColumns : await warehouse.describeTable(ref)
    for (const c of candidates) {
      const workColumn = d.evolveWorkColumn(c)!
      const leftover = described?.find((x) => x.name === workColumn)
      if (leftover === undefined) continue
      found ??= { type: leftover.type, workColumn, dropped: new Set() }
      if (!described!.some((x) => x.name === c)) found.dropped.add(rewriteKey(ref, c))
    }
  }
  return found
}

/**
 * The capture log's column keeping what partial events said in `column` (render-partial-refold.ts), when the
 * table refolds partial updates and its log has it (a log from before raw values were kept has none).
 */
async function rawCaptureColumn(
  warehouse: Warehouse<SqlDialect>,
  table: TableSpec,
  objects: DimensionObjects,
  column: string,
): Promise<string | undefined> {
  if (objects.captures === undefined || !refoldsPartialUpdates(table) || table.key.includes(column))
    return undefined
  const raw = captureRawColumn(column)
  const log = await warehouse.describeTable(objects.captures)
  return log?.some((c) => c.name === raw) ? raw : undefined
}

async function assertLossless(
  warehouse: Warehouse<SqlDialect>,
  r: EvolveRequest,
  prefix: string,
): Promise<void> {
  const rows = await warehouse.query(renderLossyValuesQuery(warehouse.dialect, r, SHOWN))
  if (rows.length === 0) return
  const total = Number(rows[0]!.total)
  const shown = rows.map((row) => {
    const key = r.table.key.map((k) => `${k}=${String(row[k])}`).join(', ')
    if (row.sk === null || row.sk === undefined)
      return `${key} (event captured at ${String(row.captured_at)}) said ${JSON.stringify(row.value)} in capture log column ${String(row.column_name)}`
    const where = row.column_name === r.columns[0] ? '' : ` in ${String(row.column_name)}`
    return `${key} (version ${String(row.sk)}) holds ${JSON.stringify(row.value)}${where}`
  })
  throw new DimsyncError(
    `${prefix}: ${total} value(s) cannot become ${r.to} without loss (from ${r.from}): ${shown.join('; ')}` +
      `${total > shown.length ? `; and ${total - shown.length} more` : ''}. Nothing was changed. Correct those ` +
      'values in the dimension (and its capture log), or give the new type a new column name in the source',
  )
}
