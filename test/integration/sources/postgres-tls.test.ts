import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { PostgresSource } from '../../../lib/adapters/source/postgres-source.ts'
import { SourceError } from '../../../lib/core/errors.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { postgresKit, sourceSpec, type DbScratch } from './support/db-kits.ts'
import { PG_URL, postgresReachable } from './support/db-services.ts'
import { ExtractHarness } from './support/extract-harness.ts'
import { TLS_TABLE_ROWS, tlsTableRows } from './support/tls-table.ts'
import { startPostgresTlsProxy, type PostgresTlsProxy } from './support/postgres-tls-proxy.ts'

// The connection reads its socket into a buffer of its own unless TLS is asked for (pg-read-buffer-socket.ts):
// an extract over TLS must read the same rows as one without.
describe.skipIf(!(await postgresReachable()))('PostgreSQL source over TLS (a TLS-terminating proxy)', () => {
  let db: DbScratch
  let harness: ExtractHarness
  let proxy: PostgresTlsProxy
  const target = new URL(PG_URL)
  const urlThroughProxy = (query: string) => {
    const url = new URL(PG_URL)
    url.host = `127.0.0.1:${proxy.port}`
    url.search = query
    return url.toString()
  }
  const spec = tableSpec({ name: 'accounts', key: ['id'], source: sourceSpec(postgresKit, '') })
  const specOf = () => ({ ...spec, source: sourceSpec(postgresKit, db.table('accounts')) })

  beforeAll(async () => {
    db = await postgresKit.create()
    harness = await ExtractHarness.create()
    proxy = await startPostgresTlsProxy({ host: target.hostname, port: Number(target.port || 5432) })
    await db.sql(`CREATE TABLE ${db.table('accounts')} (id bigint PRIMARY KEY, note text, at timestamptz)`)
    // About 2 MB: many reads of the encrypted stream.
    await db.sql(
      `INSERT INTO ${db.table('accounts')} SELECT i, repeat(chr(65 + i % 26), 500) || ' ünïcode', ` +
        `timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second' FROM generate_series(1, 4000) AS s(i)`,
    )
  })
  afterAll(async () => {
    await proxy?.close()
    await db?.drop()
    await harness?.close()
  })

  it('stages every row exactly, read through an encrypted connection the client verified', async () => {
    const source = new PostgresSource({
      env: {
        DB_URL: urlThroughProxy(`?sslmode=verify-full&sslrootcert=${encodeURIComponent(proxy.caFile)}`),
      },
    })
    const { result, rows } = await harness.extract(source, specOf())
    expect(result.rows).toBe(TLS_TABLE_ROWS)
    expect(rows).toEqual(tlsTableRows('+00'))
    expect(proxy.stats.tlsSessions).toBeGreaterThan(0)
    expect(proxy.stats.plainSessions).toBe(0)
    expect(proxy.stats.bytesToClient).toBeGreaterThan(2_000_000)
  })

  it('refuses a server whose certificate it cannot verify, naming the table, and stages nothing', async () => {
    const source = new PostgresSource({ env: { DB_URL: urlThroughProxy('?sslmode=verify-full') } })
    const error = await harness.extract(source, specOf()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SourceError)
    expect((error as SourceError).message).toMatch(/table accounts: .*certificate/i)
    expect(await harness.leftovers('accounts')).toEqual([])
  })
})
