import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../support/embedded-project.ts'
import {
  dimsyncKilledAt,
  expectNothingLeft,
  historyOf as history,
  killEachAndRerun,
  seeded,
  writeCustomersSnapshots,
  type KillPoint,
} from '../support/killed-runs.ts'
import { PG_URL, postgresReachable, dropPostgresSchemas } from '../integration/sources/support/db-services.ts'

/**
 * `dimsync run` into a PostgreSQL warehouse, killed with SIGKILL while it loads the batch into PostgreSQL, inside
 * its merge transaction and just after its COMMIT, then run again with the same command (docs/invariants.md,
 * "Nothing is lost"): the server rolls back what the dead client left open, the rerun exits 0 without waiting on a
 * lock the dead session held, and the history is the one runs that were never killed leave.
 */
const URL_VARIABLE = 'DIMSYNC_KILLED_PG_WAREHOUSE_URL'
/** Enough rows that the COPY into PostgreSQL and the merge take a few hundred milliseconds each. */
const KEYS = 60_000
const dimsync = (cwd: string, args: readonly string[], kill?: KillPoint) =>
  dimsyncKilledAt(cwd, args, kill, { [URL_VARIABLE]: PG_URL })

async function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

const PG_AVAILABLE = await postgresReachable()

describe.skipIf(!PG_AVAILABLE && !process.env.DIMSYNC_REQUIRE_SERVICES)(
  'dimsync run into a PostgreSQL warehouse killed with SIGKILL (a real CLI process and server)',
  () => {
    let killed: EmbeddedProject
    let clean: EmbeddedProject
    const schemas = [`killed_${randomBytes(5).toString('hex')}`, `clean_${randomBytes(5).toString('hex')}`]

    beforeEach(async () => {
      process.env[URL_VARIABLE] = PG_URL
      const yaml = (schema: string) =>
        customersYaml('deletes: invalidate') +
        `warehouse: { type: postgres, url_env: ${URL_VARIABLE}, schema: ${schema} }\n`
      ;[killed, clean] = await Promise.all([
        makeEmbeddedProject(yaml(schemas[0]!), 'dimsync-killed-pgw-'),
        makeEmbeddedProject(yaml(schemas[1]!), 'dimsync-clean-pgw-'),
      ])
    })
    afterEach(async () => {
      await Promise.all([killed.dispose(), clean.dispose()])
      await dropPostgresSchemas(...schemas)
    })

    it(
      'in the load, in the merge and after its COMMIT: the same command again exits 0 and leaves the clean history',
      { timeout: 600_000 },
      async () => {
        const random = seeded(20_261_205)
        const delay = (maxMs: number) => Math.floor(random() * maxMs)
        const points: KillPoint[] = [
          { phase: 'first load', line: /merging batch /, delayMs: delay(400) },
          { phase: 'merge', line: /merging batch /, delayMs: delay(300) },
          { phase: 'merge', line: /merging batch /, delayMs: 100 + delay(400) },
          { phase: 'merge', line: /merging batch /, delayMs: delay(150) },
          { phase: 'after the merge committed', line: /merged batch /, delayMs: 0 },
        ]
        const landed = await killEachAndRerun({
          killed,
          clean,
          points,
          dimsync,
          before: writeCustomersSnapshots([killed, clean], KEYS, random),
        })
        // A run may finish before a late kill point; most kills must land inside the merge.
        const inMerge = landed.filter((l) => l.includes('SIGKILL') && l.includes('merging batch'))
        expect(inMerge.length, landed.join('\n')).toBeGreaterThanOrEqual(2)
        expect(landed.filter((l) => l.includes('SIGKILL')).length, landed.join('\n')).toBeGreaterThanOrEqual(
          3,
        )

        const versions = await history(killed)
        expect(versions.length).toBeGreaterThan(KEYS)
        expect(versions).toEqual(await history(clean))
        await expectNothingLeft(killed, 'customers')
        // The dead sessions' transactions were rolled back by the server: none is left open on the schema.
        const open = await onServer(
          async (client) =>
            (
              await client.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND query LIKE $1`,
                [`%${schemas[0]}%`],
              )
            ).rows[0].n,
        )
        expect(open).toBe(0)
      },
    )
  },
)
