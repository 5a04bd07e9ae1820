import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { PG_URL, PgScratch, postgresReachable } from '../integration/sources/support/db-services.ts'
import { runDimsync } from '../support/cli-process.ts'

/** `dimsync validate` reads a database change feed's operation values as the next run would (real process). */
let work: string
let pg: PgScratch

describe.runIf(await postgresReachable())('validate of a PostgreSQL change feed', () => {
  beforeAll(async () => {
    pg = await PgScratch.create()
  })
  afterAll(async () => {
    await pg?.drop()
  })
  beforeEach(async () => {
    work = mkdtempSync(join(tmpdir(), 'dimsync-cli-validate-feed-'))
    writeFileSync(
      join(work, 'dimsync.yaml'),
      `version: 1
tables:
  - name: feed
    source: { type: postgres, url_env: SOURCE_URL, table: ${pg.schema}.feed }
    key: id
    extract: { mode: changes, operation: op, sequence: lsn }
    valid_from: { column: changed_at }
`,
    )
    await pg.sql(
      `CREATE TABLE ${pg.schema}.feed (id int, op text, changed_at timestamptz, lsn bigint, region text, note text)`,
    )
  })
  afterEach(async () => {
    await pg.sql(`DROP TABLE IF EXISTS ${pg.schema}.feed`)
    rmSync(work, { recursive: true, force: true })
  })

  const dimsync = (...args: string[]) => {
    return runDimsync(work, args, { SOURCE_URL: PG_URL })
  }

  it('refuses the values run refuses, and after a run reads only the changes after its watermark', async () => {
    await pg.sql(
      `INSERT INTO ${pg.schema}.feed VALUES (1, 'i', '2024-01-01', 1, 'S', 'x'), (2, 'I', '2024-01-01', 2, 'N', 'y'), ` +
        `(1, 'u', '2024-01-02', 3, 'W', NULL)`,
    )
    const refused = dimsync('validate')
    expect(refused.code).toBe(1)
    expect(refused.err).toContain(
      'tables[0] (feed): operation column "op" holds values that are none of I, U, D, which run refuses: ' +
        '"i" (1 row), "u" (1 row); values are compared exactly, case too: list them in extract.operation ' +
        '(e.g. insert: [I, i]) or fix the source',
    )
    expect(dimsync('run').err).toContain('whose operation (column op) is NULL or not one of I, U, D')
    expect(dimsync('discard', '--table', 'feed').code).toBe(0)

    await pg.sql(`UPDATE ${pg.schema}.feed SET op = upper(op)`)
    expect(dimsync('validate').code).toBe(0)
    expect(dimsync('run').code).toBe(0)
    // Changes already merged are not read again: only the new one is.
    await pg.sql(`INSERT INTO ${pg.schema}.feed VALUES (3, 'x', '2024-01-03', 4, 'E', NULL)`)
    expect(dimsync('validate').err).toContain('which run refuses: "x" (1 row); values are compared exactly')
  }, 120_000)
})
