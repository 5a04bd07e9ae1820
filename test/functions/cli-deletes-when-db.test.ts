import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { KITS, type DbScratch } from '../integration/sources/support/db-kits.ts'
import { runDimsync } from '../support/cli-process.ts'

/**
 * deletes: { when: "deleted = 1" } on a database table that soft-deletes with an integer flag (the extract stages
 * the flag as it is, so the merge compares it with 1), through the real CLI on PostgreSQL and MariaDB.
 */
describe.each(KITS)('deletes: { when } on a $kit.label source (real process)', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let work: string
    beforeAll(async () => {
      db = await kit.create()
    })
    afterAll(async () => {
      await db.drop()
    })
    beforeEach(() => {
      work = mkdtempSync(join(tmpdir(), 'dimsync-cli-deletes-when-'))
    })
    afterEach(() => rmSync(work, { recursive: true, force: true }))

    const dimsync = (...args: string[]) => {
      return runDimsync(work, args, db.env)
    }

    it('a row whose flag is 2 is not a delete, one whose flag is 1 is', async () => {
      const t = db.table('cust_flagged')
      await db.sql(
        `CREATE TABLE ${t} (customer_id BIGINT NOT NULL, region ${kit.ddl.text}, deleted INTEGER NOT NULL)`,
      )
      await db.sql(`INSERT INTO ${t} VALUES (1, 'South', 0), (2, 'North', 0), (3, 'East', 0)`)
      writeFileSync(
        join(work, 'dimsync.yaml'),
        `version: 1
tables:
  - name: cust
    source: { type: ${kit.name}, url_env: DB_URL, table: ${t} }
    key: customer_id
    deletes: { when: deleted = 1 }
`,
      )
      const first = dimsync('run', '--extracted-at', '2024-01-01T00:00:00Z')
      expect(first.code, first.err).toBe(0)
      await db.sql(`UPDATE ${t} SET deleted = 1 WHERE customer_id = 2`)
      await db.sql(`UPDATE ${t} SET deleted = 2 WHERE customer_id = 3`)
      const second = dimsync('run', '--extracted-at', '2024-01-02T00:00:00Z')
      expect(second.code, second.err).toBe(0)
      const warehouse = await DuckDbWarehouse.open({ path: join(work, '.dimsync', 'warehouse.duckdb') })
      try {
        const rows = await warehouse.query(
          'SELECT customer_id, is_current FROM dim_cust ORDER BY customer_id, valid_from',
        )
        expect(rows.map((r) => [Number(r.customer_id), r.is_current])).toEqual([
          [1, true],
          [2, false],
          [3, true],
        ])
      } finally {
        await warehouse.close()
      }
    }, 120_000)
  })
})
