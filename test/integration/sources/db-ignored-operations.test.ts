import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { tableSpec } from '../../support/table-spec-builder.ts'
import { KITS, sourceSpec, type DbScratch } from './support/db-kits.ts'
import { ExtractHarness } from './support/extract-harness.ts'

describe.each(KITS)('$kit.label change feed extract with ignored operations', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let harness: ExtractHarness

    beforeAll(async () => {
      db = await kit.create()
      harness = await ExtractHarness.create()
      await db.sql(
        `CREATE TABLE ${db.table('feed')} (op ${kit.ddl.text} NULL, seq BIGINT NOT NULL, id BIGINT NULL,
          changed_at ${kit.ddl.timestamp} NOT NULL)`,
      )
      await db.sql(
        `INSERT INTO ${db.table('feed')} VALUES ('I', 1, 1, '2024-01-01 00:00:00'), ('B', 2, 1, '2024-01-02 00:00:00'),
          ('b', 3, 1, '2024-01-03 00:00:00'), ('B ', 4, 1, '2024-01-04 00:00:00'), (NULL, 5, 1, '2024-01-05 00:00:00'),
          ('HB', 6, NULL, '2024-01-06 00:00:00')`,
      )
    })
    afterAll(async () => {
      await db?.drop()
      await harness?.close()
    })

    it('skips exactly the ignored values (case and trailing spaces count); a NULL operation is kept for the merge to refuse', async () => {
      const table = tableSpec({
        name: 'feed',
        key: ['id'],
        source: sourceSpec(kit, db.table('feed')),
        extract: { mode: 'incremental', cursor: 'seq', lookbackMinutes: 0 },
        validFrom: { kind: 'column', column: 'changed_at' },
        changes: {
          operation: { column: 'op', insert: ['I'], update: ['U'], delete: ['D'], ignore: ['B', 'HB'] },
          sequence: 'seq',
        },
      })
      const { rows, result } = await harness.extract(kit.source(db.env), table, { orderBy: 'seq' })
      expect(rows.map((r) => [r.op, Number(r.seq)])).toEqual([
        ['I', 1],
        ['b', 3],
        ['B ', 4],
        [null, 5],
      ])
      // The heartbeat (newest, without a key) is not the watermark: the newest kept row is.
      expect(result.watermarkCandidate).toEqual({ cursor: 5, key: [1], column: 'seq' })
    })
  })
})
