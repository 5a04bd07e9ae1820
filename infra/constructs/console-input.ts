/**
 * The checks of an execution's input (what a person types in the console, or a schedule sends), as one JSONata
 * expression evaluated by the state machine's first state against the deployed settings of each table: every
 * problem of the input as a one-line text, so a typo ends the execution as InvalidInput saying what to write,
 * instead of reaching a function, failing there and paging on-call.
 */

/** The keys an execution input may have; anything else is refused by name. */
export const INPUT_KEYS = ['table', 'mode', 'reason', 'whenBusy', 'batchId'] as const

/** The longest `reason` the extract function accepts (functions/shared/events.ts). */
export const MAX_REASON_LENGTH = 1000

/** The batch ids the functions accept (functions/shared/events.ts). */
const BATCH_ID = '/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/'
const EXAMPLE_BATCH_ID = '20240310T143000.000Z-3f9a1c'

/** What the state machine knows of each table: its functions, log groups and the settings an input must fit. */
export interface DeployedTableSettings {
  /** The configured extract mode. */
  readonly mode: 'full' | 'incremental'
  /** A file table with `files: new_only`: a full reload would skip the files merged already. */
  readonly newFilesOnly: boolean
}

/** A JSONata string literal of `text` (double-quoted, as JSON writes it). */
const literal = (text: string) => JSON.stringify(text)

/**
 * The JSONata expression (without `{% %}`) whose value is the list of problems of `$states.input`, empty when it
 * is valid. `lookup` is a JSONata expression of the table → settings object; `names` the deployed tables and
 * `example` an input that works, for the messages.
 */
export function inputProblems(lookup: string, names: readonly string[], example: string): string {
  const tables = names.join(', ')
  const keys = INPUT_KEYS.map(literal).join(', ')
  const cannotWithBatch = (key: string) =>
    `${key}: cannot be given with batchId (a batchId merges a staged batch again, without extracting)`
  return [
    '(',
    '$i := $states.input;',
    '$given := function($v) { $exists($v) and $v != null and $v != "" };',
    `$show := function($v) { $substring($type($v) = "string" ? '"' & $v & '"' : $string($v), 0, 80) };`,
    `$type($i) != "object" ? [${literal(`the input must be a JSON object like ${example} (got `)} & $show($i) & ")"] : (`,
    `$settings := $type($i.table) = "string" ? $lookup(${lookup}, $i.table) : null;`,
    `$unknown := $filter($keys($i), function($k) { $not($k in [${keys}]) });`,
    '$batch := $given($i.batchId);',
    '[',
    `$not($given($i.table)) ? ${literal(`table: is required (tables: ${tables}); start an execution with ${example}`)},`,
    `$given($i.table) and $type($i.table) != "string" ? ${literal(`table: must be one of ${tables} (got `)} & $show($i.table) & ")",`,
    `$count($unknown) > 0 ? $join($unknown, ", ") & ${literal(`: unknown keys (the input takes ${INPUT_KEYS.join(', ')})`)},`,
    `$given($i.mode) and $batch ? ${literal(cannotWithBatch('mode'))},`,
    `$given($i.mode) and $not($batch) and $not($i.mode in ["full", "incremental"]) ? 'mode: must be "full" or "incremental" (got ' & $show($i.mode) & ")",`,
    `$given($i.mode) and $not($batch) and $i.mode = "incremental" and $settings.mode = "full" ? "mode: table " & $i.table & ' is configured for full extracts; "incremental" needs extract.cursor in dimsync.yaml (start it without a mode)',`,
    `$given($i.mode) and $not($batch) and $i.mode = "full" and $settings.newFilesOnly = true ? "mode: table " & $i.table & ' reads new files only (source.files: new_only), so "full" would not read the files merged already; start it without a mode',`,
    `$given($i.whenBusy) and $batch ? ${literal(cannotWithBatch('whenBusy'))},`,
    `$given($i.whenBusy) and $not($batch) and $not($i.whenBusy in ["fail", "skip"]) ? 'whenBusy: must be "fail" or "skip" (got ' & $show($i.whenBusy) & ")",`,
    `$given($i.reason) and ($type($i.reason) != "string" or $length($i.reason) > ${MAX_REASON_LENGTH}) ? ${literal(`reason: must be a text of at most ${MAX_REASON_LENGTH} characters (got `)} & ($type($i.reason) = "string" ? $string($length($i.reason)) : $show($i.reason)) & ")",`,
    `$batch and ($type($i.batchId) != "string" or $not($contains($i.batchId, ${BATCH_ID}))) ? ${literal(`batchId: must be the id of a staged batch, like ${EXAMPLE_BATCH_ID} (got `)} & $show($i.batchId) & ")"`,
    ']',
    ')',
    ')',
  ].join(' ')
}

/** A JSONata test that a value of the input was given (absent, null and "" mean not given, as in the functions). */
export function givenExpression(path: string): string {
  return `($exists(${path}) and ${path} != null and ${path} != "")`
}
