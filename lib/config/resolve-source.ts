/** The `source` of a table: a file (its format inferred from the name) or a database table or query. */
import { S3_SCHEME, s3PathHint, splitS3Path } from '../core/s3-path.ts'
import type { SourceSpec } from '../core/table-spec.ts'
import type { TableDocument } from './config-schema.ts'
import type { IssueList, Path } from './issue-list.ts'
import { show } from './messages.ts'

function inferFormat(filePath: string): 'csv' | 'parquet' | undefined {
  const lower = filePath.toLowerCase()
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
    if (format === 'parquet') {
      for (const option of ['delimiter', 'header'] as const) {
        if (source[option] !== undefined)
          issues.add([...base, 'source', option], 'only applies to csv sources')
      }
    }
    return {
      type: 'file',
      path: source.path,
      format: format ?? 'csv',
      csv: { delimiter: source.delimiter ?? ',', header: source.header ?? true },
      ...(source.files !== undefined ? { files: source.files } : {}),
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
