/**
 * EventBridge Scheduler expressions (`rate(1 hour)`, `cron(0 3 * * ? *)`): validation with messages a user can act
 * on, and the longest gap between two runs, which the deployment turns into a staleness alarm. Pure: no I/O.
 *
 * Cron fields are minutes, hours, day-of-month, month, day-of-week, year (AWS flavour: one of day-of-month and
 * day-of-week must be `?`; day-of-week counts 1-7 from Sunday).
 */

export type ParsedSchedule =
  | { readonly kind: 'rate'; readonly minutes: number }
  | { readonly kind: 'cron'; readonly fields: readonly string[] }

const RATE = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/
const CRON = /^cron\((.+)\)$/
const MINUTES_PER_UNIT: Record<string, number> = { minute: 1, hour: 60, day: 1440 }
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC']
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT']

interface FieldRule {
  readonly name: string
  readonly min: number
  readonly max: number
  readonly names?: readonly string[]
  /** Extra tokens (L, W, #) AWS accepts in this field; they make a field monthly, see maxIntervalMinutes. */
  readonly special?: RegExp
}

const FIELDS: readonly FieldRule[] = [
  { name: 'minutes', min: 0, max: 59 },
  { name: 'hours', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31, special: /^(L|LW|L-\d{1,2}|\d{1,2}W)$/ },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  { name: 'day-of-week', min: 1, max: 7, names: DAYS, special: /^([1-7]|[A-Z]{3})(L|#[1-5])$|^L$/ },
  { name: 'year', min: 1970, max: 2199 },
]

/** Parses an expression; returns a message (`must be ...`) instead of throwing, for the config's issue list. */
export function parseScheduleExpression(text: string): ParsedSchedule | string {
  const trimmed = text.trim()
  const rate = RATE.exec(trimmed)
  if (rate !== null) {
    const value = Number(rate[1])
    const unit = rate[2]!.replace(/s$/, '')
    if (value < 1) return `rate must be at least 1 ${unit} (got ${JSON.stringify(text)})`
    // AWS refuses `rate(1 hours)` and `rate(2 hour)`; say which form it wants instead of a deploy-time failure.
    const wanted = value === 1 ? unit : `${unit}s`
    if (rate[2] !== wanted) return `must be rate(${value} ${wanted}) (got ${JSON.stringify(text)})`
    return { kind: 'rate', minutes: value * MINUTES_PER_UNIT[unit]! }
  }
  const cron = CRON.exec(trimmed)
  if (cron === null) {
    if (/^rate\(/.test(trimmed))
      return `must be rate(<number> minute(s)|hour(s)|day(s)), e.g. rate(1 hour) (got ${JSON.stringify(text)})`
    return `must be rate(...) or cron(...), e.g. rate(1 hour) or cron(0 3 * * ? *) (got ${JSON.stringify(text)})`
  }
  const fields = cron[1]!.trim().split(/\s+/)
  if (fields.length !== 6)
    return (
      `cron needs 6 fields (minutes hours day-of-month month day-of-week year), got ${fields.length} ` +
      `in ${JSON.stringify(text)}; e.g. cron(0 3 * * ? *) for 03:00 every day`
    )
  for (let i = 0; i < 6; i++) {
    const problem = fieldProblem(fields[i]!.toUpperCase(), FIELDS[i]!)
    if (problem !== undefined) return `cron ${FIELDS[i]!.name} field ${JSON.stringify(fields[i])}: ${problem}`
  }
  const [, , dom, , dow] = fields
  if ((dom === '?') === (dow === '?'))
    return `cron: exactly one of day-of-month and day-of-week must be ? (got ${JSON.stringify(text)}); e.g. cron(0 3 * * ? *)`
  return { kind: 'cron', fields: fields.map((f) => f.toUpperCase()) }
}

function fieldProblem(field: string, rule: FieldRule): string | undefined {
  if (field === '*' || (field === '?' && (rule.name === 'day-of-month' || rule.name === 'day-of-week')))
    return undefined
  for (const part of field.split(',')) {
    if (rule.special?.test(part)) continue
    const [range, step] = part.split('/') as [string, string | undefined]
    if (step !== undefined && !/^\d+$/.test(step)) return `step ${JSON.stringify(step)} is not a number`
    if (range === '*') continue
    const bounds = range.split('-')
    if (bounds.length > 2) return `${JSON.stringify(part)} is not a value, a range a-b or a list`
    for (const bound of bounds) {
      const value = valueOf(bound, rule)
      if (value === undefined)
        return `${JSON.stringify(bound)} is not between ${rule.min} and ${rule.max}${rule.names ? ` or one of ${rule.names.join(',')}` : ''}`
    }
  }
  return undefined
}

function valueOf(token: string, rule: FieldRule): number | undefined {
  const named = rule.names?.indexOf(token) ?? -1
  if (named >= 0) return named + rule.min
  if (!/^\d+$/.test(token)) return undefined
  const value = Number(token)
  return value >= rule.min && value <= rule.max ? value : undefined
}

/** The set of values a (validated) field allows; `undefined` for `?` and the monthly special tokens. */
function expand(field: string, rule: FieldRule): Set<number> | undefined {
  if (field === '?') return undefined
  const out = new Set<number>()
  for (const part of field.split(',')) {
    if (rule.special?.test(part)) return undefined
    const [range, stepText] = part.split('/') as [string, string | undefined]
    const step = stepText === undefined ? 1 : Math.max(1, Number(stepText))
    let from = rule.min
    let to = rule.max
    if (range !== '*') {
      const bounds = range.split('-').map((b) => valueOf(b, rule)!)
      from = bounds[0]!
      to = bounds.length === 2 ? bounds[1]! : stepText === undefined ? from : rule.max
    }
    for (let v = from; v <= to; v += step) out.add(v)
  }
  return out
}

/**
 * The longest time between two consecutive runs, in minutes. Rates are exact; crons are evaluated over two
 * years in UTC (a time zone shifts runs, not gaps, apart from a DST hour that twice-the-interval absorbs).
 * Crons that use L, W or # in a day field run about monthly: 35 days is returned.
 */
export function maxIntervalMinutes(parsed: ParsedSchedule, from = Date.UTC(2030, 0, 1)): number {
  if (parsed.kind === 'rate') return parsed.minutes
  const [minF, hourF, domF, monthF, dowF, yearF] = parsed.fields as [
    string,
    string,
    string,
    string,
    string,
    string,
  ]
  const minutes = expand(minF, FIELDS[0]!)!
  const hours = expand(hourF, FIELDS[1]!)!
  const months = expand(monthF, FIELDS[3]!)!
  const dom = expand(domF, FIELDS[2]!)
  const dow = expand(dowF, FIELDS[4]!)
  if ((domF !== '?' && dom === undefined) || (dowF !== '?' && dow === undefined)) return 35 * 1440
  const times = [...hours].flatMap((h) => [...minutes].map((m) => h * 60 + m)).sort((a, b) => a - b)
  const years = yearF === '*' ? undefined : expand(yearF, FIELDS[5]!)
  let previous: number | undefined
  let longest = 0
  const day = 86_400_000
  for (let t = from; t < from + 731 * day; t += day) {
    const date = new Date(t)
    if (years !== undefined && !years.has(date.getUTCFullYear())) continue
    if (!months.has(date.getUTCMonth() + 1)) continue
    if (dom !== undefined && !dom.has(date.getUTCDate())) continue
    if (dow !== undefined && !dow.has(date.getUTCDay() + 1)) continue
    const dayStart = t / 60_000
    for (const minute of times) {
      const at = dayStart + minute
      if (previous !== undefined) longest = Math.max(longest, at - previous)
      previous = at
    }
  }
  // A cron limited to a past year (or that never fires) has no interval; the caller treats 0 as "no alarm".
  return longest
}

/** True when `zone` is an IANA time zone name this runtime (and so EventBridge Scheduler) knows. */
export function isKnownTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return zone.length > 0
  } catch {
    return false
  }
}
