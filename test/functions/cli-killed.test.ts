import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../support/embedded-project.ts'
import {
  dimsyncKilledAt as dimsync,
  expectNothingLeft,
  historyOf as history,
  killEachAndRerun,
  seeded,
  writeCustomersSnapshots,
  type KillPoint,
} from '../support/killed-runs.ts'
import { PG_URL, PgScratch, postgresReachable } from '../integration/sources/support/db-services.ts'

/**
 * `dimsync run` killed with SIGKILL at seeded points of its extract and of its merge, then run again with the same
 * command: the rerun exits 0, and the history after every snapshot is the one runs that were never killed leave.
 */
const KEYS = 20_000

let killed: EmbeddedProject
let clean: EmbeddedProject
afterEach(async () => {
  await Promise.all([killed.dispose(), clean.dispose()])
})

describe('dimsync run killed with SIGKILL (a real CLI process)', () => {
  beforeEach(async () => {
    ;[killed, clean] = await Promise.all([
      makeEmbeddedProject(customersYaml('deletes: invalidate'), 'dimsync-killed-'),
      makeEmbeddedProject(customersYaml('deletes: invalidate'), 'dimsync-clean-'),
    ])
  })

  it(
    'at seeded points of its extract and its merge: the same command again exits 0 and leaves the clean history',
    {
      timeout: 600_000,
    },
    async () => {
      const random = seeded(20_261_130)
      const delay = (maxMs: number) => Math.floor(random() * maxMs)
      const points: KillPoint[] = [
        { phase: 'extract', line: /locked by run-/, delayMs: delay(300) },
        { phase: 'between extract and merge', line: /extracted batch /, delayMs: 0 },
        { phase: 'merge', line: /merging batch /, delayMs: delay(200) },
        { phase: 'merge', line: /merging batch /, delayMs: delay(200) },
        { phase: 'after the merge committed', line: /merged batch /, delayMs: 0 },
      ]
      const landed = await killEachAndRerun({
        killed,
        clean,
        points,
        dimsync,
        before: writeCustomersSnapshots([killed, clean], KEYS, random),
      })
      // On a fast machine a run may finish before a late kill point; most kills must land.
      expect(landed.filter((l) => l.includes('SIGKILL')).length, landed.join('\n')).toBeGreaterThanOrEqual(3)
      expect(await history(killed)).toEqual(await history(clean))
      await expectNothingLeft(killed, 'customers')
    },
  )
})

const PG_AVAILABLE = await postgresReachable()
/** Rows of the PostgreSQL table: about 45 MB of CSV, so the extract stages several parts (cut at 6 MiB). */
const PG_ROWS = 150_000
const PG_URL_VARIABLE = 'DIMSYNC_KILLED_TEST_PG_URL'

/** Part files of batches that have no manifest in the project's staging folder (an extract cut short). */
function uncommittedParts(project: EmbeddedProject, table: string): number {
  const folder = join(project.dir, '.dimsync', 'staging', table)
  if (!existsSync(folder)) return 0
  return readdirSync(folder)
    .filter((batch) => !existsSync(join(folder, batch, '_manifest.json')))
    .flatMap((batch) => readdirSync(join(folder, batch)).filter((name) => name.endsWith('.parquet'))).length
}

describe.skipIf(!PG_AVAILABLE)(
  'dimsync run of a PostgreSQL table killed with SIGKILL in the middle of its parts',
  () => {
    let pg: PgScratch
    beforeEach(async () => {
      process.env[PG_URL_VARIABLE] = PG_URL
      pg = await PgScratch.create()
      await pg.sql(`CREATE TABLE ${pg.schema}.c (id bigint PRIMARY KEY, region text, pad text)`)
      await pg.sql(
        `INSERT INTO ${pg.schema}.c SELECT g, 'r' || (g % 4), repeat('p', 300) FROM generate_series(1, ${PG_ROWS}) g`,
      )
      const yaml = [
        'version: 1',
        'tables:',
        '  - name: c',
        `    source: { type: postgres, url_env: ${PG_URL_VARIABLE}, table: ${pg.schema}.c }`,
        '    key: id',
        '    deletes: invalidate',
        '',
      ].join('\n')
      ;[killed, clean] = await Promise.all([
        makeEmbeddedProject(yaml, 'dimsync-killed-pg-'),
        makeEmbeddedProject(yaml, 'dimsync-clean-pg-'),
      ])
    })
    afterEach(async () => {
      await pg.drop()
    })

    it(
      'while the extract stages parts, at the manifest and in the merge: the same command again exits 0 and leaves the clean history',
      { timeout: 600_000 },
      async () => {
        const random = seeded(20_261_204)
        const delay = (maxMs: number) => Math.floor(random() * maxMs)
        const staged = (parts: number) => ({
          line: /^$/,
          delayMs: 0,
          partsStaged: () => uncommittedParts(killed, 'c') >= parts,
        })
        const points: KillPoint[] = [
          { phase: 'extract, 1 part staged', ...staged(1) },
          { phase: 'extract, 3 parts staged', ...staged(3) },
          { phase: 'extract, 5 parts staged', ...staged(5) },
          { phase: 'between extract and merge', line: /extracted batch /, delayMs: 0 },
          { phase: 'merge', line: /merging batch /, delayMs: delay(300) },
        ]
        const landed = await killEachAndRerun({
          killed,
          clean,
          points,
          dimsync,
          // Each snapshot changes some regions and deletes a few keys.
          before: async (n) => {
            if (n === 0) return
            await pg.sql(`UPDATE ${pg.schema}.c SET region = 'moved ${n}' WHERE id % 7 = ${n}`)
            await pg.sql(`DELETE FROM ${pg.schema}.c WHERE id % 1000 = ${n}`)
          },
          after: () => {
            const parts = uncommittedParts(killed, 'c')
            return parts > 0 ? `, ${parts} parts staged without a manifest` : ''
          },
        })
        expect(landed.filter((l) => l.includes('SIGKILL')).length, landed.join('\n')).toBeGreaterThanOrEqual(
          3,
        )
        // At least one kill landed between two parts of the extract.
        expect(
          landed.some((l) => l.includes('SIGKILL') && l.includes('parts staged without a manifest')),
          landed.join('\n'),
        ).toBe(true)
        expect(await history(killed)).toEqual(await history(clean))
        await expectNothingLeft(killed, 'c')
      },
    )
  },
)
