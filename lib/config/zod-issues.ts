import type { z } from 'zod'
import { mustBe } from './messages.ts'

/** One problem found in the config, before it is rendered as `<path>: <message>`. */
export interface ConfigIssue {
  readonly path: readonly PropertyKey[]
  readonly message: string
}

/**
 * Safety net for issues whose schema carries no message of its own; every schema in config-schema.ts sets one,
 * so this only words what a future schema forgets.
 */
export const fallbackErrorMap = (issue: { code?: string; input?: unknown; expected?: string }): string => {
  if (issue.input === undefined) return 'is required'
  if (issue.code === 'invalid_type') return mustBe(`a ${issue.expected ?? 'different type'}`, issue.input)
  return mustBe('a different value', issue.input)
}

/** A union member rejected the value's type or literal outright: its nested complaints are not the user's. */
function rejectsAtRoot(issues: readonly z.core.$ZodIssue[]): boolean {
  return issues.some(
    (issue) =>
      issue.path.length === 0 &&
      (issue.code === 'invalid_type' || issue.code === 'invalid_value' || issue.code === 'invalid_union'),
  )
}

/**
 * Flattens zod issues into config issues. A failed union reports the complaints of the one member whose shape
 * the value has (`key: [id, 5]` is a list with a bad entry, not "not a string"); when no member or several fit,
 * the union's own message lists the accepted forms.
 */
export function fromZodIssues(
  issues: readonly z.core.$ZodIssue[],
  base: readonly PropertyKey[] = [],
): ConfigIssue[] {
  const out: ConfigIssue[] = []
  for (const issue of issues) {
    const path = [...base, ...issue.path]
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      const fitting = issue.errors.filter((branch) => !rejectsAtRoot(branch))
      if (fitting.length === 1) {
        out.push(...fromZodIssues(fitting[0]!, path))
        continue
      }
    }
    for (const line of issue.message.split('\n')) out.push({ path, message: line })
  }
  return out
}
