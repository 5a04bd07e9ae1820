import type { RunRecord } from '../core/run-record.ts'
import type { StateStore } from '../ports/state-store.ts'
import { HeldLease } from './held-lease.ts'
import type { RunEventListener } from './run-event.ts'

export interface TableRunDeps {
  readonly state: StateStore
  readonly clock: () => Date
  readonly onEvent?: RunEventListener
}

export interface TableRunRequest {
  readonly table: string
  readonly runId: string
  /** Who holds the lease: the run id, or the run id, '/' and the step (`run-…/extract`); default: the run id. */
  readonly owner?: string
  readonly leaseTtlMs: number
  /** When the run started (its record's `startedAt`); default: when a record first needs it. */
  readonly startedAt?: string
  readonly batchId?: string
  /** False for a dry run: it changes nothing, so it leaves no run record an operator could take for a load. */
  readonly recorded?: boolean
}

/** Which run a step belongs to and who holds the lease meanwhile (a step that is a run of its own). */
export type RunOfStep = Pick<TableRunRequest, 'runId' | 'owner' | 'leaseTtlMs'>

/** The fields a run's record accumulates; `record` adds the status and whatever the step learnt. */
type KnownRecord = Omit<RunRecord, 'status' | 'startedAt'> & { startedAt?: string }
type RecordPatch = Partial<Omit<RunRecord, 'runId' | 'table'>> & Pick<RunRecord, 'status'>

/**
 * One run of one table, between taking its lease and releasing it: the held lease (the fencing check before
 * any commit) and the run's record, which each `record` call rewrites with everything known so far.
 */
export class TableRun {
  readonly table: string
  readonly runId: string
  readonly lease: HeldLease
  readonly #deps: TableRunDeps
  readonly #recorded: boolean
  #known: KnownRecord
  #handedOver = false

  constructor(deps: TableRunDeps, request: TableRunRequest, lease: HeldLease) {
    this.#deps = deps
    this.table = request.table
    this.runId = request.runId
    this.lease = lease
    this.#recorded = request.recorded ?? true
    this.#known = {
      runId: request.runId,
      table: request.table,
      ...(request.startedAt !== undefined ? { startedAt: request.startedAt } : {}),
      ...(request.batchId !== undefined ? { batchId: request.batchId } : {}),
    }
  }

  /** Continues the record an earlier step of the same run wrote (the merge continues the extract's). */
  adopt(earlier: RunRecord): void {
    this.#known = { ...this.#known, ...withoutStatus(earlier), runId: this.runId, table: this.table }
  }

  /** Sets the run's start when nothing earlier told it (a batch staged by other means than an extract). */
  assumeStartedAt(startedAt: string): void {
    if (this.#known.startedAt === undefined) this.#known = { ...this.#known, startedAt }
  }

  /** Writes the run record: everything known so far plus `patch` (which is kept for later records). */
  async record(patch: RecordPatch): Promise<void> {
    if (!this.#recorded) return
    const { status, ...fields } = patch
    const startedAt = this.#known.startedAt ?? this.#deps.clock().toISOString()
    this.#known = { ...this.#known, ...fields, startedAt }
    await this.#deps.state.recordRun({ ...this.#known, startedAt, status })
    this.#deps.onEvent?.({ step: 'record', table: this.table, runId: this.runId, status })
  }

  /**
   * Keeps the lease for the next pass of the same run (a multi-pass extract): it is renewed a last time and not
   * released when this invocation ends. `ttlMs` (default: the lease's own) covers the wait for that pass.
   */
  async handOver(ttlMs?: number): Promise<void> {
    await this.lease.handOver(ttlMs)
    this.#handedOver = true
  }

  /**
   * Keeps the lease for a later step of this run, which may run in another invocation (the merge after the
   * extract, the retry of a failed step): handed over to the run itself for `ttlMs`, and not released when this
   * step ends.
   */
  async handOverToRun(ttlMs: number): Promise<void> {
    await this.lease.handOverToRun(ttlMs)
    this.#handedOver = true
  }

  get handedOver(): boolean {
    return this.#handedOver
  }
}

/**
 * Runs `work` as one run of a table: take the table's lease (`LockHeldError` when another run holds it), let
 * `work` record its progress, record the run as failed if `work` throws (and rethrow), release the lease
 * unless `work` handed it over. Every use case that changes a table goes through here, on the CLI and on Lambda.
 */
export async function inTableRun<T>(
  deps: TableRunDeps,
  request: TableRunRequest,
  work: (run: TableRun) => Promise<T>,
): Promise<T> {
  const owner = request.owner ?? request.runId
  const lease = await HeldLease.acquire(deps.state, request.table, owner, request.leaseTtlMs, deps.clock)
  const run = new TableRun(deps, request, lease)
  try {
    deps.onEvent?.({
      step: 'lock',
      table: request.table,
      runId: request.runId,
      owner,
      token: lease.current.token,
      expiresAt: lease.current.expiresAt,
    })
    const previous = lease.current.previousHolder
    if (previous !== undefined && runIdOfOwner(previous) !== request.runId)
      await recordInterrupted(deps, request.table, runIdOfOwner(previous), request.runId)
    return await work(run)
  } catch (error) {
    await run
      .record({
        status: 'failed',
        finishedAt: deps.clock().toISOString(),
        error: error instanceof Error ? error.message : String(error),
      })
      .catch(() => undefined)
    deps.onEvent?.({ step: 'failed', table: request.table, runId: request.runId, error })
    throw error
  } finally {
    if (!run.handedOver) await lease.release()
  }
}

/** The run an owner of a lease belongs to: the run id, before the step an owner may add (`run-…/merge/…`). */
function runIdOfOwner(owner: string): string {
  return owner.split('/')[0]!
}

/** How many of a table's latest run records are searched for the record of an earlier step or run. */
export const RECENT_RUNS = 50

/**
 * Run `runId` held the table and never released it: its process died (or it lost its lease and stopped). Its
 * record, still `running`, would say so forever: it becomes `failed`, saying what happened. A run that recorded
 * its end before it died keeps the record it wrote.
 */
async function recordInterrupted(
  deps: TableRunDeps,
  table: string,
  runId: string,
  by: string,
): Promise<void> {
  const record = (await deps.state.listRuns(table, RECENT_RUNS)).find((r) => r.runId === runId)
  if (record?.status !== 'running') {
    deps.onEvent?.({ step: 'interrupted', table, runId, by, record: record?.status ?? 'none' })
    return
  }
  deps.onEvent?.({ step: 'interrupted', table, runId, by, record: 'interrupted' })
  const finishedAt = deps.clock().toISOString()
  await deps.state.recordRun({
    ...record,
    status: 'failed',
    finishedAt,
    error: `interrupted: the run stopped while it held the table; run ${by} took it over at ${finishedAt}`,
  })
}

function withoutStatus(record: RunRecord): Omit<RunRecord, 'status'> {
  return Object.fromEntries(Object.entries(record).filter(([field]) => field !== 'status')) as Omit<
    RunRecord,
    'status'
  >
}
