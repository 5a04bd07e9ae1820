import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { PostgresSource } from '../../../lib/adapters/source/postgres-source.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ExtractHarness } from './support/extract-harness.ts'
import { PG_URL, PgScratch, postgresReachable } from './support/db-services.ts'

const available = await postgresReachable()

describe.skipIf(!available)('PostgreSQL: which unique indexes prove a key unique (real PostgreSQL)', () => {
  let db: PgScratch
  let harness: ExtractHarness

  beforeAll(async () => {
    db = await PgScratch.create()
    harness = await ExtractHarness.create()
    await db.sql(`CREATE TABLE ${db.schema}.accounts (id int NOT NULL, name text)`)
    await db.sql(`INSERT INTO ${db.schema}.accounts VALUES (1, 'a'), (2, 'b'), (2, 'c')`)
    // A concurrent build that meets the duplicate fails and leaves the index behind, marked INVALID.
    await db
      .sql(`CREATE UNIQUE INDEX CONCURRENTLY accounts_id ON ${db.schema}.accounts (id)`)
      .catch(() => undefined)
    const [index] = (
      await db.sql(`SELECT indisvalid FROM pg_index WHERE indexrelid = '${db.schema}.accounts_id'::regclass`)
    ).rows
    expect(index).toEqual({ indisvalid: false })
  })
  afterAll(async () => {
    await db?.drop()
    await harness?.close()
  })

  it('an INVALID unique index (a failed CREATE UNIQUE INDEX CONCURRENTLY) does not spare the duplicate check', async () => {
    const table = tableSpec({
      name: 'accounts',
      key: ['id'],
      source: { type: 'postgres', urlEnv: 'PG_URL', table: `${db.schema}.accounts` },
    })
    await expect(harness.extract(new PostgresSource({ env: { PG_URL } }), table)).rejects.toThrow(
      /the key \(id\) is not unique in \S+accounts \(PostgreSQL at [^)]+\), for example \(2\) 2 times/,
    )
  })
})
