/**
 * The types of CSV columns read for the first time (a table's first load, or a column new to it), chosen once
 * and then recorded: DuckDB's sniffer guesses from every value of every file, and its guess is checked against
 * the values before it is kept, because the guess itself can bend them:
 *
 * - whole numbers wider than 64 bits are guessed DOUBLE (`12345678901234567891` would be stored as
 *   `12345678901234567168`): they are read as DECIMAL(38,0), or refused beyond 38 digits;
 * - decimals a DOUBLE does not hold exactly (`12345678901234567.89`, `1e400`) are read as DECIMAL(38,s) when
 *   that holds them, or refused;
 * - a date format is a guess when the values read two ways (`01/02/2024`: 1 February or 2 January): refused,
 *   naming two values, until the format is declared;
 * - a column of dates with one value that is not a date (`2024-02-30`) would become text: refused, naming it.
 *
 * Every refusal is a `SourceError` naming the table, the column and a value (with its file and line), and the
 * way out: fix the value, or declare the column's type in dimsync.yaml.
 */
import type { DuckDBConnection } from '@duckdb/node-api'

import { SourceError } from '../../core/errors.ts'
import { describeColumnType, readType, type SourceColumnType } from '../../core/source-types.ts'
import { sqlIdentifier, sqlString } from '../duckdb/parquet-schema.ts'
import { DATE_SEPARATORS, exactValue, expectedText, otherReadings, sniffedFormats } from './csv-value-sql.ts'

/** What DuckDB's sniffer found in one file: a type per column (by position) and its date formats. */
export interface SniffedFile {
  readonly name: string
  /** The sniffed type of each column, by name. */
  readonly types: ReadonlyMap<string, string>
  readonly dateFormat?: string
  readonly timestampFormat?: string
}

export interface TypeChoice {
  readonly connection: DuckDBConnection
  readonly tableName: string
  /** The files' column names, by position. */
  readonly names: readonly string[]
  /** Every file's rows as one relation, all columns VARCHAR, named `names`. */
  readonly textSelect: string
  readonly files: readonly SniffedFile[]
  /** Where `value` stands in column `name`: `customers.csv line 3`. */
  readonly locate: (name: string, value: string) => Promise<string>
  /** Columns left as text without looking for dates in them (a valid_from column has checks of its own). */
  readonly plainText?: readonly string[]
}

/** Whole numbers wider than this many digits fit no DECIMAL. */
const MAX_DIGITS = 38
const WHOLE = `'\\s*[+-]?[0-9]+\\s*'`
const PLAIN_DECIMAL = `'\\s*[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)\\s*'`
/** A value that starts like a date with a four-digit year (`2024-02-30`, `30/02/2024 10:00`). */
const DATE_LIKE = `'^\\s*([0-9]{4}[-/. ][0-9]{1,2}[-/. ][0-9]{1,2}|[0-9]{1,2}[-/. ][0-9]{1,2}[-/. ][0-9]{4})'`

/** A column's type before it is checked: the sniffer's, unified over the files. */
interface Guess {
  readonly name: string
  readonly type: string
  /** Formats the files' values were sniffed in (undefined: ISO 8601), dates and timestamps only. */
  readonly formats: readonly (string | undefined)[]
}

/**
 * The checked types of the columns `wanted` (a subset of `choice.names`). Throws `SourceError` when a column's
 * values cannot all be read exactly as one type, or when a date format would be a guess.
 */
export async function chooseColumnTypes(
  choice: TypeChoice,
  wanted: readonly string[],
): Promise<SourceColumnType[]> {
  const guesses = wanted.map((name) => guess(choice, name))
  const probes = new Probes()
  const checks = guesses.map((g) => planCheck(g, probes, choice.plainText ?? []))
  const row = await probes.run(choice)
  const chosen: SourceColumnType[] = []
  for (const [i, g] of guesses.entries()) chosen.push(await checks[i]!(row, choice, g))
  return chosen
}

function guess(choice: TypeChoice, name: string): Guess {
  const types = new Set(choice.files.map((f) => readType(f.types.get(name) ?? 'VARCHAR') ?? 'VARCHAR'))
  const [only] = types
  let type: string
  if (types.size === 1) type = only!
  else if ([...types].every((t) => t === 'BIGINT' || t === 'DOUBLE')) type = 'DOUBLE'
  else type = 'VARCHAR'
  const formats =
    type === 'DATE'
      ? [...new Set(choice.files.map((f) => f.dateFormat))]
      : type === 'TIMESTAMP'
        ? [...new Set(choice.files.map((f) => f.timestampFormat))]
        : []
  return { name, type, formats }
}

type Row = Readonly<Record<string, unknown>>
type Check = (row: Row, choice: TypeChoice, g: Guess) => Promise<SourceColumnType>

/** Aggregates over the text of every file, all computed in one read. */
class Probes {
  readonly #expressions: string[] = []

  add(expression: string): string {
    const alias = `p${this.#expressions.length}`
    this.#expressions.push(`${expression} AS ${alias}`)
    return alias
  }

  async run(choice: TypeChoice): Promise<Row> {
    if (this.#expressions.length === 0) return {}
    return await one(choice.connection, `SELECT ${this.#expressions.join(', ')} FROM (${choice.textSelect})`)
  }
}

async function one(connection: DuckDBConnection, sql: string): Promise<Row> {
  const reader = await connection.runAndReadAll(sql)
  return (reader.getRowObjectsJS()[0] ?? {}) as Row
}

const count = (condition: string) => `count(*) FILTER (WHERE ${condition})`
const num = (value: unknown) => Number(value ?? 0)

function planCheck(g: Guess, probes: Probes, plainText: readonly string[]): Check {
  const text = sqlIdentifier(g.name)
  const present = `${text} IS NOT NULL`
  switch (g.type) {
    case 'DOUBLE':
      return planNumberCheck(g, probes, text, present)
    case 'DATE':
    case 'TIMESTAMP':
      if (g.formats.length === 1 && g.formats[0] === undefined) break
      return planFormatCheck(g, g.type, probes, text, present)
    case 'VARCHAR':
      if (plainText.includes(g.name)) break
      return planTextCheck(g, probes, text, present)
  }
  return (_row, _choice, g) => Promise.resolve({ name: g.name, type: g.type })
}

/**
 * A column sniffed as DOUBLE: whole numbers (wider than 64 bits, or the sniffer would have said BIGINT) become
 * DECIMAL(38,0); decimals stay DOUBLE when it holds each of them exactly, else become DECIMAL(38,s).
 */
function planNumberCheck(g: Guess, probes: Probes, text: string, present: string): Check {
  const whole = `regexp_full_match(${text}, ${WHOLE})`
  const inexact = `${present} AND ${exactValue({ name: g.name, type: 'DOUBLE' }, text)} IS NULL`
  const notWhole = probes.add(count(`${present} AND NOT ${whole}`))
  const inexactCount = probes.add(count(inexact))
  return async (row, choice) => {
    const allWhole = num(row[notWhole]) === 0
    if (!allWhole && num(row[inexactCount]) === 0) return { name: g.name, type: 'DOUBLE' }
    // Rare (whole numbers beyond 64 bits, or decimals a DOUBLE would round): a second read says which type fits.
    const plain = `regexp_full_match(${text}, ${PLAIN_DECIMAL})`
    const unsigned = `ltrim(regexp_replace(trim(${text}), '^[+-]', ''), '0')`
    const more = new Probes()
    const digits = more.add(`max(length(${unsigned})) FILTER (WHERE ${whole})`)
    const widest = more.add(`arg_max(${text}, length(${unsigned})) FILTER (WHERE ${whole})`)
    const inexactExample = more.add(`min(${text}) FILTER (WHERE ${inexact})`)
    const notPlain = more.add(count(`${present} AND NOT ${plain}`))
    const notPlainExample = more.add(`min(${text}) FILTER (WHERE ${present} AND NOT ${plain})`)
    const wholeDigits = more.add(`max(length(split_part(${unsigned}, '.', 1))) FILTER (WHERE ${plain})`)
    const scale = more.add(
      `max(length(rtrim(split_part(trim(${text}), '.', 2), '0'))) FILTER (WHERE ${plain})`,
    )
    const found = await more.run(choice)
    if (allWhole) {
      if (num(found[digits]) <= MAX_DIGITS) return { name: g.name, type: `DECIMAL(${MAX_DIGITS},0)` }
      throw await refuseValue(
        choice,
        g.name,
        String(found[widest]),
        `is an integer of ${num(found[digits])} digits: wider than the ${MAX_DIGITS} digits of the widest ` +
          `integer type, DECIMAL(${MAX_DIGITS},0)`,
      )
    }
    const s = num(found[scale])
    if (num(found[notPlain]) === 0 && num(found[wholeDigits]) + s <= MAX_DIGITS)
      return { name: g.name, type: `DECIMAL(${MAX_DIGITS},${s})` }
    const value = String(found[notPlainExample] ?? found[inexactExample])
    throw await refuseValue(
      choice,
      g.name,
      value,
      `neither a DOUBLE nor a DECIMAL(${MAX_DIGITS},s) holds exactly`,
    )
  }
}

/**
 * A column of dates or timestamps sniffed in a format: the format must be the only one its values parse in
 * (among those the sniffer tries), or the next file could be read the other way.
 */
function planFormatCheck(
  g: Guess,
  type: 'DATE' | 'TIMESTAMP',
  probes: Probes,
  text: string,
  present: string,
): Check {
  const candidates = [...g.formats]
  for (const format of g.formats) {
    if (format === undefined) continue
    for (const other of otherReadings(format)) if (!candidates.includes(other)) candidates.push(other)
  }
  const value = (format: string | undefined) => exactValue({ name: g.name, type, format }, text)
  const fails = candidates.map((format) => probes.add(count(`${present} AND ${value(format)} IS NULL`)))
  const failExample = probes.add(`min(${text}) FILTER (WHERE ${present} AND ${value(candidates[0])} IS NULL)`)
  const goodExample = probes.add(`min(${text}) FILTER (WHERE ${value(candidates[0])} IS NOT NULL)`)
  const pairs: { a: number; b: number; differ: string; low: string; high: string }[] = []
  for (let a = 0; a < candidates.length; a++) {
    for (let b = a + 1; b < candidates.length; b++) {
      const differ = `${value(candidates[a])} <> ${value(candidates[b])}`
      pairs.push({
        a,
        b,
        differ: probes.add(count(differ)),
        low: probes.add(`min(${text}) FILTER (WHERE ${differ})`),
        high: probes.add(`max(${text}) FILTER (WHERE ${differ})`),
      })
    }
  }
  return async (row, choice) => {
    const valid = candidates.filter((_, i) => num(row[fails[i]!]) === 0)
    if (valid.length === 0) {
      const example = String(row[failExample])
      throw await refuseValue(
        choice,
        g.name,
        example,
        `is not ${expectedText({ name: g.name, type, format: candidates[0] })} like its other values ` +
          `(${showValue(row[goodExample])})`,
      )
    }
    const ambiguous = pairs.find(
      (p) => valid.includes(candidates[p.a]) && valid.includes(candidates[p.b]) && num(row[p.differ]) > 0,
    )
    if (ambiguous !== undefined) {
      const samples = [...new Set([String(row[ambiguous.low]), String(row[ambiguous.high])])]
      const [first, second] = [candidates[ambiguous.a]!, candidates[ambiguous.b]!]
      throw await refuseAmbiguous(choice, g.name, type, samples, first, second)
    }
    // Every valid format reads every value alike: the first one (a file's own) is kept.
    const format = valid[0]
    return { name: g.name, type, ...(format !== undefined ? { format } : {}) }
  }
}

/**
 * A text column whose values are mostly dates (or timestamps) of one format: a value that is not one is a
 * mistake in the file more often than a column of text; refused, naming it, unless the column is declared text.
 */
function planTextCheck(g: Guess, probes: Probes, text: string, present: string): Check {
  const total = probes.add(count(present))
  const dateLike = probes.add(count(`regexp_matches(${text}, ${DATE_LIKE})`))
  return async (row, choice) => {
    const values = num(row[total])
    if (values === 0 || num(row[dateLike]) * 2 < values) return { name: g.name, type: 'VARCHAR' }
    const candidates: SourceColumnType[] = [
      { name: g.name, type: 'DATE' },
      { name: g.name, type: 'TIMESTAMP' },
      { name: g.name, type: 'TIMESTAMPTZ' },
    ]
    for (const separator of DATE_SEPARATORS) {
      for (const type of ['DATE', 'TIMESTAMP'] as const) {
        for (const format of sniffedFormats(type, separator))
          if (format.includes('%Y')) candidates.push({ name: g.name, type, format })
      }
    }
    const inner = new Probes()
    const valid = candidates.map((c) => inner.add(count(`${exactValue(c, text)} IS NOT NULL`)))
    const counts = await inner.run(choice)
    let best = 0
    for (let i = 1; i < candidates.length; i++)
      if (num(counts[valid[i]!]) > num(counts[valid[best]!])) best = i
    const parsed = num(counts[valid[best]!])
    if (parsed * 2 < values || parsed === values) return { name: g.name, type: 'VARCHAR' }
    const column = candidates[best]!
    const examples = await one(
      choice.connection,
      `SELECT min(${text}) FILTER (WHERE ${present} AND ${exactValue(column, text)} IS NULL) AS bad, ` +
        `min(${text}) FILTER (WHERE ${exactValue(column, text)} IS NOT NULL) AS good FROM (${choice.textSelect})`,
    )
    throw await refuseValue(
      choice,
      g.name,
      String(examples.bad),
      `is not ${expectedText(column)} like its other values (${showValue(examples.good)})`,
    )
  }
}

/** `reason` completes "column c holds v, which ...": `is not a DATE written YYYY-MM-DD`. */
async function refuseValue(
  choice: TypeChoice,
  column: string,
  value: string,
  reason: string,
): Promise<SourceError> {
  const where = await choice.locate(column, value)
  return new SourceError(
    choice.tableName,
    `${choice.tableName}: ${where}: column ${column} holds ${showValue(value)}, which ${reason}; nothing ` +
      `was staged. Fix the value, or declare the column's type in the source of table ${choice.tableName}: ` +
      `columns: { ${column}: VARCHAR }`,
  )
}

async function refuseAmbiguous(
  choice: TypeChoice,
  column: string,
  type: 'DATE' | 'TIMESTAMP',
  samples: readonly string[],
  first: string,
  second: string,
): Promise<SourceError> {
  const read = async (format: string) => {
    const values = samples.map(
      (s) => `CAST(${exactValue({ name: column, type, format }, sqlString(s))} AS VARCHAR)`,
    )
    const row = await one(choice.connection, `SELECT [${values.join(', ')}] AS v`)
    return (row.v as string[]).join(' and ')
  }
  const files = choice.files.map((f) => f.name)
  const shown =
    files.length > 3 ? `${files.slice(0, 3).join(', ')} and ${files.length - 3} more` : files.join(', ')
  const declare = (format: string) => describeColumnType({ name: column, type, format })
  return new SourceError(
    choice.tableName,
    `${choice.tableName}: column ${column} of ${shown} holds ${type === 'DATE' ? 'dates' : 'timestamps'} that ` +
      `read two ways: ${samples.join(' and ')} ${samples.length > 1 ? 'are' : 'is'} ${await read(first)} ` +
      `as ${first}, but ${await read(second)} as ${second}; nothing was staged. Declare the format in the ` +
      `source of table ${choice.tableName}: columns: { ${column}: ${declare(first)} } (or ${declare(second)})`,
  )
}

/** A value as shown in a message: bare when it is a plain word, number or date, else quoted; at most 60 characters. */
export function showValue(value: unknown): string {
  if (value === null || value === undefined) return 'NULL'
  const text = String(value)
  const shown = [...text].length > 60 ? `${[...text].slice(0, 60).join('')}…` : text
  return /^[\w.:+/-]+$/.test(shown) ? shown : JSON.stringify(shown)
}
