import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DuckDBConnection } from '@duckdb/node-api'

import type { BatchParts } from '../../ports/staging-store.ts'
import type { LoadCast } from '../../sql/bigquery/bigquery-types.ts'
import { withDuckDbEngine } from '../duckdb/duckdb-engine.ts'

/**
 * Load jobs per batch, bounded. BigQuery allows 1,500 load jobs per table per day, and one job per staged part
 * (a part is cut at about 6 MiB of CSV) made a 10M-row batch about 170 jobs, run one after another. An upload
 * carries one file, and Parquet files cannot be concatenated byte-wise, so consecutive parts are combined into
 * one Parquet file of up to `maxBytes` (DuckDB rewrites them, streaming: the types are the parts' own) and each
 * group is one load job. Grouping is deterministic (the manifest's parts and sizes), so a retried load finds
 * the jobs of the same groups.
 */
export const DEFAULT_LOAD_GROUP_BYTES = 256 * 1024 * 1024
/** Load jobs (and uploads) of one batch in flight at once: each holds a group file of up to 256 MiB on disk. */
export const DEFAULT_LOAD_CONCURRENCY = 2

/** Consecutive parts whose sizes add up to at most `maxBytes` (a larger part is a group of its own). */
export function planLoadGroups(sizes: readonly number[], maxBytes: number): number[][] {
  const groups: number[][] = []
  let current: number[] = []
  let bytes = 0
  for (const [index, size] of sizes.entries()) {
    if (current.length > 0 && bytes + size > maxBytes) {
      groups.push(current)
      current = []
      bytes = 0
    }
    current.push(index)
    bytes += size
  }
  if (current.length > 0) groups.push(current)
  return groups
}

/** Part files already on local disk, as `BatchParts` (fetching is handing out their paths; nothing to free). */
export async function partsOnDisk(paths: readonly string[]): Promise<BatchParts> {
  return {
    names: paths,
    bytes: await Promise.all(paths.map(async (path) => (await stat(path)).size)),
    fetch: async (indexes) => ({ paths: indexes.map((index) => paths[index]!), release: async () => {} }),
  }
}

/**
 * Parquet 1.0's encodings, the ones every reader decodes. BigQuery's reader of the others (Parquet 2.0's DELTA_*,
 * BYTE_STREAM_SPLIT) cannot be checked here, so a part that uses them is rewritten before it is uploaded.
 */
const PORTABLE_ENCODINGS = new Set(['PLAIN', 'PLAIN_DICTIONARY', 'RLE_DICTIONARY', 'RLE', 'BIT_PACKED'])

/**
 * The file one load job uploads: the part itself, or the parts rewritten as one Parquet file in a scratch folder
 * (removed by `release`), each of `casts` cast to its type. A single part is rewritten too when it was staged in
 * Parquet 2.0's encodings (lib/core/staged-parquet.ts: a batch staged for the embedded warehouse, merged into
 * BigQuery after the config changed). Only one group per job in flight is on disk at a time, with its parts
 * (fetched just before the rewrite, freed after the upload).
 */
export async function groupFile(
  paths: readonly string[],
  casts: readonly LoadCast[] = [],
): Promise<{ readonly path: string; release(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'dimsync-load-group-'))
  const path = join(dir, 'group.parquet')
  let uploadAsIs: boolean
  try {
    uploadAsIs = await withDuckDbEngine(
      { threads: 1, memoryLimit: '256MB', anyOrder: true, spillDirectory: join(dir, 'tmp') },
      async (connection) => {
        const list = paths.map((p) => `'${p.replaceAll("'", "''")}'`).join(', ')
        if (paths.length === 1 && casts.length === 0 && (await usesPortableEncodings(connection, list)))
          return true
        const quote = (name: string) => `"${name.replaceAll('"', '""')}"`
        const replace =
          casts.length === 0
            ? ''
            : ` REPLACE (${casts.map((c) => `CAST(${quote(c.name)} AS ${c.as}) AS ${quote(c.name)}`).join(', ')})`
        await connection.run(
          `COPY (SELECT *${replace} FROM read_parquet([${list}])) TO '${path.replaceAll("'", "''")}' ` +
            `(FORMAT parquet, COMPRESSION zstd, PARQUET_VERSION V1)`,
        )
        return false
      },
    )
  } catch (error) {
    await rm(dir, { recursive: true, force: true })
    throw error
  }
  if (uploadAsIs) {
    await rm(dir, { recursive: true, force: true })
    return { path: paths[0]!, release: async () => {} }
  }
  return { path, release: () => rm(dir, { recursive: true, force: true }) }
}

/** True when every column chunk of the files (a quoted list) is written in Parquet 1.0's encodings only. */
async function usesPortableEncodings(connection: DuckDBConnection, list: string): Promise<boolean> {
  const reader = await connection.runAndReadAll(`SELECT DISTINCT encodings FROM parquet_metadata([${list}])`)
  return reader.getRows().every(([encodings]) =>
    String(encodings)
      .split(/,\s*/)
      .every((encoding) => PORTABLE_ENCODINGS.has(encoding.trim())),
  )
}

/** Runs `work` for every item, at most `concurrency` at once; the first failure is thrown once all settled. */
export async function inParallel<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0
  let failure: { error: unknown } | undefined
  const worker = async () => {
    while (failure === undefined && next < items.length) {
      const index = next++
      try {
        await work(items[index]!, index)
      } catch (error) {
        failure ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, items.length)) }, worker))
  if (failure !== undefined) throw failure.error
}
