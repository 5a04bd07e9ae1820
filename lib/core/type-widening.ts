import { typeFamily, wholeNumberType } from './staged-types.ts'

/**
 * Whether a column whose staged type was `from` can take values of type `to` by widening its type in place
 * (schema evolution): every value of `from` is a value of `to`, and its canonical text (the row hash's, see
 * staged-types.ts) stays the same, so widening rewrites no value, changes no hash and opens no version.
 *
 * - a whole number to a wider one (INTEGER → BIGINT; unsigned to a wider signed one);
 * - a decimal to a higher precision with the same scale (DECIMAL(10,2) → DECIMAL(18,2)): a scale change would
 *   change the canonical text (`1.50` → `1.500`);
 * - single to double precision floating point (the canonical text is the double's);
 * - a bounded VARCHAR(n) to a longer or unbounded one.
 *
 * Anything else (narrower, another family, a scale change) is not a widening: the merge refuses it and names
 * the ways out (a new column name, or `dimsync evolve`).
 */
export function isWidening(from: string, to: string): boolean {
  const a = typeFamily(from)
  const b = typeFamily(to)
  const fromWhole = wholeNumberType(from)
  const toWhole = wholeNumberType(to)
  if (fromWhole !== undefined && toWhole !== undefined) {
    if (!toWhole.signed && fromWhole.signed) return false
    return toWhole.bits > fromWhole.bits
  }
  if (a.kind === 'decimal' && b.kind === 'decimal') return b.scale === a.scale && b.precision > a.precision
  if (a.kind === 'float' && b.kind === 'float') return floatBits(from) < floatBits(to)
  if (a.kind === 'string' && b.kind === 'string') {
    const n = varcharLength(from)
    const m = varcharLength(to)
    return n !== undefined && (m === undefined || m > n)
  }
  return false
}

function floatBits(type: string): number {
  return ['FLOAT', 'FLOAT4', 'REAL'].includes(type.trim().toUpperCase()) ? 32 : 64
}

/** The n of VARCHAR(n); undefined for an unbounded string type. */
function varcharLength(type: string): number | undefined {
  const match = /^VARCHAR\s*\(\s*(\d+)\s*\)$/i.exec(type.trim())
  return match === null ? undefined : Number(match[1])
}
