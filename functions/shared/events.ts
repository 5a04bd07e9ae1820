import { z } from 'zod'

import { ConfigError } from '../../lib/core/errors.ts'

/**
 * The two function inputs, validated with zod. An invalid event is one `ConfigError` with a line per wrong
 * field ("extract event: mode: expected "full" or "incremental" (or no mode), got "delta""), so the console,
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
   * When another run holds the table: `fail` at once (default: a person reloading sees it), or `skip` (a
   * schedule: the run is recorded as skipped and the next start tries again).
   */
  readonly whenBusy?: 'fail' | 'skip'
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

/** Output of the extract function: a pass that staged (part of) a batch, or a skipped scheduled start. */
export type ExtractOutput = StagedExtractOutput | SkippedExtractOutput

export interface StagedExtractOutput {
  readonly table: string
  readonly batchId: string
  /** Rows and bytes staged so far (every pass of the batch). */
  readonly rows: number
  readonly bytes: number
  /** False when the pass stopped before its time limit: call the extract again with `batchId` and `resume`. */
  readonly complete: boolean
  readonly resume?: ExtractResume
}

/** A scheduled start (`whenBusy: skip`) found another run on the table: nothing was extracted. */
export interface SkippedExtractOutput {
  readonly table: string
  readonly skipped: true
  readonly runId: string
  /** The run holding the table, and since when. */
  readonly heldBy: string
  readonly since: string
}

/** Input of the merge function (the extract's output fits). */
export interface MergeEvent {
  readonly table: string
  readonly batchId: string
}

const TABLE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/
const BATCH_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/
const TABLE_TEXT = 'a table name from dimsync.yaml, e.g. "customers"'

/** What each field must be, as the error line says it. */
const EXPECTED = {
  table: TABLE_TEXT,
  mode: '"full" or "incremental" (or no mode)',
  reason: 'a text of at most 1000 characters',
  whenBusy: '"fail" or "skip" (or nothing: fail)',
  resume: '{ "pass": <a whole number from 1> } as returned by the extract',
} as const

/** Absent, null and "" all mean "not given" (the console and JSONata send either). */
const given = (value: unknown) => value !== undefined && value !== null && value !== ''

const name = (pattern: RegExp) => z.string().regex(pattern)

const extractEventSchema = z
  .object({
    table: name(TABLE_NAME),
    mode: z.enum(['full', 'incremental']).nullish(),
    reason: z.string().max(1000).nullish(),
    whenBusy: z.enum(['fail', 'skip']).nullish(),
    batchId: name(BATCH_ID).nullish(),
    resume: z.object({ pass: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER) }).nullish(),
  })
  // `resume` and `batchId` come together (a pass's output), or neither does (a new extract).
  .refine((event) => event.resume == null || given(event.batchId), { path: ['batchId'] })

const mergeEventSchema = z.object({ table: name(TABLE_NAME), batchId: name(BATCH_ID) })

export function parseExtractEvent(event: unknown): ExtractEvent {
  const shape = '{ "table": "customers", "mode"?: "full" | "incremental", "reason"?: "..." }'
  const parsed = validate(extractEventSchema, asObject('extract event', event, shape), 'extract event', {
    ...EXPECTED,
    batchId: 'the batch id returned with "resume" by the extract, e.g. "20240310T143000.000Z-3f9a1c"',
  })
  const reason = parsed.reason?.trim()
  return {
    table: parsed.table,
    ...(parsed.mode != null ? { mode: parsed.mode } : {}),
    ...(reason ? { reason } : {}),
    ...(parsed.whenBusy != null ? { whenBusy: parsed.whenBusy } : {}),
    ...(parsed.resume != null ? { batchId: parsed.batchId!, resume: { pass: parsed.resume.pass } } : {}),
  }
}

export function parseMergeEvent(event: unknown): MergeEvent {
  const shape = '{ "table": "customers", "batchId": "<batch id returned by extract>" }'
  return validate(mergeEventSchema, asObject('merge event', event, shape), 'merge event', {
    table: TABLE_TEXT,
    batchId: 'the batch id returned by the extract, e.g. "20240310T143000.000Z-3f9a1c"',
  })
}

/**
 * The event as `schema` reads it, or one `ConfigError` with a line per wrong field: "is required (...)" for a
 * missing one, "expected ..., got <value>" otherwise (zod's own messages do not say what to write instead).
 */
function validate<T>(
  schema: z.ZodType<T>,
  object: Record<string, unknown>,
  what: string,
  expected: Readonly<Record<string, string>>,
): T {
  const parsed = schema.safeParse(object)
  if (parsed.success) return parsed.data
  const fields = [...new Set(parsed.error.issues.map((issue) => String(issue.path[0])))]
  throw new ConfigError(
    what,
    fields.map((field) => {
      const value = object[field]
      return given(value)
        ? `${field}: expected ${expected[field]}, got ${show(value)}`
        : `${field}: is required (${expected[field]})`
    }),
  )
}

/** The event as an object, or the error saying what shape it should have. */
function asObject(what: string, event: unknown, shape: string): Record<string, unknown> {
  if (typeof event !== 'object' || event === null || Array.isArray(event))
    throw new ConfigError(what, [`expected a JSON object ${shape}, got ${show(event)}`])
  return event as Record<string, unknown>
}

function show(value: unknown): string {
  if (value === undefined) return 'nothing'
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}
