/** What one `dimsync run` of one table did; kept by the state store for operators and audits. */
export interface MergeCounts {
  /** Staged rows plus generated delete events. */
  readonly events: number
  readonly insertedVersions: number
  readonly closedVersions: number
  /** Keys closed or flagged deleted by this batch. */
  readonly deletedKeys: number
  /** Events dropped because they changed nothing. */
  readonly unchangedEvents: number
  /** Keys whose history was recomputed because an event was older than what was known. */
  readonly lateKeys: number
}

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'skipped'

export interface RunRecord {
  readonly runId: string
  readonly table: string
  readonly status: RunStatus
  readonly startedAt: string
  readonly finishedAt?: string
  readonly batchId?: string
  readonly rowsExtracted?: number
  readonly counts?: MergeCounts
  readonly error?: string
}
