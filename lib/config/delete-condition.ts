/**
 * `deletes: { when: "<column> = <value>" }`: the rows of a source that soft-deletes (Databricks' apply_as_deletes).
 * The language is one comparison of a column with a literal, parsed here and rendered by each dialect from the
 * parsed parts, never pasted into SQL. Pure.
 */
import type { DeleteLiteral } from '../core/table-spec.ts'
import { IDENTIFIER_PATTERN } from './config-schema.ts'

export interface DeleteCondition {
  readonly column: string
  readonly equals: DeleteLiteral
}

/** What a condition looks like, for the refusal. */
export const DELETE_CONDITION_TEXT =
  "<column> = <value>, the value true, false, a number or a quoted text (is_deleted = true, op = 'D', deleted = 1)"

const CONDITION = /^\s*([^\s=]+)\s*=\s*(.*?)\s*$/s
const NUMBER = /^-?[0-9]+(\.[0-9]+)?$/
const TEXT = /^'((?:[^']|'')*)'$/s

/** The condition `text` states, or the reason it is refused. */
export function parseDeleteCondition(text: string): DeleteCondition | { readonly problem: string } {
  const parts = CONDITION.exec(text)
  if (parts === null) return { problem: `must be ${DELETE_CONDITION_TEXT}` }
  const [, column, value] = parts as unknown as [string, string, string]
  if (!IDENTIFIER_PATTERN.test(column))
    return { problem: `"${column}" is not a column name (letters, digits and _, not starting with a digit)` }
  const lower = value.toLowerCase()
  if (lower === 'true' || lower === 'false')
    return { column, equals: { kind: 'boolean', value: lower === 'true' } }
  if (NUMBER.test(value)) return { column, equals: { kind: 'number', value } }
  const quoted = TEXT.exec(value)
  if (quoted !== null) return { column, equals: { kind: 'text', value: quoted[1]!.replaceAll("''", "'") } }
  return {
    problem:
      `${JSON.stringify(value)} is not a value: write true, false, a number, or a text in single quotes ` +
      `('D'; a quote inside is doubled: 'it''s')`,
  }
}
