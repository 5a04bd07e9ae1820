/**
 * A number's exact value as text that two spellings of it share (`-01.50`, `-1.5`, `-15e-1` → `-15e-1`): the sign,
 * the significant digits and the power of ten of the last; every zero is `0`. Undefined for a text that is not a
 * decimal number (`NaN`, `Infinity`, `1.2.3`).
 */
export function exactNumber(text: string): string | undefined {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim())
  if (m === null || `${m[2]}${m[3] ?? ''}` === '') return undefined
  let digits = `${m[2]}${m[3] ?? ''}`.replace(/^0+/, '')
  let exponent = Number(m[4] ?? 0) - (m[3] ?? '').length
  if (digits === '') return '0'
  while (digits.endsWith('0')) {
    digits = digits.slice(0, -1)
    exponent++
  }
  return `${m[1] === '-' ? '-' : ''}${digits}e${exponent}`
}
