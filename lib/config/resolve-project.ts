/**
 * Pure resolution of a parsed dimsync.yaml document into a frozen ProjectSpec: shape checks (zod), then
 * defaults precedence (table > defaults > built-in) and the rules that span fields. All problems are
 * collected and thrown together as one ConfigError, so a user fixes the file in one pass.
 */
import path from 'node:path'
import { ConfigError } from '../core/errors.ts'
import { COLUMN_PRESETS } from '../core/metadata-columns.ts'
import {
  BOTH_BIGQUERY_CREDENTIALS,
  type ProjectSpec,
  type TableSpec,
  type WarehouseSpec,
} from '../core/table-spec.ts'
import {
  awsSchema,
  bigQueryWarehouseSchema,
  configDocumentSchema,
  defaultsSchema,
  localStoreSchema,
  postgresWarehouseSchema,
  tableSchema,
  warehouseSchema,
} from './config-schema.ts'
import { deepFreeze } from './deep-freeze.ts'
import { IssueList } from './issue-list.ts'
import { show } from './messages.ts'
import { resolveAws } from './resolve-deploy-options.ts'
import { resolveFacts } from './resolve-facts.ts'
import { resolveTable } from './resolve-table.ts'
import { checkMetadataDistinct, checkOwnOptions, resolveColumns, type Options } from './table-options.ts'
import { fallbackErrorMap, fromZodIssues } from './zod-issues.ts'

export { normalizeOpenEnd, OPEN_END_MINIMUM } from './open-end.ts'
export { DEFAULT_MAX_DELETE_SHARE } from './resolve-table.ts'

/** Where a postgres warehouse keeps dimensions when the config names no schema. */
const DEFAULT_POSTGRES_SCHEMA = 'public'

export const DEFAULT_WAREHOUSE = Object.freeze({
  type: 'duckdb',
  path: '.dimsync/warehouse.duckdb',
  schema: 'main',
})
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
  const bigQuery = isRecord(document.warehouse) && document.warehouse.type === 'bigquery'
  const postgres = isRecord(document.warehouse) && document.warehouse.type === 'postgres'

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
  const warehouse = (
    bigQuery ? bigQueryWarehouseSchema : postgres ? postgresWarehouseSchema : warehouseSchema
  )
    .nullable()
    .optional()
    .safeParse(document.warehouse, { error: fallbackErrorMap })
  if (!warehouse.success)
    for (const issue of fromZodIssues(warehouse.error.issues))
      issues.add(['warehouse', ...issue.path], issue.message)
  if (warehouse.success && bigQuery && hasKeyAndKeylessAuth(warehouse.data))
    issues.add(['warehouse'], BOTH_BIGQUERY_CREDENTIALS)
  const staging = localStoreSchema.nullable().optional().safeParse(document.staging)
  const state = localStoreSchema.nullable().optional().safeParse(document.state)
  const rendered = issues.render()
  if (rendered.length > 0 || !warehouse.success || !staging.success || !state.success || !aws.success) {
    throw new ConfigError(file, rendered)
  }

  const warehousePath =
    (warehouse.data as { path?: string } | null | undefined)?.path ?? DEFAULT_WAREHOUSE.path
  return deepFreeze<ProjectSpec>({
    configPath: file,
    baseDir,
    warehouse: resolveWarehouse(warehouse.data, () => ({
      type: 'duckdb',
      // DuckDB's in-memory database is a name, not a file; resolving it would create a file called ":memory:".
      path: warehousePath === ':memory:' ? warehousePath : path.resolve(baseDir, warehousePath),
      schema: (warehouse.data as { schema?: string } | null | undefined)?.schema ?? DEFAULT_WAREHOUSE.schema,
    })),
    staging: { type: 'local', path: path.resolve(baseDir, staging.data?.path ?? DEFAULT_STAGING.path) },
    state: { type: 'local', path: path.resolve(baseDir, state.data?.path ?? DEFAULT_STATE.path) },
    tables,
    ...(facts.length > 0 ? { facts } : {}),
    ...(awsSpec !== undefined ? { aws: awsSpec } : {}),
  })
}

function hasKeyAndKeylessAuth(warehouse: unknown): boolean {
  return (
    isRecord(warehouse) &&
    warehouse.credentials_secret !== undefined &&
    warehouse.workload_identity !== undefined
  )
}

/** A BigQuery warehouse's dataset is also the `schema` every warehouse places dimensions in. */
function resolveWarehouse(data: unknown, duckdb: () => WarehouseSpec): WarehouseSpec {
  if (isRecord(data) && data.type === 'postgres') {
    const w = data as { url_env: string; schema?: string }
    return { type: 'postgres', urlEnv: w.url_env, schema: w.schema ?? DEFAULT_POSTGRES_SCHEMA }
  }
  if (!isRecord(data) || data.type !== 'bigquery') return duckdb()
  const w = data as {
    project: string
    dataset: string
    location: string
    credentials_secret?: string
    workload_identity?: { audience: string; service_account?: string }
    allow_partition_expiration?: boolean
  }
  const identity = w.workload_identity
  return {
    type: 'bigquery',
    project: w.project,
    dataset: w.dataset,
    schema: w.dataset,
    location: w.location,
    ...(w.credentials_secret !== undefined ? { credentialsSecret: w.credentials_secret } : {}),
    ...(w.allow_partition_expiration === true ? { allowPartitionExpiration: true } : {}),
    ...(identity !== undefined
      ? {
          workloadIdentity: {
            audience: identity.audience,
            ...(identity.service_account !== undefined ? { serviceAccount: identity.service_account } : {}),
          },
        }
      : {}),
  }
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
