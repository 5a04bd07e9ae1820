/**
 * Pure resolution of a parsed dimsync.yaml document into a frozen ProjectSpec: shape checks (zod), then
 * defaults precedence (table > defaults > built-in) and the rules that span fields. All problems are
 * collected and thrown together as one ConfigError, so a user fixes the file in one pass.
 */
import path from 'node:path'
import { ConfigError } from '../core/errors.ts'
import { COLUMN_PRESETS } from '../core/metadata-columns.ts'
import type { ProjectSpec, TableSpec } from '../core/table-spec.ts'
import {
  awsSchema,
  configDocumentSchema,
  defaultsSchema,
  localStoreSchema,
  tableSchema,
} from './config-schema.ts'
import { deepFreeze } from './deep-freeze.ts'
import { IssueList } from './issue-list.ts'
import { show } from './messages.ts'
import { resolveAws } from './resolve-deploy-options.ts'
import { resolveFacts } from './resolve-facts.ts'
import { resolveTable } from './resolve-table.ts'
import { checkMetadataDistinct, checkOwnOptions, resolveColumns, type Options } from './table-options.ts'
import {
  resolveWarehouse,
  warehouseConflict,
  warehouseSectionSchema,
  warehouseTypeOf,
} from './warehouse-configs.ts'
import { fallbackErrorMap, fromZodIssues } from './zod-issues.ts'

export { normalizeOpenEnd, OPEN_END_MINIMUM } from './open-end.ts'
export { DEFAULT_MAX_DELETE_SHARE } from './resolve-table.ts'
export { DEFAULT_WAREHOUSE } from './warehouse-configs.ts'

export const DEFAULT_STAGING = Object.freeze({ type: 'local', path: '.dimsync/staging' })
export const DEFAULT_STATE = Object.freeze({ type: 'local', path: '.dimsync/state' })

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/**
 * Resolves a parsed YAML document (plain data) into a ProjectSpec. `configPath` is made absolute; every relative
 * path in the config resolves against its folder. Throws ConfigError listing every problem found.
 */
export function resolveProject(document: unknown, configPath: string): ProjectSpec {
  const file = path.resolve(configPath)
  const baseDir = path.dirname(file)
  const issues = new IssueList()
  if (document === null || document === undefined) {
    throw new ConfigError(file, ['(root): the file is empty; expected a mapping with version and tables'])
  }
  const parsed = configDocumentSchema.safeParse(document, { error: fallbackErrorMap })
  if (!parsed.success)
    for (const issue of fromZodIssues(parsed.error.issues)) {
      // The warehouse section is reported by the shape its `type` picks (see below), not as a union mismatch.
      if (issue.path[0] !== 'warehouse') issues.add(issue.path, issue.message)
    }
  if (!isRecord(document)) throw new ConfigError(file, issues.render())
  const warehouseType = warehouseTypeOf(document.warehouse)

  // Each part is parsed again on its own so one broken table does not hide the rule checks of the others.
  const defaultsParsed = defaultsSchema.nullable().optional().safeParse(document.defaults)
  const defaults = defaultsParsed.success ? checkDefaults(defaultsParsed.data ?? {}, issues) : undefined

  const rawTables = Array.isArray(document.tables) ? document.tables : []
  const tables: TableSpec[] = []
  rawTables.forEach((raw, index) => {
    const table = tableSchema.safeParse(raw)
    if (table.success && defaults !== undefined) {
      const spec = resolveTable(index, table.data, defaults, issues)
      if (spec !== undefined) tables.push(spec)
    }
  })
  checkUnique(rawTables, 'name', issues, (raw) => raw.name, 'table name')
  checkUnique(rawTables, 'target', issues, (raw) => targetOf(raw), 'target', true)
  const facts = resolveFacts(document.facts, tables, issues)

  const aws = awsSchema.nullable().optional().safeParse(document.aws)
  const awsSpec =
    aws.success && aws.data != null
      ? resolveAws(aws.data, tables, (where, message) => issues.add(where, message))
      : undefined
  // The warehouse's `type` picks the schema whose messages are reported, so a BigQuery block is not told DuckDB's.
  const warehouse = warehouseSectionSchema(warehouseType)
    .nullable()
    .optional()
    .safeParse(document.warehouse, { error: fallbackErrorMap })
  if (!warehouse.success)
    for (const issue of fromZodIssues(warehouse.error.issues))
      issues.add(['warehouse', ...issue.path], issue.message)
  const conflict = warehouse.success ? warehouseConflict(warehouseType, warehouse.data) : undefined
  if (conflict !== undefined) issues.add(['warehouse'], conflict)
  const staging = localStoreSchema.nullable().optional().safeParse(document.staging)
  const state = localStoreSchema.nullable().optional().safeParse(document.state)
  const rendered = issues.render()
  if (rendered.length > 0 || !warehouse.success || !staging.success || !state.success || !aws.success) {
    throw new ConfigError(file, rendered)
  }

  return deepFreeze<ProjectSpec>({
    configPath: file,
    baseDir,
    warehouse: resolveWarehouse(warehouseType, warehouse.data, baseDir),
    staging: { type: 'local', path: path.resolve(baseDir, staging.data?.path ?? DEFAULT_STAGING.path) },
    state: { type: 'local', path: path.resolve(baseDir, state.data?.path ?? DEFAULT_STATE.path) },
    tables,
    ...(facts.length > 0 ? { facts } : {}),
    ...(awsSpec !== undefined ? { aws: awsSpec } : {}),
  })
}

function targetOf(raw: unknown): unknown {
  if (!isRecord(raw)) return undefined
  if (raw.target !== undefined) return raw.target
  return typeof raw.name === 'string' ? `dim_${raw.name}` : undefined
}

function checkUnique(
  rawTables: readonly unknown[],
  field: string,
  issues: IssueList,
  valueOf: (raw: Record<string, unknown>) => unknown,
  what: string,
  ignoreCase = false,
): void {
  const seen = new Map<string, number>()
  rawTables.forEach((raw, index) => {
    if (!isRecord(raw)) return
    const value = valueOf(raw)
    if (typeof value !== 'string') return
    const norm = ignoreCase ? value.toLowerCase() : value
    const first = seen.get(norm)
    if (first === undefined) seen.set(norm, index)
    else issues.add(['tables', index, field], `duplicate ${what} ${show(value)} (also tables[${first}])`)
  })
}

/** Checks of option values that do not depend on a table; done once so a bad default is reported once. */
function checkDefaults(defaults: Options, issues: IssueList): Options | undefined {
  const before = issues.items.length
  checkOwnOptions(['defaults'], defaults, issues)
  if (defaults.columns !== undefined) {
    const names = resolveColumns(defaults.columns, COLUMN_PRESETS.dimsync)
    checkMetadataDistinct(['defaults', 'columns'], defaults.columns, names, issues)
  }
  return issues.items.length === before ? defaults : undefined
}
