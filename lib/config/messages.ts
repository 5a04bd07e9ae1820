import { didYouMean } from './did-you-mean.ts'

/** How a YAML value is quoted back in a message: scalars verbatim, containers by kind (they can be huge). */
export function show(value: unknown): string {
  if (value === undefined) return 'nothing'
  if (value === null) return 'null'
  if (typeof value === 'string') return JSON.stringify(value)
  if (Array.isArray(value)) return 'a list'
  if (typeof value === 'object') return 'a mapping'
  return String(value)
}

/** `must be <what> (got <value>)`, or `is required` when the key is missing; suggests a close string value. */
export function mustBe(what: string, input: unknown, candidates?: readonly string[]): string {
  if (input === undefined) return 'is required'
  const hint = typeof input === 'string' && candidates !== undefined ? didYouMean(input, candidates) : ''
  return `must be ${what} (got ${show(input)})${hint}`
}

export function oneOfText(values: readonly string[]): string {
  return `one of ${values.join(', ')}`
}

/** One line per key: zod reports all unknown keys of an object in one issue, users read one per line. */
export function unknownKeysMessage(keys: readonly string[], known: readonly string[]): string {
  return keys.map((key) => `unknown key "${key}"${didYouMean(key, known)}`).join('\n')
}

/** `tables[1].key[0]`: the path as the user would point at it in the YAML. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out === '' ? String(part) : `.${String(part)}`
  }
  return out === '' ? '(root)' : out
}
