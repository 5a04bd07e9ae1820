import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { lockObjects } from '../../lib/adapters/warehouse/postgres-object-lock.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../support/embedded-project.ts'
import { CUSTOMERS_HEADER, customersSnapshot, dimsyncKilledAt, historyOf } from '../support/killed-runs.ts'
import { PG_URL, dropPostgresSchemas } from '../integration/sources/support/db-services.ts'

/**
 * Two installations of dimsync (two project folders, each with its own state: no lease in common) running into one
 * PostgreSQL warehouse schema, through the CLI as users run it.
 */
const URL_VARIABLE = 'DIMSYNC_TWO_INSTALLATIONS_PG_URL'
const KEYS = 30_000
const schema = `two_installations_${randomBytes(5).toString('hex')}`
const yaml =
  customersYaml('deletes: invalidate') +
  `warehouse: { type: postgres, url_env: ${URL_VARIABLE}, schema: ${schema} }\n`
const run = (project: EmbeddedProject, month: number, env: NodeJS.ProcessEnv = {}) =>
  dimsyncKilledAt(
    project.dir,
    ['run', '--extracted-at', new Date(Date.UTC(2024, month, 1)).toISOString()],
    undefined,
    {
      [URL_VARIABLE]: PG_URL,
      ...env,
    },
  )

let first: EmbeddedProject
let second: EmbeddedProject
beforeEach(async () => {
  process.env[URL_VARIABLE] = PG_URL
  ;[first, second] = await Promise.all([
    makeEmbeddedProject(yaml, 'dimsync-install-a-'),
    makeEmbeddedProject(yaml, 'dimsync-install-b-'),
  ])
})
afterEach(async () => {
  await Promise.all([first.dispose(), second.dispose()])
  await dropPostgresSchemas(schema)
})

describe('two installations, one PostgreSQL warehouse schema (real CLI processes and server)', () => {
  it('runs at the same moment take turns: one current version per key, an older snapshot refused by name', async () => {
    let random = 1
    const next = () => (random = (random * 48_271) % 2_147_483_647) / 2_147_483_647
    for (let round = 0; round < 3; round++) {
      first.writeCsv('customers.csv', CUSTOMERS_HEADER, customersSnapshot(2 * round, KEYS, next))
      second.writeCsv('customers.csv', CUSTOMERS_HEADER, customersSnapshot(2 * round + 1, KEYS, next))
      const [a, b] = await Promise.all([run(first, 2 * round), run(second, 2 * round + 1)])
      for (const stopped of [a, b])
        if (stopped.code !== 0)
          expect(stopped.err).toMatch(/customers: .*not after batch .* which is already merged/)
      expect(
        [a, b].some((s) => s.code === 0),
        `${a.err}\n${b.err}`,
      ).toBe(true)
    }
    const versions = (await historyOf(first)) as Record<string, unknown>[]
    const current = versions.filter((v) => v.is_current === true)
    expect(new Set(current.map((v) => v.customer_id)).size).toBe(current.length)
    expect(current.length).toBeGreaterThan(KEYS / 2)
  })

  it('a run that finds the table written by another waits, then stops naming it; nothing written, the next run goes on', async () => {
    first.writeCsv(
      'customers.csv',
      CUSTOMERS_HEADER,
      customersSnapshot(0, 100, () => 0.5),
    )
    expect(await run(first, 0)).toMatchObject({ code: 0 })
    const holder = new pg.Client({
      connectionString: PG_URL,
      application_name: 'dimsync pid 4242 on elsewhere',
    })
    await holder.connect()
    try {
      const release = await lockObjects(holder, [{ schema, name: 'dim_customers' }], {
        waitMs: 0,
        waitSetting: 'test',
      })
      second.writeCsv(
        'customers.csv',
        CUSTOMERS_HEADER,
        customersSnapshot(1, 100, () => 0.05),
      )
      const stopped = await run(second, 1, { DIMSYNC_WAREHOUSE_WAIT_SECONDS: '1' })
      expect(stopped.code).not.toBe(0)
      expect(stopped.err).toContain(`${schema}.dim_customers is being written by another dimsync`)
      expect(stopped.err).toContain('session "dimsync pid 4242 on elsewhere"')
      expect(stopped.err).toContain('waited 1 s (DIMSYNC_WAREHOUSE_WAIT_SECONDS)')
      expect(await historyOf(first)).toHaveLength(100)
      await release()
    } finally {
      await holder.end()
    }
    expect(await run(second, 1)).toMatchObject({ code: 0 })
    expect(((await historyOf(first)) as unknown[]).length).toBeGreaterThan(100)
  })
})
