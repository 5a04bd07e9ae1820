/**
 * Connection URLs of database sources: read from the environment variable the table names, parsed only to name
 * the server in messages. The password never appears in a message: every text that leaves a database source
 * goes through `redact`.
 */
import { SourceError } from '../../core/errors.ts'
import type { DatabaseSourceSpec, TableSpec } from '../../core/table-spec.ts'

export interface DbEndpoint {
  /** The URL as found in the environment (holds the password: never print it). */
  readonly url: string
  readonly host: string
  readonly port: number
  readonly database: string
  readonly user: string
  readonly password: string | undefined
  /** The environment variable it came from. */
  readonly envName: string
  /** `PostgreSQL at 127.0.0.1:5432/test`, for messages. */
  readonly label: string
}

const KINDS = {
  postgres: { name: 'PostgreSQL', protocols: ['postgres:', 'postgresql:'], port: 5432 },
  mysql: { name: 'MySQL', protocols: ['mysql:', 'mariadb:'], port: 3306 },
} as const

/**
 * Reads and checks the connection URL of `table` from `env[source.url_env]`. Throws a `SourceError` naming the
 * variable when it is unset, empty, not a URL or of the wrong kind (the URL itself is never echoed).
 */
export function readEndpoint(
  table: TableSpec,
  env: Readonly<Record<string, string | undefined>>,
): DbEndpoint {
  const spec = table.source as DatabaseSourceSpec
  const kind = KINDS[spec.type]
  const name = spec.urlEnv
  const url = env[name]
  if (url === undefined || url.trim() === '') {
    throw new SourceError(
      table.name,
      `table ${table.name}: environment variable ${name} (source.url_env) is not set; set it to a URL like ` +
        `${kind.protocols[0]}//user:password@host:${kind.port}/database`,
    )
  }
  let parsed: URL
  try {
    parsed = new URL(url.trim())
  } catch {
    throw new SourceError(
      table.name,
      `table ${table.name}: environment variable ${name} does not hold a URL (expected ` +
        `${kind.protocols[0]}//user:password@host:${kind.port}/database)`,
    )
  }
  if (!(kind.protocols as readonly string[]).includes(parsed.protocol)) {
    throw new SourceError(
      table.name,
      `table ${table.name}: environment variable ${name} holds a ${parsed.protocol.replace(':', '')} URL, but the ` +
        `source type is ${spec.type} (expected ${kind.protocols.join(' or ')}//...)`,
    )
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '') || 'localhost'
  const port = parsed.port === '' ? kind.port : Number(parsed.port)
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''))
  const user = decodeURIComponent(parsed.username)
  const password = parsed.password === '' ? undefined : decodeURIComponent(parsed.password)
  return {
    url: url.trim(),
    host,
    port,
    database,
    user,
    password,
    envName: name,
    label: `${kind.name} at ${host}:${port}/${database}`,
  }
}

/**
 * `text` with the whole URL and the endpoint's password (plain and URL-encoded) replaced by `***`. The password
 * is masked where it stands on its own, not inside a longer name (table `pgbad` with password `bad`): a message
 * must name the table it is about.
 */
export function redact(text: string, endpoint: DbEndpoint): string {
  let out = text.replaceAll(endpoint.url, '***')
  const password = endpoint.password
  if (password !== undefined && password.length > 0) {
    out = maskStandalone(maskStandalone(out, password), encodeURIComponent(password))
  }
  return out
}

const NAME_CHARACTER = /[A-Za-z0-9_$]/

/** `text` with every occurrence of `secret` replaced by `***`, except where it continues a name on either side. */
function maskStandalone(text: string, secret: string): string {
  const joinsBefore = NAME_CHARACTER.test(secret[0]!)
  const joinsAfter = NAME_CHARACTER.test(secret[secret.length - 1]!)
  let out = ''
  let from = 0
  for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) {
    if (at < from) continue
    const before = text[at - 1]
    const after = text[at + secret.length]
    const insideName =
      (joinsBefore && before !== undefined && NAME_CHARACTER.test(before)) ||
      (joinsAfter && after !== undefined && NAME_CHARACTER.test(after))
    if (insideName) continue
    out += `${text.slice(from, at)}***`
    from = at + secret.length
  }
  return out + text.slice(from)
}

/** Node network error codes that mean "the server could not be reached", worded for a user. */
const NETWORK: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused (is the server running and listening on that port?)',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed (temporary DNS failure)',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
}

/** The user wording of a network error code (`ECONNREFUSED`), or undefined when it is not one. */
export function networkProblem(error: unknown): string | undefined {
  const code = errorCode(error)
  if (code !== undefined && NETWORK[code]) return NETWORK[code]
  const message = errorMessage(error)
  if (/timeout expired|connect(ion)? ?timeout|ETIMEDOUT/i.test(message)) return 'connection timed out'
  return undefined
}

/** Error codes that mean an open connection was lost (server restart, killed session, network cut). */
export function isConnectionLost(error: unknown): boolean {
  const code = errorCode(error)
  if (
    code !== undefined &&
    ['ECONNRESET', 'EPIPE', 'PROTOCOL_CONNECTION_LOST', '57P01', '57P02', '57P03'].includes(code)
  )
    return true
  if (code !== undefined && /^08/.test(code)) return true
  return /Connection terminated|connection lost|Connection is closed|server closed the connection/i.test(
    errorMessage(error),
  )
}

export function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

export function errorMessage(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return errorMessage(error.errors[0])
  return error instanceof Error ? error.message : String(error)
}
