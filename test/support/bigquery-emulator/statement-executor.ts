import { BigQueryError, invalidQuery, notFound } from './api-errors.ts'
import { assertPartitionFilters } from './partition-filter.ts'
import { fieldOfZetaType, typeText } from './field-types.ts'
import { collectReferences, type TableReference } from './statement-references.ts'
import { lineAndColumn, statementList, type TreeNode } from './sql-tree.ts'
import {
  tableName,
  type Column,
  type Row,
  type StoredRoutine,
  type StoredTable,
  type TableRef,
  type TableStore,
} from './table-store.ts'
import { TextEdits } from './text-edits.ts'
import { isNull, logicalBytes, NULL_VALUE, type Value } from './values.ts'
import {
  BUILTIN_FUNCTION_OPTIONS,
  TableContent,
  ZetaSqlError,
  type Proto,
  type ZetaSqlService,
} from './zetasql-service.ts'

/**
 * The pseudo-column that carries the emulator's row id through ZetaSQL: `SELECT *` does not show it, and DML
 * answers it, so the rows an UPDATE or DELETE touched are found again. (A primary key would do the same, but
 * ZetaSQL's server crashes on an INSERT into a table that has one: it is set for UPDATE and DELETE only.)
 */
export const ROW_ID_COLUMN = '__emulator_row_id'

/** A script variable (or a value standing for a system variable): a named constant in ZetaSQL's catalog. */
export interface Variable {
  readonly name: string
  readonly type: Proto
  readonly value: Value
}

/** What a statement sees: the tables, the script's temporary tables and variables, the job's defaults. */
export interface StatementScope {
  readonly store: TableStore
  /** Project of table names written without one. */
  readonly projectId: string
  /** Dataset of table names written without one (a query job's `defaultDataset`). */
  readonly defaultDataset?: string
  /** The job's location: a dataset elsewhere is not found, as in BigQuery. */
  readonly location?: string
  tempTable(name: string): StoredTable | undefined
  variables(): readonly Variable[]
  /** The value of `@@a.b`, or undefined when the emulator does not know it. */
  systemVariable(path: readonly string[]): Variable | undefined
  /** Stores the version of a table a DML statement produced (the scope keeps what a rollback needs). */
  writeTable(table: StoredTable, temp: boolean): void
}

/** A statement, a query or an expression (evaluated as `SELECT <expression>`), inside the text it was parsed from. */
export interface Fragment {
  readonly source: Buffer
  readonly node: TreeNode
  readonly asExpression?: boolean
}

export interface QueryResult {
  readonly columns: readonly Column[]
  readonly rows: readonly (readonly Value[])[]
  readonly bytesProcessed: number
}

export interface ModifyResult {
  readonly target: TableRef
  readonly affectedRows: number
  readonly bytesProcessed: number
}

interface RootTable {
  readonly table: StoredTable
  readonly temp: boolean
  /** A view or a table function call, read as the table of its result: never written, not billed itself. */
  readonly derived?: boolean
}

interface Prepared {
  readonly sql: string
  readonly roots: Map<string, RootTable>
  readonly constants: Variable[]
  /** Bytes read to evaluate the views and table functions the statement reads. */
  readonly derivedBytes: number
  readonly error: (error: unknown) => unknown
}

const DML_KINDS = new Set([
  'astInsertStatementNode',
  'astUpdateStatementNode',
  'astDeleteStatementNode',
  'astMergeStatementNode',
  'astTruncateStatementNode',
])

export function isDml(kind: string): boolean {
  return DML_KINDS.has(kind)
}

/**
 * Runs queries and DML statements on ZetaSQL's reference implementation, exactly as written except for table
 * names: ZetaSQL gives table contents only to tables at the root of its catalog, so every dataset table the
 * statement names is registered at the root as `project.dataset.table` and its name in the text is replaced by
 * that one identifier (keeping the name it is known by: `AS table`). Views and table functions are evaluated
 * from their bodies when a statement reads them, and read as tables. System variables become named constants.
 */
export class StatementExecutor {
  readonly #zeta: ZetaSqlService
  readonly #parsedBodies = new Map<string, { source: Buffer; node: TreeNode }>()
  #callCounter = 0

  constructor(zeta: ZetaSqlService) {
    this.#zeta = zeta
  }

  async query(fragment: Fragment, scope: StatementScope): Promise<QueryResult> {
    const prepared = await this.#prepare(fragment, scope)
    await this.#checkPartitionFilters(prepared)
    // Measured while the statement runs: the analysis never fails the statement (see #bytesRead).
    const bytesProcessed = this.#bytesRead(prepared)
    let response: Proto
    try {
      response = await this.#zeta.evaluateQuery(
        prepared.sql,
        this.#catalog(prepared),
        this.#contents(prepared),
      )
    } catch (error) {
      throw prepared.error(error)
    }
    const columns = (response.prepared?.columns ?? []).map((c: Proto) => ({
      field: fieldOfZetaType(c.name, c.type),
      type: c.type,
    }))
    const rows = (response.content?.tableData?.row ?? []).map((r: Proto) => r.cell ?? [])
    return { columns, rows, bytesProcessed: await bytesProcessed }
  }

  /** Evaluates an expression node as `SELECT <expression>`: its type and value. */
  async expression(fragment: Fragment, scope: StatementScope): Promise<Variable> {
    const literal = literalValue(fragment.node)
    if (literal !== undefined) return literal
    const result = await this.query({ ...fragment, asExpression: true }, scope)
    const column = result.columns[0]!
    return { name: '', type: column.type, value: result.rows[0]?.[0] ?? NULL_VALUE }
  }

  async modify(fragment: Fragment, scope: StatementScope): Promise<ModifyResult> {
    const kind = fragment.node.kind
    const prepared = await this.#prepare(fragment, scope)
    if (kind === 'astTruncateStatementNode') {
      const [root] = prepared.roots.values()
      const { table, temp } = root!
      scope.writeTable({ ...table, rows: [], lastModifiedMs: scope.store.now() }, temp)
      return { target: table.ref, affectedRows: table.rows.length, bytesProcessed: 0 }
    }
    await this.#checkPartitionFilters(prepared)
    const bytesProcessed = this.#bytesRead(prepared)
    let response: Proto
    try {
      response = await this.#zeta.evaluateModify(
        prepared.sql,
        this.#catalog(prepared, kind),
        this.#contents(prepared),
      )
    } catch (error) {
      throw prepared.error(error)
    }
    const root = prepared.roots.get(String(response.tableName).toLowerCase())
    if (root === undefined) throw new Error(`ZetaSQL modified an unknown table ${response.tableName}`)
    if (root.derived)
      throw invalidQuery(`Cannot modify ${tableName(root.table.ref)}: it is a view or a table function`)
    const changed = applyChanges(root.table, response.content ?? [], () => scope.store.nextRowId())
    scope.writeTable({ ...root.table, rows: changed.rows, lastModifiedMs: scope.store.now() }, root.temp)
    return {
      target: root.table.ref,
      affectedRows: changed.affected,
      bytesProcessed: await bytesProcessed,
    }
  }

  /**
   * A dry run of a query or DML statement: resolved by ZetaSQL (an invalid statement fails as it would), not
   * run; answers the logical bytes of the columns it reads.
   */
  async estimate(fragment: Fragment, scope: StatementScope): Promise<number> {
    const prepared = await this.#prepare(fragment, scope)
    let resolved: Proto
    try {
      resolved = await this.#zeta.analyze(prepared.sql, this.#catalog(prepared))
    } catch (error) {
      throw prepared.error(error)
    }
    assertPartitionFilters(resolved, this.#permanentTables(prepared))
    return this.#bytesRead(prepared)
  }

  /** Resolves a DDL statement (table names replaced as for queries) and answers ZetaSQL's resolved AST. */
  async analyze(fragment: Fragment, scope: StatementScope): Promise<Proto> {
    const prepared = await this.#prepare(fragment, scope)
    try {
      return await this.#zeta.analyze(prepared.sql, this.#catalog(prepared))
    } catch (error) {
      throw prepared.error(error)
    }
  }

  /** Parses a stored body (a view's query, a table function's) once; answers its single statement. */
  async parseBody(text: string): Promise<Fragment> {
    let parsed = this.#parsedBodies.get(text)
    if (parsed === undefined) {
      const source = Buffer.from(text)
      const node = statementList(await this.#zeta.parseScript(text))[0]
      if (node === undefined) throw invalidQuery(`empty body: ${text}`)
      parsed = { source, node }
      this.#parsedBodies.set(text, parsed)
    }
    return parsed
  }

  // ---- preparing a statement ----

  async #prepare(fragment: Fragment, scope: StatementScope): Promise<Prepared> {
    const { source, node } = fragment
    const references = referencesOf(node)
    const roots = new Map<string, RootTable>()
    let derivedBytes = 0
    const constants: Variable[] = [...scope.variables()]
    const edits = new TextEdits(source.subarray(node.start, node.end))
    const local = (name: string) => references.localNames.has(name.toLowerCase())
    for (const reference of references.tables) {
      const { parts } = reference
      if (parts.length === 1 && local(parts[0]!)) continue
      if (parts.length > 1 && local(parts[0]!) && reference.place !== 'call') continue
      const replace = (text: string, end = reference.end) =>
        edits.replace(reference.start - node.start, end - node.start, text)
      if (reference.place === 'call') {
        const rootName = `__emulator_call_${++this.#callCounter}`
        const routine = this.#routine(parts, scope)
        const result = await this.#callRoutine(routine, reference, fragment, scope)
        derivedBytes += result.bytesProcessed
        const table = this.#resultTable(routine.ref.routineId, result, scope)
        roots.set(rootName, { table, temp: true, derived: true })
        replace(quoteIdentifier(rootName), callEnd(source, reference))
        continue
      }
      if (parts.length === 1) {
        const temp = scope.tempTable(parts[0]!)
        if (temp !== undefined) {
          roots.set(parts[0]!.toLowerCase(), { table: temp, temp: true })
          continue
        }
        if (scope.defaultDataset === undefined)
          throw invalidQuery(
            `Table name "${parts[0]}" missing dataset while no default dataset is set in the request.${this.#at(fragment, reference.start)}`,
          )
      }
      const ref = resolveTablePath(parts, scope)
      const rootName = `${ref.projectId}.${ref.datasetId}.${ref.tableId}`
      const stored = scope.store.getTable(ref)
      if (stored === undefined)
        throw notFound(
          `Not found: Table ${tableName(ref)} was not found in location ${scope.location ?? 'US'}`,
        )
      if (stored.type === 'VIEW') {
        const result = await this.#readView(stored, scope)
        derivedBytes += result.bytesProcessed
        roots.set(rootName.toLowerCase(), {
          table: this.#resultTable(ref.tableId, result, scope, ref),
          temp: false,
          derived: true,
        })
      } else {
        roots.set(rootName.toLowerCase(), { table: stored, temp: false })
      }
      const keepName = reference.place === 'aliasable' && !reference.aliased
      replace(quoteIdentifier(rootName) + (keepName ? ` AS ${quoteIdentifier(ref.tableId)}` : ''))
    }
    for (const variable of references.systemVariables) {
      const value = scope.systemVariable(variable.path)
      if (value === undefined)
        throw invalidQuery(
          `The BigQuery emulator does not know the system variable @@${variable.path.join('.')}`,
        )
      const name = `__emulator_system_${variable.path.join('_')}`
      constants.push({ ...value, name })
      edits.replace(variable.start - node.start, variable.end - node.start, quoteIdentifier(name))
    }
    const { text, toSource } = edits.apply()
    const prefix = fragment.asExpression ? 'SELECT ' : ''
    const sql = prefix + text
    const error = (e: unknown) =>
      translateError(e, sql, prefix.length, (offset) => node.start + toSource(offset), source)
    return { sql, roots, constants, derivedBytes, error }
  }

  #routine(parts: readonly string[], scope: StatementScope): StoredRoutine {
    const [projectId, datasetId, routineId] =
      parts.length === 3
        ? parts
        : parts.length === 2
          ? [scope.projectId, ...parts]
          : [undefined, undefined, parts[0]]
    const routine =
      projectId === undefined ? undefined : scope.store.getRoutine(projectId, datasetId!, routineId!)
    if (routine === undefined) throw invalidQuery(`Table-valued function not found: ${parts.join('.')}`)
    return routine
  }

  /** A table function call: its arguments evaluated, then its body with the arguments as named constants. */
  async #callRoutine(
    routine: StoredRoutine,
    reference: TableReference,
    fragment: Fragment,
    scope: StatementScope,
  ): Promise<QueryResult> {
    const args = reference.args ?? []
    if (args.length !== routine.arguments.length)
      throw invalidQuery(
        `Table-valued function ${routine.ref.routineId} takes ${routine.arguments.length} arguments, got ${args.length}`,
      )
    const constants: Variable[] = []
    for (const [i, arg] of args.entries()) {
      const value = await this.expression({ source: fragment.source, node: arg }, scope)
      const parameter = routine.arguments[i]!
      if (typeText(value.type) !== typeText(parameter.type) && !isNull(value.value))
        throw invalidQuery(
          `Argument ${parameter.name} of ${routine.ref.routineId} is ${typeText(parameter.type)}, got ${typeText(value.type)}`,
        )
      constants.push({ name: parameter.name, type: parameter.type, value: value.value })
    }
    const body = await this.parseBody(routine.body)
    return this.query(body, bodyScope(scope, routine.ref.projectId, constants))
  }

  async #readView(view: StoredTable, scope: StatementScope): Promise<QueryResult> {
    const body = await this.parseBody(view.viewQuery ?? '')
    return this.query(body, bodyScope(scope, view.ref.projectId, []))
  }

  #resultTable(name: string, result: QueryResult, scope: StatementScope, ref?: TableRef): StoredTable {
    const now = scope.store.now()
    return {
      ref: ref ?? { projectId: '', datasetId: '', tableId: name },
      type: 'TABLE',
      columns: result.columns,
      rows: result.rows.map((cells) => ({ id: scope.store.nextRowId(), cells })),
      metadata: {},
      creationMs: now,
      lastModifiedMs: now,
    }
  }

  /**
   * The catalog of a prepared statement: one object per statement (and keyed or not), so the service hashes it
   * once for its checks, its bytes and its run.
   */
  #catalog(prepared: Prepared, kind?: string): Proto {
    const keyed = kind === 'astUpdateStatementNode' || kind === 'astDeleteStatementNode'
    let catalogs = preparedCatalogs.get(prepared)
    if (catalogs === undefined) preparedCatalogs.set(prepared, (catalogs = new Map()))
    let catalog = catalogs.get(keyed)
    if (catalog === undefined) catalogs.set(keyed, (catalog = this.#newCatalog(prepared, keyed)))
    return catalog
  }

  #newCatalog(prepared: Prepared, keyed: boolean): Proto {
    return {
      name: 'emulator',
      table: [...prepared.roots.entries()].map(([name, { table }]) => ({
        name,
        column: [
          { name: ROW_ID_COLUMN, type: { typeKind: 'TYPE_INT64' }, isPseudoColumn: true },
          ...table.columns.map((c) => ({ name: c.field.name, type: c.type })),
        ],
        ...(keyed ? { primaryKeyColumnIndex: [0] } : {}),
      })),
      constant: prepared.constants.map((v) => ({ namePath: [v.name], type: v.type, value: v.value })),
      builtinFunctionOptions: BUILTIN_FUNCTION_OPTIONS,
    }
  }

  #contents(prepared: Prepared): Record<string, Proto> {
    const out: Record<string, Proto> = {}
    for (const [name, { table }] of prepared.roots) out[name] = tableContent(table.rows)
    return out
  }

  /** BigQuery's require_partition_filter on the tables the statement reads (see partition-filter.ts). */
  async #checkPartitionFilters(prepared: Prepared): Promise<void> {
    const tables = this.#permanentTables(prepared)
    if (![...tables.values()].some((t) => t.metadata.requirePartitionFilter === true)) return
    let resolved: Proto
    try {
      resolved = await this.#zeta.analyze(prepared.sql, this.#catalog(prepared))
    } catch (error) {
      throw prepared.error(error)
    }
    assertPartitionFilters(resolved, tables)
  }

  #permanentTables(prepared: Prepared): Map<string, StoredTable> {
    const tables = new Map<string, StoredTable>()
    for (const [name, root] of prepared.roots) if (!root.temp && !root.derived) tables.set(name, root.table)
    return tables
  }

  /** Logical bytes of the columns the statement reads (each column of each table once), as on-demand billing counts. */
  async #bytesRead(prepared: Prepared): Promise<number> {
    // Only rows of permanent tables are billed: without any, the analysis could add nothing.
    const billed = [...prepared.roots.values()].some((r) => !r.temp && !r.derived && r.table.rows.length > 0)
    if (!billed) return prepared.derivedBytes
    let resolved: Proto
    try {
      resolved = await this.#zeta.analyze(prepared.sql, this.#catalog(prepared))
    } catch {
      return prepared.derivedBytes
    }
    let bytes = prepared.derivedBytes
    for (const [name, columns] of columnsRead(resolved)) {
      const root = prepared.roots.get(name)
      if (root === undefined || root.temp || root.derived) continue
      for (const index of columns) {
        const column = root.table.columns[index]
        if (column === undefined) continue
        bytes += columnBytes(root.table.rows, index, column.type)
      }
    }
    return bytes
  }

  #at(fragment: Fragment, offset: number): string {
    const { line, column } = lineAndColumn(fragment.source, offset)
    return ` at [${line}:${column}]`
  }
}

/**
 * A STRING, INT64 or BOOL literal's value as ZetaSQL's parser read it (unescaped), without a round trip to the
 * evaluator: scripts set step labels and DDL sets descriptions with literals, dozens of them per merge.
 */
function literalValue(node: TreeNode): Variable | undefined {
  switch (node.kind) {
    case 'astStringLiteralNode':
      return {
        name: '',
        type: { typeKind: 'TYPE_STRING' },
        value: { stringValue: String(node.fields.stringValue) },
      }
    case 'astBooleanLiteralNode':
      return { name: '', type: { typeKind: 'TYPE_BOOL' }, value: { boolValue: node.fields.value === true } }
    case 'astIntLiteralNode': {
      const image = String(node.fields.image)
      return /^(0x[0-9a-f]+|\d+)$/i.test(image)
        ? { name: '', type: { typeKind: 'TYPE_INT64' }, value: { int64Value: BigInt(image).toString() } }
        : undefined
    }
    default:
      return undefined
  }
}

/** `dataset.table` or `project.dataset.table` (each part possibly written with dots inside backticks). */
export function resolveTablePath(
  parts: readonly string[],
  scope: Pick<StatementScope, 'projectId' | 'defaultDataset' | 'location' | 'store'>,
): TableRef {
  let ref: TableRef
  if (parts.length === 3) ref = { projectId: parts[0]!, datasetId: parts[1]!, tableId: parts[2]! }
  else if (parts.length === 2) ref = { projectId: scope.projectId, datasetId: parts[0]!, tableId: parts[1]! }
  else if (parts.length === 1 && scope.defaultDataset !== undefined)
    ref = { projectId: scope.projectId, datasetId: scope.defaultDataset, tableId: parts[0]! }
  else throw invalidQuery(`Invalid table name: ${parts.join('.')}`)
  const dataset = scope.store.getDataset(ref.projectId, ref.datasetId)
  const elsewhere =
    dataset !== undefined &&
    scope.location !== undefined &&
    dataset.location.toLowerCase() !== scope.location.toLowerCase()
  if (dataset === undefined || elsewhere)
    throw notFound(
      `Not found: Dataset ${ref.projectId}:${ref.datasetId} was not found in location ${scope.location ?? dataset?.location ?? 'US'}`,
    )
  return ref
}

/** `scope` with more variables visible (named constants). */
export function withVariables(scope: StatementScope, extra: readonly Variable[]): StatementScope {
  return {
    store: scope.store,
    projectId: scope.projectId,
    ...(scope.defaultDataset === undefined ? {} : { defaultDataset: scope.defaultDataset }),
    ...(scope.location === undefined ? {} : { location: scope.location }),
    tempTable: (name) => scope.tempTable(name),
    variables: () => [...scope.variables(), ...extra],
    systemVariable: (path) => scope.systemVariable(path),
    writeTable: (table, temp) => scope.writeTable(table, temp),
  }
}

/** The scope a view or table function body runs in: tables only (no script variables or temporary tables). */
function bodyScope(outer: StatementScope, projectId: string, constants: readonly Variable[]): StatementScope {
  return {
    store: outer.store,
    projectId,
    ...(outer.location === undefined ? {} : { location: outer.location }),
    tempTable: () => undefined,
    variables: () => constants,
    systemVariable: () => undefined,
    writeTable: () => {
      throw new Error('a view or table function body cannot write')
    },
  }
}

/** Applies ZetaSQL's DML answer (operation, row id in the pseudo-column or the old key, new cells) to the rows. */
function applyChanges(
  table: StoredTable,
  changes: readonly Proto[],
  nextRowId: () => number,
): { rows: Row[]; affected: number } {
  const byId = new Map(table.rows.map((row) => [row.id, row]))
  const inserted: Row[] = []
  const required = table.columns.flatMap((c, i) => (c.field.mode === 'REQUIRED' ? [i] : []))
  const checkRequired = (cells: readonly Value[]) => {
    for (const index of required)
      if (isNull(cells[index] ?? NULL_VALUE))
        throw invalidQuery(
          `Cannot write NULL to column ${table.columns[index]!.field.name} of table ${tableName(table.ref)}: the column is REQUIRED`,
        )
  }
  for (const change of changes) {
    const cells: Value[] = (change.cell ?? []).slice(1)
    switch (change.operation) {
      case 'INSERT':
        checkRequired(cells)
        inserted.push({ id: nextRowId(), cells })
        break
      case 'UPDATE': {
        const id = Number(change.oldPrimaryKey?.[0]?.int64Value ?? change.cell[0].int64Value)
        checkRequired(cells)
        byId.set(id, { id, cells })
        break
      }
      case 'DELETE':
        byId.delete(Number(change.oldPrimaryKey[0].int64Value))
        break
      default:
        throw new Error(`unknown DML operation ${change.operation}`)
    }
  }
  return { rows: [...byId.values(), ...inserted], affected: changes.length }
}

/** A ZetaSQL failure as BigQuery reports it: invalid statements with `at [line:column]` of the script. */
function translateError(
  error: unknown,
  sql: string,
  prefixLength: number,
  toSource: (offset: number) => number,
  source: Buffer,
): unknown {
  if (!(error instanceof ZetaSqlError)) return error
  if (/^Evaluator does not support|not supported by the reference/i.test(error.message))
    return new BigQueryError(
      'notImplemented',
      `BigQuery emulator: ZetaSQL's reference implementation cannot run this: ${error.message}`,
    )
  if (error.code !== 3 || error.position === undefined) return invalidQuery(error.message)
  const text = Buffer.from(sql)
  let offset = 0
  for (let line = 1; line < error.position.line && offset < text.length; offset++)
    if (text[offset] === 0x0a) line++
  offset += error.position.column - 1
  const { line, column } = lineAndColumn(source, toSource(Math.max(0, offset - prefixLength)))
  return invalidQuery(`${error.message} at [${line}:${column}]`)
}

/** The byte after a table function call's `)`. */
function callEnd(source: Buffer, reference: TableReference): number {
  const end = reference.callEnd ?? reference.end
  const close = source.lastIndexOf(0x29, end - 1)
  return close >= reference.end ? close + 1 : end
}

export function quoteIdentifier(name: string): string {
  return '`' + name.replaceAll('\\', '\\\\').replaceAll('`', '\\`') + '`'
}

/** A statement's references: its parse tree is shared and never changed, so they are collected once. */
function referencesOf(node: TreeNode): ReturnType<typeof collectReferences> {
  let references = referencesByNode.get(node)
  if (references === undefined) referencesByNode.set(node, (references = collectReferences([node])))
  return references
}
const referencesByNode = new WeakMap<TreeNode, ReturnType<typeof collectReferences>>()

/**
 * A table's content as ZetaSQL reads it (the row id first). A table's rows are never changed (a write stores new
 * ones): one TableContent per rows, which the service encodes once.
 */
function tableContent(rows: readonly Row[]): TableContent {
  let content = contentOf.get(rows)
  if (content === undefined) {
    content = new TableContent(() => ({
      tableData: { row: rows.map((r) => ({ cell: [{ int64Value: String(r.id) }, ...r.cells] })) },
    }))
    contentOf.set(rows, content)
  }
  return content
}
const contentOf = new WeakMap<readonly Row[], TableContent>()

const preparedCatalogs = new WeakMap<Prepared, Map<boolean, Proto>>()

/**
 * The columns (0-based, the row id excluded) each table scan of a resolved statement reads, by table name. An
 * analysis answer is shared and never changed: its scans are found once.
 */
function columnsRead(resolved: Proto): ReadonlyMap<string, ReadonlySet<number>> {
  let read = scansOf.get(resolved)
  if (read !== undefined) return read
  const found = new Map<string, Set<number>>()
  visitObjects(resolved, (key, value) => {
    if (key !== 'resolvedTableScanNode') return
    const name = String(value.table?.name ?? '').toLowerCase()
    const columns = found.get(name) ?? new Set<number>()
    for (const index of value.columnIndexList ?? []) if (Number(index) > 0) columns.add(Number(index) - 1)
    found.set(name, columns)
  })
  read = found
  scansOf.set(resolved, read)
  return read
}
const scansOf = new WeakMap<object, ReadonlyMap<string, ReadonlySet<number>>>()

/**
 * The logical bytes of one column over `rows`. A table's rows are never changed (a write stores new ones), so
 * the sum is kept per rows, column and type.
 */
function columnBytes(rows: readonly Row[], index: number, type: Proto): number {
  let byColumn = bytesOf.get(rows)
  if (byColumn === undefined) bytesOf.set(rows, (byColumn = new Map()))
  const known = byColumn.get(index)
  if (known !== undefined && known.type === type) return known.bytes
  let bytes = 0
  for (const row of rows) bytes += logicalBytes(type, row.cells[index] ?? NULL_VALUE)
  byColumn.set(index, { type, bytes })
  return bytes
}
const bytesOf = new WeakMap<readonly Row[], Map<number, { type: Proto; bytes: number }>>()

function visitObjects(value: Proto, visit: (key: string, value: Proto) => void): void {
  if (value === null || typeof value !== 'object') return
  if (Array.isArray(value)) {
    for (const item of value) visitObjects(item, visit)
    return
  }
  for (const [key, child] of Object.entries(value)) {
    if (child !== null && typeof child === 'object') {
      if (!Array.isArray(child)) visit(key, child)
      visitObjects(child, visit)
    }
  }
}
