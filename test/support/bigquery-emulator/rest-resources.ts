import type { JobRecord } from './job-store.ts'
import type { Column, Dataset, Row, StoredTable } from './table-store.ts'
import { logicalBytes, NULL_VALUE, restValue, type RestFormat, type Value } from './values.ts'

/** The JSON resources of BigQuery's REST API v2, built from the emulator's records. Pure functions. */

export function datasetResource(dataset: Dataset): Record<string, unknown> {
  return {
    kind: 'bigquery#dataset',
    id: `${dataset.projectId}:${dataset.datasetId}`,
    datasetReference: { projectId: dataset.projectId, datasetId: dataset.datasetId },
    location: dataset.location,
    creationTime: String(dataset.creationMs),
    lastModifiedTime: String(dataset.creationMs),
    ...(dataset.description === undefined ? {} : { description: dataset.description }),
    ...(dataset.labels === undefined ? {} : { labels: dataset.labels }),
    ...(dataset.defaultTableExpirationMs === undefined
      ? {}
      : { defaultTableExpirationMs: String(dataset.defaultTableExpirationMs) }),
    ...(dataset.defaultPartitionExpirationMs === undefined
      ? {}
      : { defaultPartitionExpirationMs: String(dataset.defaultPartitionExpirationMs) }),
  }
}

export function tableResource(table: StoredTable, location: string): Record<string, unknown> {
  const { ref, metadata } = table
  const bytes = table.rows.reduce((sum, row) => sum + rowBytes(table.columns, row), 0)
  return {
    kind: 'bigquery#table',
    id: `${ref.projectId}:${ref.datasetId}.${ref.tableId}`,
    tableReference: { ...ref },
    type: table.type,
    location,
    schema: { fields: table.columns.map((c) => c.field) },
    creationTime: String(table.creationMs),
    lastModifiedTime: String(table.lastModifiedMs),
    ...(table.type === 'TABLE'
      ? { numRows: String(table.rows.length), numBytes: String(bytes), numLongTermBytes: '0' }
      : { view: { query: table.viewQuery ?? '', useLegacySql: false } }),
    ...(metadata.description === undefined ? {} : { description: metadata.description }),
    ...(metadata.friendlyName === undefined ? {} : { friendlyName: metadata.friendlyName }),
    ...(metadata.labels === undefined ? {} : { labels: metadata.labels }),
    ...(metadata.expirationMs === undefined ? {} : { expirationTime: String(metadata.expirationMs) }),
    ...(metadata.timePartitioning === undefined ? {} : { timePartitioning: metadata.timePartitioning }),
    ...(metadata.rangePartitioning === undefined ? {} : { rangePartitioning: metadata.rangePartitioning }),
    ...(metadata.requirePartitionFilter === undefined
      ? {}
      : { requirePartitionFilter: metadata.requirePartitionFilter }),
    ...(metadata.clustering === undefined ? {} : { clustering: metadata.clustering }),
    ...(metadata.primaryKey === undefined
      ? {}
      : { tableConstraints: { primaryKey: { columns: metadata.primaryKey } } }),
  }
}

export function rowBytes(columns: readonly Column[], row: Row): number {
  return columns.reduce((sum, c, i) => sum + logicalBytes(c.type, row.cells[i] ?? NULL_VALUE), 0)
}

/** `rows: [{ f: [{ v }] }]`, a page of them from `start`. */
export function restRows(
  columns: readonly Column[],
  rows: readonly (readonly Value[])[],
  format: RestFormat,
): { f: { v: unknown }[] }[] {
  return rows.map((cells) => ({
    f: columns.map((c, i) => ({ v: restValue(c.type, cells[i] ?? NULL_VALUE, format) })),
  }))
}

/** A page of `total` rows: `maxResults` from `startIndex` or from the offset a page token carries. */
export function page(
  total: number,
  query: URLSearchParams,
  defaultSize = 100_000,
): { start: number; end: number; pageToken?: string } {
  const token = query.get('pageToken')
  const start = token !== null ? Number(token) : Number(query.get('startIndex') ?? 0)
  const size = query.get('maxResults') === null ? defaultSize : Math.max(0, Number(query.get('maxResults')))
  const end = Math.min(total, start + size)
  return { start, end, ...(end < total ? { pageToken: String(end) } : {}) }
}

export function jobResource(job: JobRecord): Record<string, unknown> {
  const jobType = job.configuration.load ? 'LOAD' : 'QUERY'
  const statistics: Record<string, unknown> = {
    creationTime: String(job.creationMs),
    ...(job.startMs === undefined ? {} : { startTime: String(job.startMs) }),
    ...(job.endMs === undefined ? {} : { endTime: String(job.endMs) }),
    ...(job.outcome?.statistics ?? {}),
  }
  return {
    kind: 'bigquery#job',
    id: `${job.projectId}:${job.location}.${job.jobId}`,
    jobReference: { projectId: job.projectId, jobId: job.jobId, location: job.location },
    configuration: { ...job.configuration, jobType },
    status:
      job.state === 'DONE' && job.error !== undefined
        ? { state: 'DONE', errorResult: job.error.toJSON(), errors: [job.error.toJSON()] }
        : { state: job.state },
    statistics,
    user_email: 'emulator@bigquery-emulator.invalid',
  }
}
