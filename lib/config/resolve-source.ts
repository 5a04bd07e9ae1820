/** The `source` of a table: a file (its format inferred from the name) or a database table or query. */
import { S3_SCHEME, s3PathHint, splitS3Path } from '../core/s3-path.ts'
import { READ_TYPE_NAMES, readType, takesFormat, type SourceColumnType } from '../core/source-types.ts'
import type { SourceSpec } from '../core/table-spec.ts'
import { compileTimePattern } from '../core/time-from-name.ts'
import type { TableDocument } from './config-schema.ts'
import type { IssueList, Path } from './issue-list.ts'
import { show } from './messages.ts'

function inferFormat(filePath: string): 'csv' | 'parquet' | 'json' | undefined {
  const lower = filePath.toLowerCase()
  if (/\.(json|jsonl|ndjson)(\.gz)?$/.test(lower)) return 'json'
  if (lower.endsWith('.csv') || lower.endsWith('.csv.gz')) return 'csv'
  if (lower.endsWith('.parquet')) return 'parquet'
  return undefined
}

export function resolveSource(base: Path, source: TableDocument['source'], issues: IssueList): SourceSpec {
  if (source.type === 'file') {
    const format = source.format ?? inferFormat(source.path)
    if (format === undefined) {
      issues.add(
        [...base, 'source', 'format'],
        `cannot infer the format from ${show(source.path)} (expected .csv or .parquet); set format: csv or parquet`,
      )
    }
    if (source.path.startsWith(S3_SCHEME) && splitS3Path(source.path) === undefined)
      issues.add([...base, 'source', 'path'], s3PathHint(source.path))
    if (format === 'parquet' || format === 'json') {
      for (const option of ['delimiter', 'header', 'columns'] as const) {
        if (source[option] !== undefined)
          issues.add(
            [...base, 'source', option],
            option === 'columns'
              ? `only applies to csv sources (a ${format === 'json' ? 'JSON' : 'Parquet'} file carries its types)`
              : 'only applies to csv sources',
          )
      }
    }
    const columns = resolveColumnTypes([...base, 'source', 'columns'], source.columns, issues)
    if (source.time_from_name !== undefined) {
      const where = [...base, 'source', 'time_from_name']
      if (source.files !== 'new_only')
        issues.add(
          where,
          'orders the new files of files: new_only; with every file read as one snapshot, load dated files ' +
            'one by one with dimsync backfill --time-from-name',
        )
      const problem = timePatternProblem(source.time_from_name)
      if (problem !== undefined) issues.add(where, problem)
    }
    return {
      type: 'file',
      path: source.path,
      format: format ?? 'csv',
      csv: { delimiter: source.delimiter ?? ',', header: source.header ?? true },
      ...(source.files !== undefined ? { files: source.files } : {}),
      ...(source.time_from_name !== undefined ? { timeFromName: source.time_from_name } : {}),
      ...(columns.length > 0 && format === 'csv' ? { columns } : {}),
    }
  }
  const hasTable = source.table !== undefined
  const hasQuery = source.query !== undefined
  if (hasTable === hasQuery) {
    issues.add(
      [...base, 'source'],
      `needs exactly one of table or query (got ${hasTable ? 'both' : 'neither'})`,
    )
  }
  return {
    type: source.type,
    urlEnv: source.url_env,
    ...(hasTable ? { table: source.table } : {}),
    ...(hasQuery ? { query: source.query } : {}),
    ...(source.chunks !== undefined ? { chunks: source.chunks } : {}),
    ...(source.slice_rows !== undefined ? { sliceRows: source.slice_rows } : {}),
    ...(source.statement_timeout_seconds !== undefined
      ? { statementTimeoutSeconds: source.statement_timeout_seconds }
      : {}),
  }
}

type DeclaredColumns = Extract<TableDocument['source'], { type: 'file' }>['columns']

/** `columns: { acct: DECIMAL(38,0), d: { type: DATE, format: '%d/%m/%Y' } }` as read types. */
function resolveColumnTypes(path: Path, declared: DeclaredColumns, issues: IssueList): SourceColumnType[] {
  const columns: SourceColumnType[] = []
  for (const [name, value] of Object.entries(declared ?? {})) {
    const written = typeof value === 'string' ? value : value.type
    const format = typeof value === 'string' ? undefined : value.format
    const type = readType(written)
    if (type === undefined) {
      issues.add(
        [...path, name],
        `${show(written)} is not a type a CSV column can be read as: ${READ_TYPE_NAMES}`,
      )
      continue
    }
    if (format !== undefined && !takesFormat(type)) {
      issues.add(
        [...path, name, 'format'],
        `only dates, times and timestamps have a format (${name} is ${type})`,
      )
      continue
    }
    if (format !== undefined && !format.includes('%')) {
      issues.add([...path, name, 'format'], `${show(format)} has no strptime directive such as %d, %m or %Y`)
      continue
    }
    columns.push({ name, type, ...(format !== undefined ? { format } : {}) })
  }
  return columns
}

/** Why `pattern` cannot read a time from a file name, or undefined when it can. */
function timePatternProblem(pattern: string): string | undefined {
  try {
    compileTimePattern(pattern)
    return undefined
  } catch (error) {
    return (error as Error).message.replace('--time-from-name pattern', 'pattern')
  }
}
