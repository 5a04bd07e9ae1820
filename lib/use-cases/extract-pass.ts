import type { BatchManifest, StagedPart, Watermark } from '../core/batch.ts'
import { DimsyncError, StagingError } from '../core/errors.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { watermarkToReadFrom } from '../core/watermark.ts'
import type { Source } from '../ports/source.ts'
import type { BatchCheckpoint, BatchWriter, StagingStore } from '../ports/staging-store.ts'
import type { StateStore } from '../ports/state-store.ts'

export interface ExtractPassDeps {
  readonly staging: StagingStore
  readonly state: StateStore
  readonly openSource: (table: TableSpec) => Source
  readonly checkSourceColumns?: (table: TableSpec, columns: readonly string[]) => void
}

export interface ExtractStepRequest {
  readonly batchId: string
  readonly extractedAt: Date
  /** Called after the parts are staged and before the manifest is written (a lease check). */
  readonly beforeCommit?: () => Promise<void>
  readonly onProgress?: (rows: number) => void
}

export interface ExtractStepResult {
  readonly manifest: BatchManifest
  /** Total size of the staged parts. */
  readonly bytes: number
}

/**
 * Extracts `table` into a new staged batch and commits it (writes the manifest). Incremental tables read from
 * the committed watermark. On any failure the batch is aborted (nothing committed) and the error rethrown.
 */
export async function extractStep(
  deps: ExtractPassDeps,
  table: TableSpec,
  request: ExtractStepRequest,
): Promise<ExtractStepResult> {
  const pass = await extractPass(deps, table, request)
  // Without `timeLeftMs` a pass never suspends (extractPass refuses a source that stops anyway).
  if (!pass.complete) throw new DimsyncError(`table ${table.name}: batch ${request.batchId} was suspended`)
  return pass
}

export interface ExtractPassRequest extends ExtractStepRequest {
  /**
   * Milliseconds this pass may still run. When given, the source may stop early: the batch is then suspended
   * (its parts and where to continue saved in staging) instead of committed.
   */
  readonly timeLeftMs?: () => number
  /** Continue batch `batchId`, suspended by an earlier pass (its extraction time and watermark are kept). */
  readonly resume?: boolean
  /** Called before the batch is suspended (a lease check); throwing fails the pass. */
  readonly beforeSuspend?: () => Promise<void>
}

export type ExtractPassResult =
  | { readonly complete: true; readonly manifest: BatchManifest; readonly bytes: number }
  | {
      readonly complete: false
      readonly checkpoint: BatchCheckpoint
      /** Rows and bytes staged by every pass so far. */
      readonly rows: number
      readonly bytes: number
      /** When the first pass read the source: the batch's extraction time. */
      readonly extractedAt: string
    }

/**
 * One pass of an extract that may span several invocations (a Lambda's time limit): starts the batch, or
 * resumes a suspended one, lets the source stage parts until it is done or its time is short, then commits the
 * batch (complete) or suspends it with a checkpoint for the next pass. The first pass fixes the batch's
 * extraction time and the watermark it reads from; later passes keep them. A failed pass whose error is
 * retryable keeps the last checkpoint, so a retry continues from there; any other failure removes the batch.
 */
export async function extractPass(
  deps: ExtractPassDeps,
  table: TableSpec,
  request: ExtractPassRequest,
): Promise<ExtractPassResult> {
  const { batchId } = request
  let writer: BatchWriter
  let progress: PassProgress
  let earlier: readonly StagedPart[] = []
  if (request.resume) {
    const resumed = await deps.staging.resumeBatch(table.name, batchId)
    writer = resumed.writer
    earlier = resumed.checkpoint.parts
    progress = readPassProgress(table, batchId, resumed.checkpoint.state)
  } else {
    const mode = stagedMode(table)
    const watermark =
      mode === 'incremental'
        ? watermarkToReadFrom(table, await deps.state.getWatermark(table.name))
        : undefined
    writer = await deps.staging.beginBatch(table.name, batchId)
    progress = {
      version: 1,
      extractedAt: request.extractedAt.toISOString(),
      mode,
      ...(watermark !== undefined ? { watermark } : {}),
    }
  }
  // A CSV source reads with the types its merged batches were read with (recorded by mergeStep).
  const csv = table.source.type === 'file' && table.source.format === 'csv'
  const sourceTypes = csv ? await deps.state.getSourceTypes(table.name) : undefined
  const source = deps.openSource(table)
  try {
    const result = await source.extract({
      table,
      batchId,
      extractedAt: new Date(progress.extractedAt),
      watermark: progress.watermark,
      writer,
      onProgress: request.onProgress,
      ...(request.timeLeftMs ? { timeLeftMs: request.timeLeftMs } : {}),
      ...(progress.source !== undefined ? { resume: progress.source } : {}),
      ...(sourceTypes !== undefined ? { sourceTypes } : {}),
    })
    // The source refuses an excluded column it lacks and stages the others without it: it had them all.
    deps.checkSourceColumns?.(table, [...result.columns.map((c) => c.name), ...table.exclude])
    if (result.resume !== undefined) {
      if (!request.timeLeftMs) {
        throw new DimsyncError(
          `table ${table.name}: batch ${batchId}: the extract stopped without a time limit`,
        )
      }
      await request.beforeSuspend?.()
      const checkpoint = await writer.suspend({ ...progress, source: result.resume })
      return {
        complete: false,
        checkpoint,
        rows: checkpoint.parts.reduce((sum, part) => sum + part.rows, 0),
        bytes: checkpoint.parts.reduce((sum, part) => sum + part.bytes, 0),
        extractedAt: progress.extractedAt,
      }
    }
    await request.beforeCommit?.()
    const manifest = await writer.commit({
      table: table.name,
      batchId,
      extractedAt: progress.extractedAt,
      mode: progress.mode,
      rowCount: earlier.reduce((sum, part) => sum + part.rows, 0) + result.rows,
      columns: result.columns,
      watermarkCandidate: result.watermarkCandidate,
      sourceDescription: result.sourceDescription,
      ...(result.sourceTypes !== undefined ? { sourceTypes: result.sourceTypes } : {}),
    })
    return { complete: true, manifest, bytes: manifest.parts.reduce((sum, part) => sum + part.bytes, 0) }
  } catch (error) {
    const retryable = (error as { retryable?: unknown }).retryable === true
    await writer.abort({ keepCheckpoint: retryable }).catch(() => undefined)
    throw error
  } finally {
    await source.close()
  }
}

/**
 * How a batch of `table` is staged, read and merged: a file source that reads new files only (`files:
 * new_only`) stages what is new since its watermark, a delta like an incremental extract (a key absent from
 * it was not deleted), read after the committed watermark and advancing it once merged.
 */
export function stagedMode(table: TableSpec): 'full' | 'incremental' {
  if (table.source.type === 'file' && table.source.files === 'new_only') return 'incremental'
  return table.extract.mode
}

/** What the extract keeps in a suspended batch's checkpoint besides its parts. */
interface PassProgress {
  readonly version: 1
  readonly extractedAt: string
  readonly mode: 'full' | 'incremental'
  readonly watermark?: Watermark
  /** The source's own `resume`. */
  readonly source?: unknown
}

function readPassProgress(table: TableSpec, batchId: string, state: unknown): PassProgress {
  const s = (typeof state === 'object' && state !== null ? state : {}) as Record<string, unknown>
  const where = `table ${table.name}: batch ${batchId}`
  if (s.version !== 1 || typeof s.extractedAt !== 'string' || Number.isNaN(Date.parse(s.extractedAt))) {
    throw new StagingError(`${where}: the saved progress is damaged; start a new extract`)
  }
  if (s.mode !== stagedMode(table)) {
    throw new StagingError(
      `${where} was started as a ${String(s.mode)} extract and cannot be continued as a ${stagedMode(table)} ` +
        `one; continue it with the same mode, or start a new extract`,
    )
  }
  return s as unknown as PassProgress
}
