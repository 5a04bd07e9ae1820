import fc from 'fast-check'
import { expect } from 'vitest'

import { SourceError } from '../../../../lib/core/errors.ts'
import { exactNumber } from '../../../support/exact-number.ts'
import type { StagedExtract } from './extract-harness.ts'

/**
 * A column of the exact-values properties (postgres- and mysql-exact-values-property.test.ts): its type in the
 * source, its values, and how each side reads it.
 */
export interface ExactColumn {
  readonly name: string
  readonly type: string
  readonly values: fc.Arbitrary<string | null>
  /** The source's reading of the column (a select expression), and DuckDB's of the staged one. */
  readonly held: (c: string) => string
  readonly staged: (c: string) => string
  /** Whether the two readings are one value (default: the same text). */
  readonly same?: (held: unknown, staged: string) => boolean
}

/** A column's values, NULL now and then. */
export const nullable = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> =>
  fc.option(arb, { freq: 8, nil: null })

/**
 * A float's value from a reading of it: a number, or a text as a database prints it (NaN, Infinity, -0). Two
 * printers may spell one double differently (where its shortest digits lie halfway to the next double, PostgreSQL
 * prints 17 digits and DuckDB the shortest), so values are compared, not texts.
 */
function floatValue(reading: unknown, round: (x: number) => number): number {
  const t = String(reading).trim().toLowerCase()
  if (t === 'nan') return NaN
  if (/^[+-]?inf(inity)?$/.test(t)) return t.startsWith('-') ? -Infinity : Infinity
  return round(Number(t))
}

/** The same float, its two zeros one value (docs/limits.md: DuckDB keeps no sign of zero apart from the other). */
function sameFloat(a: number, b: number): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b))
}

export const sameDouble = (held: unknown, staged: string): boolean =>
  sameFloat(floatValue(held, Number), floatValue(staged, Number))
export const sameReal = (held: unknown, staged: string): boolean =>
  sameFloat(floatValue(held, Math.fround), floatValue(staged, Math.fround))
/** The same decimal number, however written (`1.50`, `15e-1`). */
export const sameDigits = (held: unknown, staged: string): boolean =>
  exactNumber(String(held)) !== undefined && exactNumber(String(held)) === exactNumber(staged)

/** DuckDB's select list of the staged part: the key `id` and each column's reading. */
export function stagedSelect(columns: readonly ExactColumn[]): string {
  return `id, ${columns.map((c) => `${c.staged(`"${c.name}"`)} AS "${c.name}"`).join(', ')}`
}

/**
 * The source's rows (`id` and each column's reading) against what the extract staged: every value one value on
 * both sides, or the extract refused with a SourceError naming a column. Says which of the two happened.
 */
export function expectStagedAsHeld(
  columns: readonly ExactColumn[],
  held: readonly Record<string, unknown>[],
  staged: StagedExtract | unknown,
): 'staged' | 'refused' {
  if (staged instanceof Error) {
    expect(staged).toBeInstanceOf(SourceError)
    expect(
      columns.some((c) => staged.message.includes(c.name)),
      staged.message,
    ).toBe(true)
    return 'refused'
  }
  const { rows } = staged as StagedExtract
  expect(rows.map((r) => Number(r.id))).toEqual(held.map((r) => Number(r.id)))
  for (const [i, row] of held.entries()) {
    for (const c of columns) {
      const [source, copy] = [row[c.name] ?? null, (rows[i]![c.name] as string | null) ?? null]
      const where = `row ${String(row.id)}, column ${c.name} (${c.type}): source ${String(source)}, staged ${copy}`
      if (source === null || copy === null) expect(copy, where).toBe(source)
      else expect((c.same ?? ((a, b) => a === b))(source, copy), where).toBe(true)
    }
  }
  return 'staged'
}

/** Random rows of the columns' values, one to eight (each row's key `id` is its position, from 1). */
export function rowsOf(columns: readonly ExactColumn[]): fc.Arbitrary<(string | null)[][]> {
  return fc.array(
    fc.tuple(...columns.map((c) => c.values)).map((row) => [...row]),
    { minLength: 1, maxLength: 8 },
  )
}

/**
 * Writes `rows` into the empty table `target` one value at a time, each as `literal` spells it: a value the server
 * itself refuses (out of its type's range or calendar) is left out of its row, NULL.
 */
export async function insertRows(
  sql: (text: string) => Promise<unknown>,
  target: string,
  columns: readonly ExactColumn[],
  rows: readonly (string | null)[][],
  literal: (column: ExactColumn, value: string) => string,
): Promise<void> {
  for (const [i, row] of rows.entries()) {
    await sql(`INSERT INTO ${target} (id) VALUES (${i + 1})`)
    for (const [j, value] of row.entries()) {
      if (value === null) continue
      const column = columns[j]!
      await sql(`UPDATE ${target} SET ${column.name} = ${literal(column, value)} WHERE id = ${i + 1}`).catch(
        () => undefined,
      )
    }
  }
}
