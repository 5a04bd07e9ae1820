/**
 * Reads the business time of a dated snapshot file from its name, for backfills:
 * `customers_%Y-%m-%d.csv` matches `customers_2024-03-10.csv` → 2024-03-10T00:00:00Z.
 * Tokens: %Y (4 digits) %m %d %H %M %S (2 digits); `*` matches anything; times are UTC.
 */
const TOKENS: Record<string, { readonly group: string; readonly digits: number }> = {
  '%Y': { group: 'year', digits: 4 },
  '%m': { group: 'month', digits: 2 },
  '%d': { group: 'day', digits: 2 },
  '%H': { group: 'hour', digits: 2 },
  '%M': { group: 'minute', digits: 2 },
  '%S': { group: 'second', digits: 2 },
}

export function compileTimePattern(pattern: string): (fileName: string) => Date | undefined {
  if (!pattern.includes('%Y'))
    throw new Error(`--time-from-name pattern "${pattern}" must contain %Y (and usually %m %d)`)
  let source = ''
  for (let i = 0; i < pattern.length; i++) {
    const two = pattern.slice(i, i + 2)
    const token = TOKENS[two]
    if (token) {
      if (source.includes(`(?<${token.group}>`))
        throw new Error(`--time-from-name pattern "${pattern}" repeats ${two}`)
      source += `(?<${token.group}>\\d{${token.digits}})`
      i++
    } else if (pattern[i] === '*') source += '.*'
    else source += pattern[i]!.replace(/[.+?^${}()|[\]\\]/g, '\\$&')
  }
  const regex = new RegExp(`^${source}$`)
  return (fileName) => {
    const g = regex.exec(fileName)?.groups
    if (!g) return undefined
    const n = (v: string | undefined, fallback: number) => (v === undefined ? fallback : Number(v))
    const date = new Date(
      Date.UTC(n(g.year, 0), n(g.month, 1) - 1, n(g.day, 1), n(g.hour, 0), n(g.minute, 0), n(g.second, 0)),
    )
    // Reject 2024-02-31 and friends rather than rolling over into March.
    if (date.getUTCMonth() !== n(g.month, 1) - 1 || date.getUTCDate() !== n(g.day, 1)) return undefined
    return date
  }
}
