import { describe, expect, it } from 'vitest'

import { readEndpoint, redact } from '../../../../lib/adapters/source/db-connection.ts'
import { SourceError } from '../../../../lib/core/errors.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

const table = (type: 'postgres' | 'mysql') =>
  tableSpec({ name: 'customers', source: { type, urlEnv: 'DB_URL', table: 'public.customers' } })

describe('readEndpoint', () => {
  it('names the server without the password', () => {
    const endpoint = readEndpoint(table('postgres'), {
      DB_URL: 'postgres://app:p%40ss@db.internal:6543/sales?sslmode=require',
    })
    expect(endpoint).toMatchObject({
      host: 'db.internal',
      port: 6543,
      database: 'sales',
      user: 'app',
      password: 'p@ss',
    })
    expect(endpoint.label).toBe('PostgreSQL at db.internal:6543/sales')
    expect(readEndpoint(table('mysql'), { DB_URL: 'mariadb://root@localhost/test' }).port).toBe(3306)
  })

  it('says which variable is missing, malformed or of the wrong kind, never echoing its value', () => {
    expect(() => readEndpoint(table('postgres'), {})).toThrow(
      'table customers: environment variable DB_URL (source.url_env) is not set',
    )
    const malformed = (() => {
      try {
        readEndpoint(table('postgres'), { DB_URL: 'not a url with secret' })
      } catch (error) {
        return error as SourceError
      }
    })()
    expect(malformed).toBeInstanceOf(SourceError)
    expect(malformed?.message).toContain('DB_URL does not hold a URL')
    expect(malformed?.message).not.toContain('secret')
    expect(() => readEndpoint(table('mysql'), { DB_URL: 'postgres://u:pw@h/d' })).toThrow(
      'holds a postgres URL, but the source type is mysql',
    )
  })
})

describe('redact', () => {
  it('removes the password, plain and URL-encoded, and the whole URL', () => {
    const endpoint = readEndpoint(table('postgres'), { DB_URL: 'postgres://app:p%40ss@h:5432/d' })
    expect(redact('failed for postgres://app:p%40ss@h:5432/d with p@ss and p%40ss', endpoint)).toBe(
      'failed for *** with *** and ***',
    )
  })

  it('leaves names that merely contain the password as they are, and masks it where it stands alone', () => {
    const endpoint = readEndpoint(table('postgres'), { DB_URL: 'postgres://app:bad@h:5432/d' })
    expect(
      redact('table pgbad: relation "public.pgbad_missing" does not exist (bad_x, x_bad, xbadx)', endpoint),
    ).toBe('table pgbad: relation "public.pgbad_missing" does not exist (bad_x, x_bad, xbadx)')
    expect(redact('password=bad; user app:bad@h "bad" bad', endpoint)).toBe(
      'password=***; user app:***@h "***" ***',
    )
    // A password whose edge is not a letter, digit or underscore cannot be part of a name on that side.
    const symbols = readEndpoint(table('postgres'), { DB_URL: 'postgres://app:%23bad@h:5432/d' })
    expect(redact('pg#bad and #badly', symbols)).toBe('pg*** and #badly')
  })
})
