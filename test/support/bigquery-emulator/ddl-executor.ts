import { duplicate, invalidQuery, notFound } from './api-errors.ts'
import { convertValue, setDataTypeRefusal } from './column-type-change.ts'
import { fieldOfZetaType } from './field-types.ts'
import { child, childList, pathNames, type TreeNode } from './sql-tree.ts'
import {
  resolveTablePath,
  type Fragment,
  type StatementExecutor,
  type StatementScope,
} from './statement-executor.ts'
import { partitionExpirationSet, withPartitionExpiration } from './partition-expiration.ts'
import { clusteringOf, metadataOfOptions, partitioningOf, type OptionValue } from './table-rules.ts'
import { tableName, type Column, type StoredTable, type TableMetadata, type TableRef } from './table-store.ts'
import type { Proto } from './zetasql-service.ts'

/** What a script's DDL may do besides reading: temporary tables, and knowing whether a transaction is open. */
export interface DdlScope extends StatementScope {
  readonly inTransaction: boolean
  putTempTable(table: StoredTable): void
  dropTempTable(name: string): boolean
}

export interface DdlOutcome {
  /** BigQuery's `statistics.query.statementType`. */
  readonly statementType: string
  /** `statistics.query.ddlOperationPerformed`: CREATE, SKIP, REPLACE, DROP (ALTER for ALTER TABLE). */
  readonly operation: string
  readonly target?: TableRef
  readonly bytesProcessed: number
}

const DDL_KINDS = new Set([
  'astCreateTableStatementNode',
  'astCreateViewStatementNode',
  'astCreateTableFunctionStatementNode',
  'astAlterTableStatementNode',
  'astDropStatementNode',
  'astDropTableFunctionStatementNode',
])

export function isDdl(kind: string): boolean {
  return DDL_KINDS.has(kind)
}

/**
 * Runs CREATE [OR REPLACE] [TEMP] TABLE [IF NOT EXISTS] [AS SELECT], CREATE [OR REPLACE] VIEW, CREATE [OR REPLACE]
 * TABLE FUNCTION, ALTER TABLE ADD COLUMN [IF NOT EXISTS] / SET OPTIONS / ALTER COLUMN DROP NOT NULL / ALTER COLUMN
 * SET DATA TYPE / DROP COLUMN / RENAME COLUMN, DROP TABLE / VIEW / TABLE FUNCTION [IF EXISTS]. ZetaSQL resolves the statement (types, NOT NULL, PARTITION BY, CLUSTER BY); BigQuery's own rules
 * are checked on top (partitioning, clustering, options, no DDL on permanent objects in a transaction), and
 * what BigQuery keeps (descriptions, partitioning, clustering, expiration) is stored with the table.
 */
export async function runDdl(
  executor: StatementExecutor,
  fragment: Fragment,
  scope: DdlScope,
): Promise<DdlOutcome> {
  if (fragment.node.kind === 'astAlterTableStatementNode') {
    const skipped = alterTargetMissing(fragment.node, scope)
    if (skipped !== undefined) return skipped
  }
  const resolved = unwrapStatement(await executor.analyze(fragment, scope))
  const statement = fragment.node
  switch (statement.kind) {
    case 'astCreateTableStatementNode':
      return createTable(executor, fragment, scope, resolved)
    case 'astCreateViewStatementNode':
      return createView(executor, fragment, scope, resolved)
    case 'astCreateTableFunctionStatementNode':
      return createTableFunction(executor, fragment, scope, resolved)
    case 'astAlterTableStatementNode':
      return alterTable(executor, fragment, scope, resolved)
    case 'astDropStatementNode':
    case 'astDropTableFunctionStatementNode':
      return drop(scope, resolved)
    default:
      throw invalidQuery(`The BigQuery emulator does not run ${statement.kind}`)
  }
}

interface Resolved {
  readonly kind: string
  readonly fields: Record<string, Proto>
}

/** The concrete resolved statement with its base classes' fields merged. */
function unwrapStatement(resolved: Proto): Resolved {
  let kind = ''
  let value = resolved
  while (value && typeof value.node === 'string' && value[value.node]) {
    kind = value.node
    value = value[value.node]
  }
  const fields: Record<string, Proto> = {}
  for (let level = value; level; level = level.parent)
    for (const [key, field] of Object.entries(level as Record<string, Proto>))
      if (key !== 'parent' && !(key in fields)) fields[key] = field
  return { kind, fields }
}

/** A DDL name: a temporary table (one part) or `[project.]dataset.name`; permanent objects need their dataset. */
function target(
  namePath: readonly string[],
  scope: DdlScope,
  temp: boolean,
  what: string,
): { ref: TableRef; temp: boolean } {
  const parts = namePath.flatMap((p) => p.split('.'))
  if (temp) {
    if (parts.length !== 1)
      throw invalidQuery(`Temporary ${what} names may not be qualified: ${parts.join('.')}`)
    return { ref: { projectId: '', datasetId: '', tableId: parts[0]! }, temp: true }
  }
  if (parts.length === 1 && scope.tempTable(parts[0]!) !== undefined)
    return { ref: { projectId: '', datasetId: '', tableId: parts[0]! }, temp: true }
  if (parts.length === 1 && scope.defaultDataset === undefined)
    throw invalidQuery(
      `${capitalize(what)} "${parts[0]}" must be qualified with a dataset (e.g. dataset.${what}).`,
    )
  return { ref: resolveTablePath(parts, scope), temp: false }
}

function refusePermanentDdlInTransaction(scope: DdlScope, temp: boolean, statementType: string): void {
  if (scope.inTransaction && !temp)
    throw invalidQuery(
      `${statementType} on a permanent object is not supported inside a transaction; only temporary tables may be created or dropped there`,
    )
}

async function evaluateOptions(
  executor: StatementExecutor,
  fragment: Fragment,
  holder: TreeNode | undefined,
  scope: StatementScope,
): Promise<OptionValue[]> {
  const list = holder === undefined ? undefined : child(holder, 'optionsList')
  if (list === undefined) return []
  const out: OptionValue[] = []
  for (const entry of childList(list, 'optionsEntries')) {
    const name = String(child(entry, 'name')?.fields.idString ?? '')
    const valueNode = child(entry, 'value')
    if (valueNode === undefined) continue
    const value = await executor.expression({ source: fragment.source, node: valueNode }, scope)
    out.push({ name, type: value.type, value: value.value })
  }
  return out
}

/** Column descriptions and other column options, by column name, from the parse tree. */
async function columnOptions(
  executor: StatementExecutor,
  fragment: Fragment,
  scope: StatementScope,
  definitions: readonly TreeNode[],
): Promise<Map<string, TableMetadata>> {
  const out = new Map<string, TableMetadata>()
  for (const definition of definitions) {
    const name = String(child(definition, 'name')?.fields.idString ?? '')
    const options = await evaluateOptions(executor, fragment, child(definition, 'schema'), scope)
    out.set(name.toLowerCase(), metadataOfOptions('column', options, false))
  }
  return out
}

function columnsOf(definitions: readonly Proto[], options: ReadonlyMap<string, TableMetadata>): Column[] {
  return definitions.map((definition) => {
    const annotations = definition.annotations ?? {}
    const description = options.get(String(definition.name).toLowerCase())?.description
    return {
      field: fieldOfZetaType(definition.name, definition.type, {
        required: annotations.notNull === true,
        ...(description === undefined ? {} : { description }),
        parameters: annotations.typeParameters,
      }),
      type: definition.type,
    }
  })
}

/** CREATE of an existing object: IF NOT EXISTS does nothing, OR REPLACE goes on, anything else is a duplicate. */
function skipOrRefuseExisting(
  existing: unknown,
  resolved: Resolved,
  statementType: string,
  ref: TableRef,
  what: string,
): DdlOutcome | undefined {
  if (existing === undefined) return undefined
  const mode = resolved.fields.createMode
  if (mode === 'CREATE_IF_NOT_EXISTS')
    return { statementType, operation: 'SKIP', target: ref, bytesProcessed: 0 }
  if (mode !== 'CREATE_OR_REPLACE') throw duplicate(`Already Exists: ${what}`)
  return undefined
}

async function createTable(
  executor: StatementExecutor,
  fragment: Fragment,
  scope: DdlScope,
  resolved: Resolved,
): Promise<DdlOutcome> {
  const statement = fragment.node
  const asSelect = resolved.kind === 'resolvedCreateTableAsSelectStmtNode'
  const statementType = asSelect ? 'CREATE_TABLE_AS_SELECT' : 'CREATE_TABLE'
  const isTemp = resolved.fields.createScope === 'CREATE_TEMP'
  const { ref, temp } = target(resolved.fields.namePath, scope, isTemp, 'table')
  refusePermanentDdlInTransaction(scope, temp, statementType)
  const existing = temp ? scope.tempTable(ref.tableId) : scope.store.getTable(ref)
  const skipped = skipOrRefuseExisting(
    existing,
    resolved,
    statementType,
    ref,
    `Table ${temp ? ref.tableId : tableName(ref)}`,
  )
  if (skipped !== undefined) return skipped

  const partitioning = partitioningOf(resolved.fields.partitionByList ?? [])
  const clustering = clusteringOf(resolved.fields.clusterByList ?? [])
  const partitioned =
    partitioning.timePartitioning !== undefined || partitioning.rangePartitioning !== undefined
  const options = metadataOfOptions(
    'table',
    await evaluateOptions(executor, fragment, statement, scope),
    partitioned,
  )
  const definitions = childList(child(statement, 'tableElementList') ?? statement, 'elements').filter(
    (e) => e.kind === 'astColumnDefinitionNode',
  )
  const columns = columnsOf(
    resolved.fields.columnDefinitionList ?? [],
    await columnOptions(executor, fragment, scope, definitions),
  )
  if (columns.length > 10_000)
    throw invalidQuery(`Too many columns: ${columns.length}; a table has at most 10000`)
  const primaryKey = resolved.fields.primaryKey?.columnNameList as string[] | undefined

  let rows: StoredTable['rows'] = []
  let bytesProcessed = 0
  if (asSelect) {
    const query = child(statement, 'query')
    if (query === undefined) throw invalidQuery('CREATE TABLE AS SELECT without a query')
    const result = await executor.query({ source: fragment.source, node: query }, scope)
    rows = result.rows.map((cells) => ({ id: scope.store.nextRowId(), cells }))
    bytesProcessed = result.bytesProcessed
  }
  const now = scope.store.now()
  const dataset = temp ? undefined : scope.store.getDataset(ref.projectId, ref.datasetId)
  const defaultExpiration = dataset?.defaultTableExpirationMs
  const table: StoredTable = {
    ref,
    type: 'TABLE',
    columns,
    rows,
    metadata: withPartitionExpiration(
      {
        ...(defaultExpiration === undefined ? {} : { expirationMs: now + defaultExpiration }),
        ...options,
        ...partitioning,
        ...clustering,
        ...(primaryKey && primaryKey.length > 0 ? { primaryKey } : {}),
      },
      dataset,
    ),
    creationMs: now,
    lastModifiedMs: now,
  }
  if (temp) scope.putTempTable(table)
  else scope.store.putTable(table)
  return {
    statementType,
    operation: existing === undefined ? 'CREATE' : 'REPLACE',
    target: ref,
    bytesProcessed,
  }
}

async function createView(
  executor: StatementExecutor,
  fragment: Fragment,
  scope: DdlScope,
  resolved: Resolved,
): Promise<DdlOutcome> {
  const statement = fragment.node
  if (resolved.fields.createScope === 'CREATE_TEMP') throw invalidQuery('BigQuery has no temporary views')
  const { ref } = target(resolved.fields.namePath, scope, false, 'view')
  refusePermanentDdlInTransaction(scope, false, 'CREATE_VIEW')
  const existing = scope.store.getTable(ref)
  const skipped = skipOrRefuseExisting(existing, resolved, 'CREATE_VIEW', ref, `Table ${tableName(ref)}`)
  if (skipped !== undefined) return skipped
  if (existing !== undefined && existing.type !== 'VIEW')
    throw invalidQuery(`${tableName(ref)} is a table; CREATE OR REPLACE VIEW replaces only views`)
  const query = child(statement, 'query')
  if (query === undefined) throw invalidQuery('CREATE VIEW without a query')
  const options = metadataOfOptions(
    'view',
    await evaluateOptions(executor, fragment, statement, scope),
    false,
  )
  const columns = (resolved.fields.outputColumnList ?? []).map((c: Proto) => ({
    field: fieldOfZetaType(c.name, c.column.type),
    type: c.column.type,
  }))
  const now = scope.store.now()
  scope.store.putTable({
    ref,
    type: 'VIEW',
    columns,
    rows: [],
    metadata: options,
    viewQuery: fragment.source.subarray(query.start, query.end).toString('utf8'),
    creationMs: now,
    lastModifiedMs: now,
  })
  return {
    statementType: 'CREATE_VIEW',
    operation: existing === undefined ? 'CREATE' : 'REPLACE',
    target: ref,
    bytesProcessed: 0,
  }
}

async function createTableFunction(
  executor: StatementExecutor,
  fragment: Fragment,
  scope: DdlScope,
  resolved: Resolved,
): Promise<DdlOutcome> {
  const statement = fragment.node
  const { ref } = target(resolved.fields.namePath, scope, false, 'table function')
  refusePermanentDdlInTransaction(scope, false, 'CREATE_TABLE_FUNCTION')
  const existing = scope.store.getRoutine(ref.projectId, ref.datasetId, ref.tableId)
  const skipped = skipOrRefuseExisting(
    existing,
    resolved,
    'CREATE_TABLE_FUNCTION',
    ref,
    `Function ${tableName(ref)}`,
  )
  if (skipped !== undefined) return skipped
  const query = child(statement, 'query')
  if (query === undefined) throw invalidQuery('CREATE TABLE FUNCTION without a query body')
  const names: string[] = resolved.fields.argumentNameList ?? []
  const types: Proto[] = (resolved.fields.signature?.argument ?? []).map((a: Proto) => a.type)
  scope.store.putRoutine({
    ref: { projectId: ref.projectId, datasetId: ref.datasetId, routineId: ref.tableId },
    arguments: names.map((name, i) => ({ name, type: types[i] })),
    body: fragment.source.subarray(query.start, query.end).toString('utf8'),
    returnColumns: (resolved.fields.outputColumnList ?? []).map((c: Proto) => ({
      field: fieldOfZetaType(c.name, c.column.type),
      type: c.column.type,
    })),
    creationMs: scope.store.now(),
  })
  return {
    statementType: 'CREATE_TABLE_FUNCTION',
    operation: existing === undefined ? 'CREATE' : 'REPLACE',
    target: ref,
    bytesProcessed: 0,
  }
}

/** ALTER TABLE IF EXISTS of a missing table does nothing; without IF EXISTS it is not found. */
function alterTargetMissing(statement: TreeNode, scope: DdlScope): DdlOutcome | undefined {
  const path = child(statement, 'path')
  const parts = path === undefined ? [] : pathNames(path).flatMap((p) => p.split('.'))
  if (parts.length === 1 && scope.tempTable(parts[0]!) !== undefined) return undefined
  const { ref } = target(parts, scope, false, 'table')
  if (scope.store.getTable(ref) !== undefined) return undefined
  if (statement.fields.isIfExists === true)
    return { statementType: 'ALTER_TABLE', operation: 'SKIP', target: ref, bytesProcessed: 0 }
  throw notFound(`Not found: Table ${tableName(ref)}`)
}

async function alterTable(
  executor: StatementExecutor,
  fragment: Fragment,
  scope: DdlScope,
  resolved: Resolved,
): Promise<DdlOutcome> {
  const { ref, temp } = target(resolved.fields.namePath, scope, false, 'table')
  refusePermanentDdlInTransaction(scope, temp, 'ALTER_TABLE')
  let table = temp ? scope.tempTable(ref.tableId) : scope.store.getTable(ref)
  if (table === undefined) {
    if (resolved.fields.isIfExists)
      return { statementType: 'ALTER_TABLE', operation: 'SKIP', target: ref, bytesProcessed: 0 }
    throw notFound(`Not found: Table ${tableName(ref)}`)
  }
  if (table.type === 'VIEW') throw invalidQuery(`${tableName(ref)} is a view; ALTER TABLE changes tables`)
  const actions = childList(child(fragment.node, 'actionList') ?? fragment.node, 'actions')
  // `ALTER TABLE t SET OPTIONS (…)` alone resolves to its own statement kind, without an action list.
  const resolvedActions: Proto[] =
    resolved.kind === 'resolvedAlterTableSetOptionsStmtNode'
      ? [{ node: 'resolvedSetOptionsActionNode', resolvedSetOptionsActionNode: {} }]
      : (resolved.fields.alterActionList ?? [])
  for (const [i, wrapped] of resolvedActions.entries()) {
    const action = unwrapStatement(wrapped)
    const parsed = actions[i]
    if (action.kind === 'resolvedAddColumnActionNode') {
      const definition = action.fields.columnDefinition
      const name = String(definition.name)
      const exists = table.columns.some((c) => c.field.name.toLowerCase() === name.toLowerCase())
      if (exists && action.fields.isIfNotExists) continue
      if (exists) throw invalidQuery(`Column already exists: ${name}`)
      if (definition.annotations?.notNull)
        throw invalidQuery(`Cannot add a REQUIRED column ${name} to an existing table`)
      const parsedDefinition = parsed === undefined ? undefined : child(parsed, 'columnDefinition')
      const options = await columnOptions(
        executor,
        fragment,
        scope,
        parsedDefinition ? [parsedDefinition] : [],
      )
      const [column] = columnsOf([definition], options)
      table = {
        ...table,
        columns: [...table.columns, column!],
        rows: table.rows.map((r) => ({ id: r.id, cells: [...r.cells, {}] })),
      }
    } else if (action.kind === 'resolvedSetOptionsActionNode') {
      const partitioned: boolean =
        table.metadata.timePartitioning !== undefined || table.metadata.rangePartitioning !== undefined
      const options = await evaluateOptions(executor, fragment, parsed, scope)
      table = {
        ...table,
        metadata: partitionExpirationSet(
          { ...table.metadata, ...metadataOfOptions('table', options, partitioned) },
          options,
        ),
      }
    } else if (action.kind === 'resolvedAlterColumnDropNotNullActionNode') {
      // BigQuery relaxes a REQUIRED column to NULLABLE; an already nullable one stays as it is.
      const name = String(action.fields.column)
      const index = table.columns.findIndex((c) => c.field.name.toLowerCase() === name.toLowerCase())
      if (index < 0) throw invalidQuery(`Column not found: ${name}`)
      table = {
        ...table,
        columns: table.columns.map((c, i) =>
          i === index ? { ...c, field: { ...c.field, mode: 'NULLABLE' as const } } : c,
        ),
      }
    } else if (action.kind === 'resolvedAlterColumnSetDataTypeActionNode') {
      table = setDataType(table, action)
    } else if (action.kind === 'resolvedDropColumnActionNode') {
      table = dropColumn(table, action)
    } else if (action.kind === 'resolvedRenameColumnActionNode') {
      table = renameColumn(table, action)
    } else {
      throw invalidQuery(`The BigQuery emulator does not run ALTER TABLE action ${action.kind}`)
    }
  }
  table = { ...table, lastModifiedMs: scope.store.now() }
  if (temp) scope.putTempTable(table)
  else scope.store.putTable(table)
  return { statementType: 'ALTER_TABLE', operation: 'ALTER', target: ref, bytesProcessed: 0 }
}

/** The position of a column by name (BigQuery's names are case-insensitive), -1 when there is none. */
function columnIndex(table: StoredTable, name: string): number {
  return table.columns.findIndex((c) => c.field.name.toLowerCase() === name.toLowerCase())
}

/**
 * ALTER COLUMN [IF EXISTS] SET DATA TYPE: only to a less restrictive type (column-type-change.ts); the stored
 * values are converted, and the mode and description stay.
 */
function setDataType(table: StoredTable, action: Resolved): StoredTable {
  const name = String(action.fields.column)
  const index = columnIndex(table, name)
  if (index < 0) {
    if (action.fields.isIfExists === true) return table
    throw invalidQuery(`Column not found: ${name}`)
  }
  const column = table.columns[index]!
  const toType: Proto = action.fields.updatedType
  const parameters: Proto | undefined = action.fields.updatedTypeParameters
  const { mode, description } = column.field
  const field = {
    ...fieldOfZetaType(column.field.name, toType, { required: mode === 'REQUIRED', parameters }),
    ...(description === undefined ? {} : { description }),
  }
  const refusal = setDataTypeRefusal(column.field, column.type, field, toType)
  if (refusal !== undefined) throw invalidQuery(refusal)
  return {
    ...table,
    columns: table.columns.map((c, i) => (i === index ? { field, type: toType } : c)),
    rows: table.rows.map((r) => ({
      id: r.id,
      cells: r.cells.map((cell, i) => (i === index ? convertValue(column.type, toType, cell) : cell)),
    })),
  }
}

/** DROP COLUMN [IF EXISTS]: the column and its values go; a table keeps at least one column. */
function dropColumn(table: StoredTable, action: Resolved): StoredTable {
  const name = String(action.fields.name)
  const index = columnIndex(table, name)
  if (index < 0) {
    if (action.fields.isIfExists === true) return table
    throw invalidQuery(`Column not found: ${name}`)
  }
  if (table.columns.length === 1)
    throw invalidQuery(`Cannot drop column ${name}: it is the only column of ${tableName(table.ref)}`)
  // BigQuery does not drop a column the table is partitioned or clustered by.
  const { timePartitioning, rangePartitioning, clustering } = table.metadata
  const keys = [timePartitioning?.field, rangePartitioning?.field, ...(clustering?.fields ?? [])]
  if (keys.some((key) => key?.toLowerCase() === name.toLowerCase()))
    throw invalidQuery(
      `Cannot drop column ${name}: ${tableName(table.ref)} is partitioned or clustered by it`,
    )
  return {
    ...table,
    columns: table.columns.filter((_, i) => i !== index),
    rows: table.rows.map((r) => ({ id: r.id, cells: r.cells.filter((_, i) => i !== index) })),
  }
}

/** RENAME COLUMN [IF EXISTS] a TO b: the values stay; b may not name another column. */
function renameColumn(table: StoredTable, action: Resolved): StoredTable {
  const name = String(action.fields.name)
  const newName = String(action.fields.newName)
  const index = columnIndex(table, name)
  if (index < 0) {
    if (action.fields.isIfExists === true) return table
    throw invalidQuery(`Column not found: ${name}`)
  }
  const clash = columnIndex(table, newName)
  if (clash >= 0 && clash !== index) throw invalidQuery(`Column already exists: ${newName}`)
  return {
    ...table,
    columns: table.columns.map((c, i) => (i === index ? { ...c, field: { ...c.field, name: newName } } : c)),
  }
}

function drop(scope: DdlScope, resolved: Resolved): DdlOutcome {
  const objectType =
    resolved.kind === 'resolvedDropTableFunctionStmtNode'
      ? 'TABLE FUNCTION'
      : String(resolved.fields.objectType)
  const statementType = `DROP_${objectType.replaceAll(' ', '_')}`
  const ifExists = resolved.fields.isIfExists === true
  if (objectType === 'TABLE FUNCTION') {
    const { ref } = target(resolved.fields.namePath, scope, false, 'table function')
    refusePermanentDdlInTransaction(scope, false, statementType)
    const dropped = scope.store.deleteRoutine(ref.projectId, ref.datasetId, ref.tableId)
    if (!dropped && !ifExists) throw notFound(`Not found: Function ${tableName(ref)}`)
    return { statementType, operation: dropped ? 'DROP' : 'SKIP', target: ref, bytesProcessed: 0 }
  }
  if (objectType !== 'TABLE' && objectType !== 'VIEW')
    throw invalidQuery(`The BigQuery emulator does not run DROP ${objectType}`)
  const { ref, temp } = target(resolved.fields.namePath, scope, false, objectType.toLowerCase())
  refusePermanentDdlInTransaction(scope, temp, statementType)
  if (temp) {
    const dropped = scope.dropTempTable(ref.tableId)
    if (!dropped && !ifExists) throw notFound(`Not found: Table ${ref.tableId}`)
    return { statementType, operation: dropped ? 'DROP' : 'SKIP', target: ref, bytesProcessed: 0 }
  }
  const existing = scope.store.getTable(ref)
  if (existing === undefined) {
    if (ifExists) return { statementType, operation: 'SKIP', target: ref, bytesProcessed: 0 }
    throw notFound(`Not found: ${objectType === 'VIEW' ? 'View' : 'Table'} ${tableName(ref)}`)
  }
  if ((existing.type === 'VIEW') !== (objectType === 'VIEW'))
    throw invalidQuery(
      `${tableName(ref)} is a ${existing.type === 'VIEW' ? 'view' : 'table'}; use DROP ${existing.type === 'VIEW' ? 'VIEW' : 'TABLE'}`,
    )
  scope.store.deleteTable(ref)
  return { statementType, operation: 'DROP', target: ref, bytesProcessed: 0 }
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}
