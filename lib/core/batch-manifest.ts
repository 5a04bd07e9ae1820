import type { BatchManifest, StagedPart } from './batch.ts'
import { StagingError } from './errors.ts'
import { instantSortKey } from './instant.ts'

/**
 * The manifest's file name in a batch's folder, written last (the commit marker): the staging stores and the state
 * machine's check for a finished extract (infra/constructs/orchestration.ts) both read it.
 */
export const MANIFEST_FILE = '_manifest.json'

/** The only part file name a manifest may list: it is joined to a folder or becomes a local file name. */
export const PART_NAME = /^part-\d{5,}\.parquet$/

/**
 * Checks a manifest read back from a staging store (`where`: its path or URL, for the message) and returns it
 * typed. Throws `StagingError` naming the table, the batch and what is wrong.
 */
export function checkManifest(table: string, batchId: string, where: string, value: unknown): BatchManifest {
  const bad = (what: string): StagingError =>
    new StagingError(`table ${table}: batch ${batchId}: invalid manifest ${where}: ${what}`)
  if (typeof value !== 'object' || value === null) throw bad('not a JSON object')
  const manifest = value as BatchManifest
  if (manifest.formatVersion !== 1) throw bad(`unsupported formatVersion ${String(manifest.formatVersion)}`)
  if (manifest.table !== table || manifest.batchId !== batchId) {
    throw bad(`it names table ${manifest.table}, batch ${manifest.batchId}`)
  }
  if (typeof manifest.extractedAt !== 'string' || instantSortKey(manifest.extractedAt) === undefined) {
    throw bad(`extractedAt ${JSON.stringify(manifest.extractedAt)} is not an ISO instant`)
  }
  if (!Array.isArray(manifest.parts)) throw bad('parts is not a list')
  for (const part of manifest.parts) {
    if (typeof part?.name !== 'string' || !PART_NAME.test(part.name)) {
      throw bad(`part name ${JSON.stringify(part?.name)} is not part-NNNNN.parquet`)
    }
  }
  return manifest
}

/** Merge order of staged batches: oldest extraction first (microseconds kept), then batch id. */
export function compareManifests(a: BatchManifest, b: BatchManifest): number {
  const ka = instantSortKey(a.extractedAt) ?? ''
  const kb = instantSortKey(b.extractedAt) ?? ''
  if (ka !== kb) return ka < kb ? -1 : 1
  return a.batchId < b.batchId ? -1 : a.batchId > b.batchId ? 1 : 0
}

/**
 * The manifest a batch writer commits: the caller's fields, format version 1 and the parts in the order they were
 * added. Refuses (StagingError) a manifest for another table or batch, a part still being added (undefined), and
 * a `rowCount` that differs from the sum of the parts' rows.
 */
export function completeManifest(
  table: string,
  batchId: string,
  manifest: Omit<BatchManifest, 'parts' | 'formatVersion'>,
  added: readonly (StagedPart | undefined)[],
): BatchManifest {
  const where = `table ${table}: batch ${batchId}`
  if (manifest.table !== table || manifest.batchId !== batchId) {
    throw new StagingError(`${where}: manifest is for table ${manifest.table}, batch ${manifest.batchId}`)
  }
  const parts: StagedPart[] = []
  for (const part of added) {
    if (part === undefined)
      throw new StagingError(`${where}: commit called while a part is still being added`)
    parts.push(part)
  }
  const partRows = parts.reduce((sum, part) => sum + part.rows, 0)
  if (manifest.rowCount !== partRows) {
    throw new StagingError(
      `${where}: manifest rowCount ${manifest.rowCount} differs from the parts' ${partRows} rows`,
    )
  }
  return { formatVersion: 1, ...manifest, parts }
}
