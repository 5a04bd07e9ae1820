import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { parseProject } from '../../../lib/config/index.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { buildLocalDeps } from '../../../lib/runtime/local-deps.ts'
import { openSource } from '../../../lib/runtime/open-source.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { actual, assertInvariants, iso } from '../../support/history-checks.ts'
import { expectedHistory, feedCaptures, type FeedEvent } from '../../support/history-model.ts'
import type { VersionRow } from '../../support/scd-harness.ts'
import { KITS, type DbScratch } from './support/db-kits.ts'

/** One event of the feed and the run before which the CDC tool inserted it into the source table. */
interface Delivered {
  readonly round: number
  readonly key: number
  readonly t: number
  readonly op: FeedEvent['op']
  readonly region: string | null
  readonly tier: string | null
}

const ROUNDS = 4

/**
 * A feed delivered over a few runs: each event lands in the source table before one of the runs, in any order
 * of change times, so an event often arrives after a newer one of its key (a late event) or at a change time
 * already loaded (a correction). The CDC tool numbers events in the order it writes them (`seq`).
 */
const deliveriesArb: fc.Arbitrary<Delivered[]> = fc.array(
  fc.record({
    round: fc.integer({ min: 0, max: ROUNDS - 1 }),
    key: fc.integer({ min: 1, max: 3 }),
    t: fc.integer({ min: 0, max: 10 }),
    op: fc.constantFrom<FeedEvent['op']>('I', 'U', 'U', 'D'),
    region: fc.constantFrom('South', 'North', null),
    tier: fc.constantFrom('gold', null),
  }),
  { minLength: 1, maxLength: 14 },
)

describe.each(KITS)('a $kit.label change feed with late events (property)', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let dir: string
    const q = (name: string) => (kit.name === 'postgres' ? `"${name}"` : `\`${name}\``)
    const text = (v: string | null) => (v === null ? 'NULL' : `'${v}'`)
    const sqlTime = (hour: number) => iso(hour).replace('T', ' ').replace('Z', '')

    beforeAll(async () => {
      db = await kit.create()
      dir = await mkdtemp(join(tmpdir(), 'dimsync-feed-late-'))
    })
    afterAll(async () => {
      await db?.drop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    it('runs between late inserts give the history of all events loaded at once', async () => {
      let run = 0
      let lateEvents = 0
      await fc.assert(
        fc.asyncProperty(deliveriesArb, async (deliveries) => {
          run++
          const source = db.table(`feed_${run}`)
          await db.sql(
            `CREATE TABLE ${source} (${q('Op')} ${kit.ddl.text} NOT NULL, seq BIGINT NOT NULL,
              changed_at ${kit.ddl.timestamp} NOT NULL, customer_id BIGINT NOT NULL, region ${kit.ddl.text},
              tier ${kit.ddl.text})`,
          )
          const work = join(dir, `run_${run}`)
          const table = (name: string) => `  - name: ${name}
    source: { type: ${kit.name}, url_env: DB_URL, table: ${source} }
    key: customer_id
    extract: { mode: changes, sequence: seq }
    valid_from: { column: changed_at }
`
          const project = parseProject(
            `version: 1
warehouse: { type: duckdb, path: ${join(work, 'warehouse.duckdb')} }
staging: { type: local, path: ${join(work, 'staging')} }
state: { type: local, path: ${join(work, 'state')} }
tables:
${table('late')}${table('at_once')}`,
            join(work, 'dimsync.yaml'),
          )
          const local = await buildLocalDeps(project)
          const deps = {
            ...local,
            openSource: (t: TableSpec) => openSource(t, { baseDir: work, env: db.env }),
          }
          const spec = (name: string) => project.tables.find((t) => t.name === name)!
          const history = async (target: string) => {
            const warehouse = await deps.openWarehouse()
            try {
              return (await warehouse.query(
                `SELECT dimsync_sk, customer_id, region, tier, CAST(valid_from AS VARCHAR) AS valid_from,
                   CAST(valid_to AS VARCHAR) AS valid_to, is_current, is_deleted
                 FROM main.${target} ORDER BY customer_id, valid_from`,
              )) as VersionRow[]
            } finally {
              await deps.releaseWarehouse?.()
            }
          }
          try {
            const events: FeedEvent[] = []
            const newest = new Map<number, number>()
            for (let round = 0; round < ROUNDS; round++) {
              const now = deliveries.filter((d) => d.round === round)
              for (const d of now) {
                const seq = events.length + 1
                if ((newest.get(d.key) ?? -1) > d.t) lateEvents++
                events.push({ key: d.key, t: d.t, seq, op: d.op, attrs: { region: d.region, tier: d.tier } })
                await db.sql(
                  `INSERT INTO ${source} VALUES ('${d.op}', ${seq}, '${sqlTime(d.t)}', ${d.key}, ${text(d.region)}, ${text(d.tier)})`,
                )
              }
              for (const d of now) newest.set(d.key, Math.max(newest.get(d.key) ?? -1, d.t))
              await runTable(deps, spec('late'), { extractedAt: new Date(iso(100 + round)) })
            }
            await runTable(deps, spec('at_once'), { extractedAt: new Date(iso(200)) })
            const late = await history('dim_late')
            assertInvariants(late)
            const expected = expectedHistory(feedCaptures(events, 'invalidate'), 'invalidate')
            expect(actual(await history('dim_at_once'))).toEqual(expected)
            expect(actual(late)).toEqual(expected)
          } finally {
            await deps.close()
            await db.sql(`DROP TABLE ${source}`)
          }
        }),
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 25) },
      )
      expect(lateEvents).toBeGreaterThan(0)
    }, 600_000)
  })
})
