/**
 * The zod building blocks of dimsync.yaml's schema, each with the message a user reads (zod's own, "Invalid
 * input", does not say what to write instead). Shared by config-schema.ts and the warehouses' config parts.
 */
import { z } from 'zod'
import { mustBe, oneOfText, unknownKeysMessage } from './messages.ts'

/** Later quoted in SQL, but odd names are refused here so the failure points at the YAML, not at a query. */
export const IDENTIFIER_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/
export const IDENTIFIER_TEXT = 'letters, digits and _, not starting with a digit'

export type ErrorInput = { readonly input?: unknown }
export const expecting =
  (what: string, candidates?: readonly string[]) =>
  (issue: ErrorInput): string =>
    mustBe(what, issue.input, candidates)

export function patterned(pattern: RegExp, what: string) {
  return z.string({ error: expecting(what) }).regex(pattern, { error: expecting(what) })
}

export function nonEmpty(what: string) {
  return z.string({ error: expecting(what) }).min(1, { error: expecting(what) })
}

export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, { error: expecting(oneOfText(values), values) })
}

export function list<T extends z.ZodType>(item: T, what: string, min: 0 | 1 = 0) {
  const message = (issue: ErrorInput) =>
    Array.isArray(issue.input) ? 'must not be empty' : mustBe(what, issue.input)
  return z.array(item, { error: message }).min(min, { error: message })
}

export function strict<T extends z.core.$ZodLooseShape>(shape: T, what = 'a mapping') {
  const known = Object.keys(shape)
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys' ? unknownKeysMessage(issue.keys, known) : mustBe(what, issue.input),
  })
}
