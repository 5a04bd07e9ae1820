/**
 * The text a person reads for a value the warehouse returned: a list, struct, map or interval (an array or object
 * in a row) as its JSON text; anything else as String() gives it. String() of an object is `[object Object]`, and
 * of a list its elements joined by commas, which no one can read back.
 */
export function valueText(value: unknown): string {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value)
}
