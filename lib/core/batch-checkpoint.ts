import type { StagedPart } from './batch.ts'
import { PART_NAME } from './batch-manifest.ts'
import { StagingError } from './errors.ts'
import { instantSortKey } from './instant.ts'

/**
 * The checkpoint a suspended batch writer leaves in its batch folder (`_progress.json`), shared by the staging
 * stores: how it is built, written and checked when it is read back. Pure: no I/O.
 */

/** The staging port's `BatchCheckpoint`, spelled out here so that core does not depend on a port. */
export interface Checkpoint {
  readonly pass: number
  readonly savedAt: string
  readonly parts: readonly StagedPart[]
  readonly state: unknown
}

/** What `_progress.json` holds: the checkpoint plus the format version and the batch it belongs to. */
export interface CheckpointFile extends Checkpoint {
  readonly formatVersion: 1
  readonly table: string
  readonly batchId: string
}

const SHA256 = /^[0-9a-f]{64}$/

/** File name of the part at `index` (0-based) of a batch: `part-00000.parquet`, `part-00001.parquet`, ... */
export function partFileName(index: number): string {
  return `part-${String(index).padStart(5, '0')}.parquet`
}

/**
 * The checkpoint a writer saves when it suspends: pass `previous.pass + 1` (1 without a previous checkpoint), the
 * parts added so far in order, and `state` as it will read back (a JSON copy). Refuses (StagingError) a part still
 * being added (undefined) and a state that is not a JSON value.
 */
export function nextCheckpoint(
  table: string,
  batchId: string,
  previous: Checkpoint | undefined,
  added: readonly (StagedPart | undefined)[],
  state: unknown,
  savedAt: Date,
): Checkpoint {
  const where = `table ${table}: batch ${batchId}`
  const parts: StagedPart[] = []
  for (const [index, part] of added.entries()) {
    if (part === undefined) {
      throw new StagingError(
        `${where}: suspend called while part ${partFileName(index)} is still being added (or its addPart failed)`,
      )
    }
    parts.push(part)
  }
  let text: string | undefined
  try {
    text = JSON.stringify(state)
  } catch (error) {
    throw new StagingError(`${where}: the extract state to save is not JSON (${messageOf(error)})`, {
      cause: error,
    })
  }
  if (text === undefined) {
    throw new StagingError(`${where}: the extract state to save is not JSON (${typeof state})`)
  }
  return {
    pass: (previous?.pass ?? 0) + 1,
    savedAt: savedAt.toISOString(),
    parts,
    state: JSON.parse(text) as unknown,
  }
}

/** The text of `_progress.json` for `checkpoint`. */
export function checkpointText(table: string, batchId: string, checkpoint: Checkpoint): string {
  const file: CheckpointFile = {
    formatVersion: 1,
    table,
    batchId,
    pass: checkpoint.pass,
    savedAt: checkpoint.savedAt,
    parts: checkpoint.parts,
    state: checkpoint.state,
  }
  return `${JSON.stringify(file, null, 2)}\n`
}

/**
 * Parses and checks the text of `_progress.json` read back from a store (`where`: its path or URL, for the
 * message). The parts must be well-formed and numbered 0, 1, 2, ... in order, so that a resumed writer can
 * continue the numbering. Throws `StagingError` naming the table, the batch, the file and what is wrong.
 */
export function parseCheckpoint(table: string, batchId: string, where: string, text: string): Checkpoint {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new StagingError(`table ${table}: batch ${batchId}: unreadable checkpoint ${where}`, {
      cause: error,
    })
  }
  const bad = (what: string): StagingError =>
    new StagingError(`table ${table}: batch ${batchId}: invalid checkpoint ${where}: ${what}`)
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad('not a JSON object')
  const file = value as Partial<Record<keyof CheckpointFile, unknown>>
  if (file.formatVersion !== 1) throw bad(`unsupported formatVersion ${JSON.stringify(file.formatVersion)}`)
  if (file.table !== table || file.batchId !== batchId) {
    throw bad(`it names table ${String(file.table)}, batch ${String(file.batchId)}`)
  }
  if (typeof file.pass !== 'number' || !Number.isSafeInteger(file.pass) || file.pass < 1) {
    throw bad(`pass ${JSON.stringify(file.pass)} is not a positive integer`)
  }
  if (typeof file.savedAt !== 'string' || instantSortKey(file.savedAt) === undefined) {
    throw bad(`savedAt ${JSON.stringify(file.savedAt)} is not an ISO instant`)
  }
  if (!Array.isArray(file.parts)) throw bad('parts is not a list')
  const parts = file.parts.map((part: unknown, index) => checkPart(part, index, bad))
  if (!('state' in file)) throw bad('state is missing')
  return { pass: file.pass, savedAt: file.savedAt, parts, state: file.state }
}

function checkPart(value: unknown, index: number, bad: (what: string) => StagingError): StagedPart {
  const expected = partFileName(index)
  if (typeof value !== 'object' || value === null) throw bad(`part ${index} is not an object`)
  const part = value as Partial<Record<keyof StagedPart, unknown>>
  if (typeof part.name !== 'string' || !PART_NAME.test(part.name) || part.name !== expected) {
    throw bad(`part ${index} is named ${JSON.stringify(part.name)}, expected ${expected}`)
  }
  for (const field of ['rows', 'bytes'] as const) {
    const n = part[field]
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
      throw bad(`part ${expected}: ${field} ${JSON.stringify(n)} is not a count`)
    }
  }
  if (typeof part.sha256 !== 'string' || !SHA256.test(part.sha256)) {
    throw bad(`part ${expected}: sha256 ${JSON.stringify(part.sha256)} is not a hex SHA-256`)
  }
  return { name: part.name, rows: part.rows as number, bytes: part.bytes as number, sha256: part.sha256 }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** The refusal of `resumeBatch` for a batch that has no `_progress.json`. */
export function noCheckpointError(table: string, batchId: string): StagingError {
  return new StagingError(
    `table ${table}: batch ${batchId} has no saved progress (it was never suspended, or was removed as ` +
      'abandoned or after a failure); start a new extract',
  )
}
