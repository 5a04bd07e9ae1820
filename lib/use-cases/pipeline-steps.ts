import { canonicalJson, compareWatermarks } from '../core/watermark.ts'
import type { BatchManifest, StagedPart, Watermark } from '../core/batch.ts'
import { compareManifests } from '../core/batch-manifest.ts'
import { BatchRejectedError, DimsyncError, LeaseLostError, StagingError } from '../core/errors.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { Source } from '../ports/source.ts'
import type { BatchCheckpoint, BatchWriter, StagingStore } from '../ports/staging-store.ts'
import type { Lease, StateStore } from '../ports/state-store.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import { mergeBatch, type MergeBatchResult } from './merge-batch.ts'

/**
 * The steps of `runTable` as separate, reusable functions, for runtimes that split a run across invocations
 * (the extract and merge Lambdas): hold a lease, extract to staging, merge a staged batch and advance the
 * watermark. Same order and rules as run-table.ts: the manifest is written only while the lease is held, the
 * lease is checked inside the merge transaction before COMMIT, and the watermark moves only after the commit.
 */

export interface ExtractStepDeps {
  readonly staging: StagingStore
  readonly state: StateStore
  readonly openSource: (table: TableSpec) => Source
  readonly checkSourceColumns?: (table: TableSpec, columns: readonly string[]) => void
}

export interface MergeStepDeps {
  readonly staging: StagingStore
  readonly state: StateStore
  readonly warehouse: Warehouse
  readonly schema: string
  readonly clock: () => Date
}

/**
 * A lease held while a long step runs: renewed every third of its TTL in the background. A failed renewal
 * (taken over after a pause) is remembered, and `assertHeld` then fails at once; otherwise `assertHeld` asks
 * the store (fencing token and expiry), which is what a step calls just before it commits anything.
 */
export class HeldLease {
  readonly #state: StateStore
  readonly #clock: () => Date
  readonly #ttlMs: number
  readonly #timer: NodeJS.Timeout
  #lease: Lease
  #lost: Error | undefined
  #released = false

  private constructor(state: StateStore, lease: Lease, ttlMs: number, clock: () => Date) {
    this.#state = state
    this.#lease = lease
    this.#ttlMs = ttlMs
    this.#clock = clock
    this.#timer = setInterval(() => void this.renew().catch(() => undefined), Math.max(50, ttlMs / 3))
    // A pending renewal must not keep a CLI process (or a Lambda invocation) alive.
    this.#timer.unref()
  }

  /** Takes the table's lease (`LockHeldError` when another run holds it) and starts renewing it. */
  static async acquire(
    state: StateStore,
    table: string,
    owner: string,
    ttlMs: number,
    clock: () => Date,
  ): Promise<HeldLease> {
    const lease = await state.acquireLease(table, owner, ttlMs, clock())
    return new HeldLease(state, lease, ttlMs, clock)
  }

  /** The lease as last acquired or renewed (its token is the fencing token of this run). */
  get current(): Lease {
    return this.#lease
  }

  /** Renews now. A `LeaseLostError` is remembered (and rethrown): the run must not commit anything after it. */
  async renew(): Promise<Lease> {
    if (this.#released) return this.#lease
    if (this.#lost) throw this.#lost
    try {
      this.#lease = await this.#state.renewLease(this.#lease, this.#ttlMs, this.#clock())
      return this.#lease
    } catch (error) {
      if (error instanceof LeaseLostError) this.#lost = error
      throw error
    }
  }

  /** Throws `LeaseLostError` unless the lease is still ours and unexpired (fencing check before a commit). */
  async assertHeld(): Promise<void> {
    if (this.#lost) throw this.#lost
    await this.#state.assertLeaseHeld(this.#lease, this.#clock())
  }

  /**
   * Renews the lease a last time and stops renewing it without releasing it: the next pass of a multi-pass
   * extract takes it over (same owner), and no other run of the table starts in between. Should that pass never
   * come, the lease simply expires.
   */
  async handOver(): Promise<void> {
    await this.renew()
    clearInterval(this.#timer)
    this.#released = true
  }

  /** Stops renewing and releases the lease (keeps the token counter). Safe twice; never throws. */
  async release(): Promise<void> {
    clearInterval(this.#timer)
    if (this.#released) return
    this.#released = true
    await this.#state.releaseLease(this.#lease).catch(() => undefined)
  }
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
  deps: ExtractStepDeps,
  table: TableSpec,
  request: ExtractStepRequest,
): Promise<ExtractStepResult> {
  const pass = await extractPass(deps, table, request)
  if (!pass.complete) {
    throw new DimsyncError(
      `table ${table.name}: batch ${request.batchId}: the extract stopped without a time limit`,
    )
  }
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
  deps: ExtractStepDeps,
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
    const watermark =
      table.extract.mode === 'incremental' ? await deps.state.getWatermark(table.name) : undefined
    writer = await deps.staging.beginBatch(table.name, batchId)
    progress = {
      version: 1,
      extractedAt: request.extractedAt.toISOString(),
      mode: table.extract.mode,
      ...(watermark !== undefined ? { watermark } : {}),
    }
  }
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
    })
    deps.checkSourceColumns?.(
      table,
      result.columns.map((c) => c.name),
    )
    if (result.resume !== undefined) {
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
  if (s.mode !== table.extract.mode) {
    throw new StagingError(
      `${where} was started as a ${String(s.mode)} extract and cannot be continued as a ${table.extract.mode} ` +
        `one; continue it with the same mode, or start a new extract`,
    )
  }
  return s as unknown as PassProgress
}

/**
 * What happened to the watermark after a merge: `advanced` to the batch's candidate, `unchanged` (already
 * there: a retried merge), `behind` (a newer batch already moved it further; never moved backwards), or
 * `none` (a full extract carries no candidate).
 */
export type WatermarkOutcome = 'advanced' | 'unchanged' | 'behind' | 'none'

export interface MergeStepRequest {
  readonly batchId: string
  readonly allowMassDelete?: boolean
  /** Called inside the merge transaction just before COMMIT (the fencing check); throwing rolls back. */
  readonly beforeCommit?: () => Promise<void>
}

export interface MergeStepResult {
  readonly merge: MergeBatchResult
  readonly manifest: BatchManifest
  readonly watermark: WatermarkOutcome
}

/**
 * Merges one committed staged batch (skipped when the warehouse ledger already has it), then advances the
 * watermark to the batch's candidate. Because the ledger row commits with the merge, a crash between the
 * merge and the watermark is repaired by running this again: the merge is skipped, the watermark advances.
 * The staged batch is kept; the caller deletes it once everything is recorded.
 */
export async function mergeStep(
  deps: MergeStepDeps,
  table: TableSpec,
  request: MergeStepRequest,
): Promise<MergeStepResult> {
  const manifest = await readManifest(deps.staging, table.name, request.batchId)
  const merge = await mergeBatch(deps, {
    table,
    schema: deps.schema,
    batchId: request.batchId,
    now: deps.clock(),
    allowMassDelete: request.allowMassDelete,
    beforeCommit: request.beforeCommit,
  })
  const watermark = await advanceWatermark(deps.state, table.name, manifest.watermarkCandidate)
  return { merge, manifest, watermark }
}

/** Moves the watermark forward to `candidate`; never backwards (a batch merged after a newer one). */
export async function advanceWatermark(
  state: StateStore,
  table: string,
  candidate: Watermark | undefined,
): Promise<WatermarkOutcome> {
  if (candidate === undefined) return 'none'
  const current = await state.getWatermark(table)
  if (current !== undefined && canonicalJson(current) === canonicalJson(candidate)) return 'unchanged'
  if (current !== undefined && compareWatermarks(candidate, current) < 0) return 'behind'
  await state.commitWatermark(table, candidate, current)
  return 'advanced'
}

async function readManifest(staging: StagingStore, table: string, batchId: string): Promise<BatchManifest> {
  // openBatch verifies every part; mergeBatch opens the batch again for the load, so only the manifest is
  // taken here (listBatches reads manifests only).
  const manifest = (await staging.listBatches(table)).find((m) => m.batchId === batchId)
  if (manifest !== undefined) return manifest
  const opened = await staging.openBatch(table, batchId) // throws the store's "not committed" StagingError
  await opened.release()
  return opened.manifest
}

export interface LeftStagedRequest {
  /** Only batches that sort before this one (merge order); every staged batch when undefined. */
  readonly before?: string
  readonly allowMassDelete?: boolean
  readonly beforeCommit?: () => Promise<void>
  /** Called after each batch is merged, its watermark advanced and its staging removed. */
  readonly onMerged?: (result: MergeStepResult) => void
}

/**
 * Merges, oldest first, the batches an earlier run staged but never merged (its merge failed or it died), so
 * that history is applied in order and nothing staged is lost; each is removed from staging once merged. A batch
 * the warehouse refuses would be refused on every run: the error says how to get past it.
 */
export async function mergeLeftStaged(
  deps: MergeStepDeps,
  table: TableSpec,
  request: LeftStagedRequest,
): Promise<MergeStepResult[]> {
  const staged = await deps.staging.listBatches(table.name)
  const limit = request.before === undefined ? undefined : staged.find((m) => m.batchId === request.before)
  // The batch to merge next is gone (merged by an earlier attempt): nothing is older than it any more.
  if (request.before !== undefined && limit === undefined) return []
  const older = limit === undefined ? staged : staged.filter((m) => compareManifests(m, limit) < 0)
  const results: MergeStepResult[] = []
  for (const manifest of older) {
    let result: MergeStepResult
    try {
      result = await mergeStep(deps, table, {
        batchId: manifest.batchId,
        allowMassDelete: request.allowMassDelete,
        beforeCommit: request.beforeCommit,
      })
    } catch (error) {
      if (!(error instanceof BatchRejectedError)) throw error
      throw new BatchRejectedError(
        table.name,
        manifest.batchId,
        `${error.message}. This batch was staged by an earlier run; rerun with the option named above, or ` +
          `drop it with: dimsync discard --table ${table.name} --batch ${manifest.batchId}`,
      )
    }
    await deps.staging.deleteBatch(table.name, manifest.batchId)
    request.onMerged?.(result)
    results.push(result)
  }
  return results
}
