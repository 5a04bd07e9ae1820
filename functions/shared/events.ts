import { ConfigError } from '../../lib/core/errors.ts'

/**
 * The two function inputs, validated by hand (a few fields, no schema library in the bundle). An invalid event
 * is one `ConfigError` ("extract event: mode: expected "full" or "incremental", got "delta""), so the console,
 * Step Functions and a schedule all show which field is wrong and what was expected. Unknown fields are
 * ignored, so the extract's output can be passed to the merge as it is.
 */

/** Input of the extract function: what a schedule sends as constant input, or a person types in the console. */
export interface ExtractEvent {
  readonly table: string
  /** Overrides the table's configured extract mode (`full` reloads an incremental table). */
  readonly mode?: 'full' | 'incremental'
  /** Why this run was started (ad-hoc reloads); logged with every line of the run. */
  readonly reason?: string
  /**
   * Continue a batch an earlier pass stopped before its time limit: the `batchId` and `resume` of that pass's
   * output (the state machine passes them back).
   */
  readonly batchId?: string
  readonly resume?: ExtractResume
}

/** Where a multi-pass extract continues: the pass that stopped (the parts and the source state are in staging). */
export interface ExtractResume {
  readonly pass: number
}

/** Output of the extract function. */
export interface ExtractOutput {
  readonly table: string
  readonly batchId: string
  /** Rows and bytes staged so far (every pass of the batch). */
  readonly rows: number
  readonly bytes: number
  /** False when the pass stopped before its time limit: call the extract again with `batchId` and `resume`. */
  readonly complete: boolean
  readonly resume?: ExtractResume
}

/** Input of the merge function (the extract's output fits). */
export interface MergeEvent {
  readonly table: string
  readonly batchId: string
}

const TABLE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/
const BATCH_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

export function parseExtractEvent(event: unknown): ExtractEvent {
  const what = 'extract event'
  const object = asObject(
    what,
    event,
    '{ "table": "customers", "mode"?: "full" | "incremental", "reason"?: "..." }',
  )
  const resume = parseResume(what, object)
  const table = requiredName(
    what,
    object,
    'table',
    TABLE_NAME,
    'a table name from dimsync.yaml, e.g. "customers"',
  )
  const mode = object.mode
  if (mode !== undefined && mode !== null && mode !== 'full' && mode !== 'incremental') {
    throw new ConfigError(what, [`mode: expected "full" or "incremental" (or no mode), got ${show(mode)}`])
  }
  const reason = object.reason
  if (reason !== undefined && reason !== null && (typeof reason !== 'string' || reason.length > 1000)) {
    throw new ConfigError(what, [`reason: expected a text of at most 1000 characters, got ${show(reason)}`])
  }
  return {
    table,
    ...(typeof mode === 'string' ? { mode } : {}),
    ...(typeof reason === 'string' && reason.trim() !== '' ? { reason: reason.trim() } : {}),
    ...resume,
  }
}

/** `resume` and `batchId` come together (a pass's output), or neither does (a new extract). */
function parseResume(
  what: string,
  object: Record<string, unknown>,
): { batchId: string; resume: ExtractResume } | Record<string, never> {
  const resume = object.resume
  if (resume === undefined || resume === null) return {}
  const pass = (resume as { pass?: unknown }).pass
  if (
    typeof resume !== 'object' ||
    Array.isArray(resume) ||
    typeof pass !== 'number' ||
    !Number.isSafeInteger(pass) ||
    pass < 1
  ) {
    throw new ConfigError(what, [
      `resume: expected { "pass": <a whole number from 1> } as returned by the extract, got ${show(resume)}`,
    ])
  }
  const batchId = requiredName(
    what,
    object,
    'batchId',
    BATCH_ID,
    'the batch id returned with "resume" by the extract, e.g. "20240310T143000.000Z-3f9a1c"',
  )
  return { batchId, resume: { pass } }
}

export function parseMergeEvent(event: unknown): MergeEvent {
  const what = 'merge event'
  const object = asObject(
    what,
    event,
    '{ "table": "customers", "batchId": "<batch id returned by extract>" }',
  )
  return {
    table: requiredName(
      what,
      object,
      'table',
      TABLE_NAME,
      'a table name from dimsync.yaml, e.g. "customers"',
    ),
    batchId: requiredName(
      what,
      object,
      'batchId',
      BATCH_ID,
      'the batch id returned by the extract, e.g. "20240310T143000.000Z-3f9a1c"',
    ),
  }
}

function asObject(what: string, event: unknown, shape: string): Record<string, unknown> {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    throw new ConfigError(what, [`expected a JSON object ${shape}, got ${show(event)}`])
  }
  return event as Record<string, unknown>
}

function requiredName(
  what: string,
  object: Record<string, unknown>,
  field: string,
  pattern: RegExp,
  expected: string,
): string {
  const value = object[field]
  if (value === undefined || value === null || value === '') {
    throw new ConfigError(what, [`${field}: is required (${expected})`])
  }
  if (typeof value !== 'string' || !pattern.test(value)) {
    throw new ConfigError(what, [`${field}: expected ${expected}, got ${show(value)}`])
  }
  return value
}

function show(value: unknown): string {
  if (value === undefined) return 'nothing'
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}
