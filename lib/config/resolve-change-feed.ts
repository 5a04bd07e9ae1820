/**
 * `extract: { mode: changes, … }` resolved into how the source is read (ExtractSpec) and what its rows mean
 * (ChangeFeedSpec). Database sources read the events after a watermark of a column that only grows in commit
 * order (the cursor, by default the sequence; never the change time); file sources are read whole on every run,
 * and the merge drops events it has already captured.
 */
import type { ChangeFeedSpec, ExtractSpec, SourceSpec, ValidFromSpec } from '../core/table-spec.ts'
import { DEBEZIUM_OPERATION, DMS_OPERATION } from './config-schema.ts'
import { show } from './messages.ts'

type Path = readonly PropertyKey[]

type OperationValues = string | readonly string[]

/** The `mode: changes` member of the extract option, as zod parsed it. */
export interface ChangesDocument {
  readonly mode: 'changes'
  readonly format?: 'dms' | 'debezium'
  readonly operation?:
    | string
    | {
        readonly column?: string
        readonly insert?: OperationValues
        readonly update?: OperationValues
        readonly delete?: OperationValues
      }
  readonly ops?: {
    readonly insert?: OperationValues
    readonly update?: OperationValues
    readonly delete?: OperationValues
    readonly truncate?: OperationValues
    readonly ignore?: OperationValues
  }
  readonly sequence?: string
  readonly cursor?: string
  readonly lookback_minutes?: number
}

const KINDS = ['insert', 'update', 'delete', 'truncate', 'ignore'] as const

/**
 * The operation column of a change feed and the values meaning insert, update and delete (AWS DMS's `Op` with
 * I/U/D where not given), and those whose rows are skipped (`ops.ignore`). Values are given in `operation: {
 * column, insert, update, delete }` or in `ops: { insert, update, delete, ignore }`, not both; a value given for
 * two operations is reported under the second one's name. `report` takes a path below `extract`.
 */
export function resolveOperation(
  doc: Pick<ChangesDocument, 'operation' | 'ops' | 'format'>,
  report: (where: readonly PropertyKey[], message: string) => void,
): ChangeFeedSpec['operation'] {
  const op = typeof doc.operation === 'string' ? { column: doc.operation } : (doc.operation ?? {})
  const inOperation = ['insert', 'update', 'delete'].some((kind) => kind in op)
  if (doc.ops !== undefined && inOperation)
    report(
      ['ops'],
      'operation values are given in extract.operation too; give them in one place: operation: <column> and ' +
        'ops: { insert, update, delete, ignore }',
    )
  const rules: Partial<Record<(typeof KINDS)[number], OperationValues>> = doc.ops ?? op
  const place = doc.ops !== undefined ? 'ops' : 'operation'
  const values = (v: OperationValues | undefined, fallback: readonly string[]) =>
    v === undefined ? fallback : typeof v === 'string' ? [v] : v
  // Each tool's own values where none are given: Debezium's c/r/u/d/t, else AWS DMS's I/U/D.
  const defaults = doc.format === 'debezium' ? DEBEZIUM_OPERATION : { ...DMS_OPERATION, truncate: [] }
  const ignore = values(rules.ignore, [])
  const truncate = values(rules.truncate, defaults.truncate)
  const operation = {
    column: op.column ?? defaults.column,
    insert: values(rules.insert, defaults.insert),
    update: values(rules.update, defaults.update),
    delete: values(rules.delete, defaults.delete),
    ...(ignore.length > 0 ? { ignore } : {}),
    ...(truncate.length > 0 ? { truncate } : {}),
  }
  const seen = new Map<string, string>()
  for (const kind of KINDS) {
    for (const value of operation[kind] ?? []) {
      const other = seen.get(value)
      if (other !== undefined && other !== kind)
        report(
          [place, kind],
          `${show(value)} is also ${other === 'delete' ? 'a' : 'an'} ${other} value; each operation value must mean one thing`,
        )
      seen.set(value, kind)
    }
  }
  return operation
}

export interface ResolvedChangeFeed {
  readonly extract: ExtractSpec
  readonly changes: ChangeFeedSpec
}

/**
 * Resolves a change feed. `at` builds paths under the table; `note` marks options inherited from defaults.
 * Problems are reported through `report`, all of them.
 */
export function resolveChangeFeed(
  doc: ChangesDocument,
  source: SourceSpec,
  validFrom: ValidFromSpec,
  at: (...rest: PropertyKey[]) => Path,
  note: string,
  report: (where: Path, message: string) => void,
): ResolvedChangeFeed {
  const operation = resolveOperation(doc, (where, message) =>
    report(at('extract', ...where), `${message}${note}`),
  )
  if (validFrom.kind !== 'column')
    report(
      at('valid_from'),
      `a change feed needs valid_from: { column: <change time column> }: each event happens at its own time${note}`,
    )
  const changeTime = validFrom.kind === 'column' ? validFrom.column : undefined
  const roles: [Path, string | undefined, string][] = [
    [at('extract', 'operation'), operation.column, 'operation'],
    [at('extract', 'sequence'), doc.sequence, 'sequence'],
  ]
  for (const [where, name, role] of roles) {
    if (name !== undefined && changeTime !== undefined && name.toLowerCase() === changeTime.toLowerCase())
      report(where, `the ${role} column ${show(name)} is also the valid_from column${note}`)
  }
  if (doc.sequence !== undefined && doc.sequence.toLowerCase() === operation.column.toLowerCase())
    report(at('extract', 'sequence'), `${show(doc.sequence)} is also the operation column${note}`)

  if (doc.format !== undefined && source.type !== 'file')
    report(
      at('extract', 'format'),
      `format: ${doc.format} reads the files a CDC tool writes; a ${source.type} source is read by its columns${note}`,
    )
  if (doc.format === 'debezium' && source.type === 'file' && source.format !== 'json')
    report(
      at('source', 'format'),
      `format: debezium reads Debezium's JSON lines: name .json files, or set format: json in the source${note}`,
    )
  if (doc.format !== 'debezium' && source.type === 'file' && source.format === 'json')
    report(
      at('source', 'format'),
      'JSON files are read as Debezium change events only: set extract: { mode: changes, format: debezium }' +
        note,
    )
  if (doc.format === 'dms' && source.type === 'file' && source.format === 'csv' && !source.csv.header) {
    if (source.columns === undefined)
      report(
        at('source', 'columns'),
        'AWS DMS writes CSV without a header (unless AddColumnName is set): declare its columns in the order of ' +
          'the files, e.g. columns: { Op: VARCHAR, dms_ts: VARCHAR, customer_id: BIGINT, … }',
      )
  }
  let extract: ExtractSpec
  if (source.type === 'file') {
    for (const option of ['cursor', 'lookback_minutes'] as const) {
      if (doc[option] !== undefined)
        report(
          at('extract', option),
          `a file change feed is read whole on every run (events already merged are skipped); ${option} applies to database sources only${note}`,
        )
    }
    extract = { mode: 'full' }
  } else {
    const cursor = databaseFeedCursor(doc, { column: changeTime, role: 'change time' }, at, note, report)
    extract =
      cursor === undefined
        ? { mode: 'full' }
        : { mode: 'incremental', cursor, lookbackMinutes: doc.lookback_minutes ?? 0 }
  }
  const changes: ChangeFeedSpec = {
    operation,
    ...(doc.sequence !== undefined ? { sequence: doc.sequence } : {}),
    ...(doc.format !== undefined ? { format: doc.format } : {}),
  }
  return { extract, changes }
}

/**
 * The cursor a database change feed is read by: a column that only grows in commit order (the named cursor, else
 * the sequence). The change time is refused: the source holds events whose change time is older than events
 * already read (a late event, a correction), and reading after the change time's watermark would skip them.
 */
export function databaseFeedCursor(
  doc: Pick<ChangesDocument, 'cursor' | 'sequence'>,
  time: { readonly column: string | undefined; readonly role: 'change time' | 'event time' },
  at: (...rest: PropertyKey[]) => Path,
  note: string,
  report: (where: Path, message: string) => void,
): string | undefined {
  const cursor = doc.cursor ?? doc.sequence
  if (cursor === undefined) {
    report(
      at('extract'),
      'a change feed read from a database needs a column that only grows in commit order to read it by: ' +
        'set sequence: <column> (the change sequence or log position the CDC tool writes; it is then the ' +
        `cursor) or cursor: <column>. The ${time.role} cannot be the cursor: a change inserted later with an older ` +
        `${time.role} would never be read${note}`,
    )
    return undefined
  }
  if (doc.cursor !== undefined && time.column !== undefined && sameName(doc.cursor, time.column)) {
    report(
      at('extract', 'cursor'),
      `a change feed read from a database by its ${time.role} ${show(doc.cursor)} loses late events: a change ` +
        `inserted later with an older ${time.role} than the last run read would never be read; ` +
        (doc.sequence !== undefined
          ? `remove cursor (the sequence ${show(doc.sequence)} is then the cursor)`
          : 'read it by a column that only grows in commit order: sequence: <column> (the change sequence or log ' +
            'position the CDC tool writes) or cursor: <column>') +
        note,
    )
  }
  return cursor
}

function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase()
}

/** Columns a change feed needs extracted, with the option that names each and its role. */
export function changeFeedColumns(
  changes: ChangeFeedSpec,
  at: (...rest: PropertyKey[]) => Path,
): [Path, string, string][] {
  return [
    [at('extract', 'operation'), changes.operation.column, 'operation'],
    ...(changes.sequence !== undefined
      ? [[at('extract', 'sequence'), changes.sequence, 'sequence'] as [Path, string, string]]
      : []),
  ]
}
