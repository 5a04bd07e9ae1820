import { MANIFEST_FILE } from '../../core/batch-manifest.ts'
import { StagingError } from '../../core/errors.ts'
import { assertSafeId } from './local-files.ts'

/**
 * Where a staged batch's blobs are: `<table>/<batchId>/` holds `part-NNNNN.parquet` files, `_started.json`
 * (written first, so that an extract that died before its first part is still found), `_progress.json` (the
 * checkpoint of a suspended batch) and `_manifest.json` (written last: the commit marker).
 */
export interface BatchKeys {
  readonly folder: string
  readonly manifest: string
  readonly progress: string
  readonly started: string
  part(name: string): string
}

export const PROGRESS = '_progress.json'

/** The folder of a table's batches; the table id is checked (it must never reach outside the store's root). */
export function tableFolder(table: string): string {
  assertSafeId('table', table, (message) => new StagingError(message))
  return table
}

export function batchKeys(table: string, batchId: string): BatchKeys {
  const tableKey = tableFolder(table)
  assertSafeId('batch', batchId, (message) => new StagingError(`table ${table}: ${message}`))
  const folder = `${tableKey}/${batchId}`
  return {
    folder,
    manifest: `${folder}/${MANIFEST_FILE}`,
    progress: `${folder}/${PROGRESS}`,
    started: `${folder}/_started.json`,
    part: (name) => `${folder}/${name}`,
  }
}

/** Whether `name` can be a batch folder (dot-names are scratch folders and temporary files). */
export function isBatchId(name: string): boolean {
  try {
    assertSafeId('batch', name)
    return true
  } catch {
    return false
  }
}
