import { BatchRejectedError, MassDeleteRefusedError } from './errors.ts'

/** The checks a merge runs inside the warehouse; each refuses the whole batch before anything is written. */
export const CHECK_KINDS = Object.freeze([
  'null-key',
  'nan-key',
  'null-valid-from',
  'duplicate-key',
  'extraction-order',
  'conflicting-capture',
  'mass-delete',
  'bad-operation',
  'null-sequence',
  'sequence-tie',
  'system-time-order',
  'late-partial-event',
  'version-column',
  'incomplete-load',
  'one-current-version',
  'bent-key',
] as const)
export type CheckKind = (typeof CHECK_KINDS)[number]

/** Which check failed, for which table and batch. */
export interface CheckIdentity {
  readonly kind: CheckKind
  readonly table: string
  readonly batchId: string
}

/** A failed check as the warehouse reported it: who, and the message for people. */
export interface CheckFailure extends CheckIdentity {
  readonly message: string
}

/**
 * The text around a check's message when the warehouse raises it:
 * `[dimsync-check kind=mass-delete table=customers batch=b0002] <message> [/dimsync-check]`.
 * Fields are URI-encoded, so they hold no space or bracket and the marker parses the same whatever the names.
 * Warehouses add their own text around a raised error (`Invalid Input Error: `, a script's step label, a
 * position); the markers find the check inside it.
 */
export function checkFailureMarkers(check: CheckIdentity): { readonly open: string; readonly close: string } {
  const field = (name: string, value: string) => `${name}=${encodeURIComponent(value)}`
  return {
    open: `${OPEN}${field('kind', check.kind)} ${field('table', check.table)} ${field('batch', check.batchId)}] `,
    close: CLOSE,
  }
}

const OPEN = '[dimsync-check '
const CLOSE = ' [/dimsync-check]'
const MARKED =
  /\[dimsync-check kind=([^\s\]]+) table=([^\s\]]+) batch=([^\s\]]+)\] ([^]*?) \[\/dimsync-check\]/
const KINDS: ReadonlySet<string> = new Set(CHECK_KINDS)

/** The check failure inside a warehouse error message, or undefined when the error is not one of dimsync's checks. */
export function parseCheckFailure(text: string): CheckFailure | undefined {
  const match = MARKED.exec(text)
  if (match === null || !KINDS.has(match[1]!)) return undefined
  const decode = (value: string) => {
    try {
      return decodeURIComponent(value)
    } catch {
      return value
    }
  }
  return {
    kind: match[1] as CheckKind,
    table: decode(match[2]!),
    batchId: decode(match[3]!),
    message: match[4]!,
  }
}

/**
 * The error a warehouse error message means when it carries a failed check: the batch is refused (nothing was
 * written), by the mass-delete guard or by another check. Undefined when the message is not a failed check.
 */
export function rejectedBatchError(text: string): BatchRejectedError | undefined {
  const failure = parseCheckFailure(text)
  if (failure === undefined) return undefined
  return failure.kind === 'mass-delete'
    ? new MassDeleteRefusedError(failure.table, failure.batchId, failure.message)
    : new BatchRejectedError(failure.table, failure.batchId, failure.message)
}
