import { ConfigError } from '../core/errors.ts'

/**
 * Typed readers for environment variables (in the style of Powertools' envUtils): trim the value, treat an
 * empty string as unset, and throw a `ConfigError` naming the variable and what was expected. Pure: the
 * environment is passed in, so tests never touch `process.env`.
 */

export type Env = Readonly<Record<string, string | undefined>>

/** Where an environment problem is reported from in `ConfigError.file`. */
const SOURCE = 'environment'

function raw(env: Env, key: string): string | undefined {
  const value = env[key]?.trim()
  return value === undefined || value === '' ? undefined : value
}

function fail(key: string, what: string): ConfigError {
  return new ConfigError(SOURCE, [`${key}: ${what}`])
}

/** A required string; `ConfigError` "<KEY>: is required (<hint>)" when unset or blank. */
export function readRequiredString(env: Env, key: string, hint?: string): string {
  const value = raw(env, key)
  if (value === undefined) throw fail(key, `is required${hint ? ` (${hint})` : ''}`)
  return value
}

/** An optional string; `defaultValue` (or undefined) when unset or blank. */
export function readString(env: Env, key: string): string | undefined
export function readString(env: Env, key: string, defaultValue: string): string
export function readString(env: Env, key: string, defaultValue?: string): string | undefined {
  return raw(env, key) ?? defaultValue
}

/** An integer within [min, max]; `defaultValue` (or undefined) when unset. */
export function readInteger(
  env: Env,
  key: string,
  options: { defaultValue: number; min?: number; max?: number },
): number
export function readInteger(
  env: Env,
  key: string,
  options: { defaultValue?: number; min?: number; max?: number },
): number | undefined
export function readInteger(
  env: Env,
  key: string,
  options: { defaultValue?: number; min?: number; max?: number },
): number | undefined {
  const value = raw(env, key)
  if (value === undefined) return options.defaultValue
  const min = options.min ?? Number.MIN_SAFE_INTEGER
  const max = options.max ?? Number.MAX_SAFE_INTEGER
  const parsed = /^-?\d+$/.test(value) ? Number(value) : Number.NaN
  if (!Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
    throw fail(key, `expected an integer from ${min} to ${max}, got ${JSON.stringify(value)}`)
  }
  return parsed
}

/** The units DuckDB reads in a memory size (any case), as `readMemorySize` names them. */
const MEMORY_UNITS = ['B', 'KB', 'MB', 'GB', 'TB', 'KiB', 'MiB', 'GiB', 'TiB']
const MEMORY_SIZE = new RegExp(`^(\\d+(?:\\.\\d+)?) *(${MEMORY_UNITS.join('|')})$`, 'i')

/**
 * A memory size as DuckDB reads it (`112MB`, `1.5 GiB`), returned as written; `defaultValue` (or undefined) when
 * unset. Refused here rather than by DuckDB, which answers a word with "Failed to set config" and takes a
 * negative size for no limit at all.
 */
export function readMemorySize(env: Env, key: string, defaultValue: string): string
export function readMemorySize(env: Env, key: string, defaultValue?: string): string | undefined
export function readMemorySize(env: Env, key: string, defaultValue?: string): string | undefined {
  const value = raw(env, key)
  if (value === undefined) return defaultValue
  const size = MEMORY_SIZE.exec(value)
  if (size === null || Number(size[1]) <= 0) {
    throw fail(
      key,
      `expected a memory size above 0 with a unit, such as 112MB or 1GB (${MEMORY_UNITS.join(', ')}), ` +
        `got ${JSON.stringify(value)}`,
    )
  }
  return value
}

/** One of `choices`; `defaultValue` when unset. */
export function readChoice<const T extends string>(
  env: Env,
  key: string,
  choices: readonly T[],
  defaultValue: T,
): T {
  const value = raw(env, key)
  if (value === undefined) return defaultValue
  if (!(choices as readonly string[]).includes(value)) {
    throw fail(key, `expected one of ${choices.join(', ')}, got ${JSON.stringify(value)}`)
  }
  return value as T
}

/** `true/1/yes/on` or `false/0/no/off` (any case); `defaultValue` when unset. */
export function readBoolean(env: Env, key: string, defaultValue: boolean): boolean {
  const value = raw(env, key)?.toLowerCase()
  if (value === undefined) return defaultValue
  if (['true', '1', 'yes', 'on'].includes(value)) return true
  if (['false', '0', 'no', 'off'].includes(value)) return false
  throw fail(key, `expected true or false, got ${JSON.stringify(value)}`)
}

/** An http(s) URL (endpoint overrides); undefined when unset. */
export function readUrl(env: Env, key: string): string | undefined {
  const value = raw(env, key)
  if (value === undefined) return undefined
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw fail(key, `expected an http(s) URL, got ${JSON.stringify(value)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw fail(key, `expected an http(s) URL, got ${JSON.stringify(value)}`)
  }
  return value
}
