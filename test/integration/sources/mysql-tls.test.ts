import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { MysqlSource } from '../../../lib/adapters/source/mysql-source.ts'
import { SourceError } from '../../../lib/core/errors.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ExtractHarness } from './support/extract-harness.ts'
import { TLS_TABLE_ROWS, tlsTableRows } from './support/tls-table.ts'
import {
  mariaDbServerInstalled,
  startMariaDbTlsServer,
  type MariaDbTlsServer,
} from './support/mariadb-tls-server.ts'

const installed = await mariaDbServerInstalled()
if (!installed) {
  if (process.env.DIMSYNC_REQUIRE_SERVICES === '1')
    throw new Error('the MariaDB server binaries are required (DIMSYNC_REQUIRE_SERVICES=1) but not installed')
  console.warn(
    'skipping the MySQL TLS tests: no MariaDB server binaries (/usr/sbin/mariadbd) on this machine',
  )
}

// The connection reads its socket into buffers of its own unless TLS is asked for (mysql-read-socket.ts): an
// extract over TLS must read the same rows. The server is a real MariaDB with TLS, started for this file.
describe.skipIf(!installed)('MySQL source over TLS (a MariaDB server of its own)', () => {
  let server: MariaDbTlsServer
  let harness: ExtractHarness
  const spec = tableSpec({
    name: 'accounts',
    key: ['id'],
    source: { type: 'mysql', urlEnv: 'DB_URL', table: 'shop.accounts' },
  })
  const url = (ssl?: unknown) =>
    `mysql://reader:reader-pw@127.0.0.1:${server.port}/shop` +
    (ssl === undefined ? '' : `?ssl=${encodeURIComponent(JSON.stringify(ssl))}`)
  const failure = async (dbUrl: string): Promise<SourceError> => {
    const error = await harness
      .extract(new MysqlSource({ env: { DB_URL: dbUrl }, connectTimeoutMs: 5000 }), spec)
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SourceError)
    expect((error as SourceError).message).not.toContain('reader-pw')
    expect(await harness.leftovers('accounts')).toEqual([])
    return error as SourceError
  }

  beforeAll(async () => {
    server = await startMariaDbTlsServer()
    harness = await ExtractHarness.create()
    await server.sql('CREATE DATABASE shop CHARACTER SET utf8mb4')
    await server.sql('CREATE TABLE shop.accounts (id BIGINT PRIMARY KEY, note TEXT, at DATETIME(6))')
    await server.sql('SET SESSION max_recursive_iterations = 5000')
    await server.sql(
      `INSERT INTO shop.accounts WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 4000)
       SELECT i, CONCAT(REPEAT(CHAR(65 + i % 26 USING utf8mb4), 500), ' ünïcode'), TIMESTAMP('2024-01-01') + INTERVAL i SECOND
       FROM s`,
    )
    // The reader can only connect over TLS.
    await server.sql(`CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY 'reader-pw' REQUIRE SSL`)
    await server.sql(`GRANT SELECT ON shop.* TO 'reader'@'127.0.0.1'`)
  }, 60_000)
  afterAll(async () => {
    await harness?.close()
    await server?.stop()
  })

  it('stages every row exactly, read through an encrypted connection that verified the server', async () => {
    const source = new MysqlSource({ env: { DB_URL: url({ ca: server.ca }) } })
    const { result, rows } = await harness.extract(source, spec)
    expect(result.rows).toBe(TLS_TABLE_ROWS)
    expect(rows).toEqual(tlsTableRows(''))
  })

  it('without TLS the server refuses the reader: the error names the table and says how to ask for TLS', async () => {
    const error = await failure(url())
    expect(error.message).toBe(
      `table accounts: MySQL at 127.0.0.1:${server.port}/shop: authentication failed for user reader; check the ` +
        `credentials in DB_URL, or, if the server requires an encrypted connection, add ssl to the URL ` +
        `(docs/sources.md, "Encrypted connections")`,
    )
  })

  it('refuses a server whose certificate it cannot verify', async () => {
    const error = await failure(url({}))
    expect(error.message).toMatch(/^table accounts: .*self-signed certificate/)
  })
})
