import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { FileSource } from '../../../lib/adapters/source/file-source.ts'
import { parseProject } from '../../../lib/config/index.ts'
import { SourceError } from '../../../lib/core/errors.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { BIGQUERY_ENDPOINT_VARIABLE, buildLocalDeps } from '../../../lib/runtime/local-deps.ts'
import { openSource } from '../../../lib/runtime/open-source.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { BigQueryEmulator } from '../../support/bigquery-emulator/bigquery-emulator.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { KITS, sourceSpec, type DbScratch } from './support/db-kits.ts'
import { ExtractHarness } from './support/extract-harness.ts'

/**
 * `exclude: [password_hash]` keeps the column on the source side: it is not read, not staged in Parquet, and no
 * request to BigQuery names it (no staging table, load, script or dimension holds it), so a failed merge leaves
 * no copy of it behind for the staging table's lifetime.
 */
const SECRET = 'password_hash'
const SECRET_VALUE = 'pbkdf2$never-leaves-the-source'

describe.each(KITS)('excluded columns of a $kit.label table', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let harness: ExtractHarness
    let emulator: BigQueryEmulator
    let dir: string
    const spec = (exclude: readonly string[]): TableSpec =>
      tableSpec({ name: 'accounts', key: ['id'], source: sourceSpec(kit, db.table('accounts')), exclude })

    beforeAll(async () => {
      db = await kit.create()
      harness = await ExtractHarness.create()
      emulator = await BigQueryEmulator.start()
      emulator.createDataset('acme-dw', 'history', { location: 'EU' })
      dir = await mkdtemp(join(tmpdir(), 'dimsync-excluded-'))
      await db.sql(
        `CREATE TABLE ${db.table('accounts')} (id BIGINT PRIMARY KEY, name ${kit.ddl.text}, ${SECRET} ${kit.ddl.text})`,
      )
      await db.sql(
        `INSERT INTO ${db.table('accounts')} VALUES (1, 'Ana', '${SECRET_VALUE}'), (2, 'Bruno', '${SECRET_VALUE}')`,
      )
    })
    afterAll(async () => {
      await emulator?.stop()
      await harness?.close()
      await db?.drop()
      if (dir) await rm(dir, { recursive: true, force: true })
    })

    it('is neither read nor staged: the Parquet parts and the manifest columns lack it', async () => {
      const staged = await harness.extract(kit.source(db.env), spec([SECRET]))
      expect(Object.keys(staged.types)).toEqual(['id', 'name'])
      expect(staged.result.columns.map((c) => c.name)).toEqual(['id', 'name'])
      expect(JSON.stringify(staged.rows)).not.toContain(SECRET_VALUE)
    })

    it('an excluded column the source lacks is refused naming the table and the column', async () => {
      const error = await harness.extract(kit.source(db.env), spec(['pasword_hash'])).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(SourceError)
      expect((error as Error).message).toMatch(
        /^table accounts: excluded column pasword_hash is not a column of /,
      )
    })

    it('no request to BigQuery names it: staging table, load, merge script and dimension', async () => {
      const yaml = `version: 1
warehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU }
staging: { type: local, path: ${join(dir, 'staging')} }
state: { type: local, path: ${join(dir, 'state')} }
tables:
  - name: accounts
    source: { type: ${kit.name}, url_env: DB_URL, table: ${db.table('accounts')} }
    target: dim_accounts
    key: id
    exclude: [${SECRET}]
`
      const project = parseProject(yaml, join(dir, 'dimsync.yaml'))
      const previous = process.env[BIGQUERY_ENDPOINT_VARIABLE]
      process.env[BIGQUERY_ENDPOINT_VARIABLE] = emulator.url
      try {
        const local = await buildLocalDeps(project, undefined, {}, { bigQuery: { pollIntervalMs: 20 } })
        const deps = { ...local, openSource: (t: TableSpec) => openSource(t, { baseDir: dir, env: db.env }) }
        try {
          const result = await runTable(deps, project.tables[0]!, {
            extractedAt: new Date('2024-01-01T00:00:00Z'),
          })
          expect(result.merge.status).toBe('merged')
        } finally {
          await deps.close()
        }
      } finally {
        if (previous === undefined) delete process.env[BIGQUERY_ENDPOINT_VARIABLE]
        else process.env[BIGQUERY_ENDPOINT_VARIABLE] = previous
      }
      const dimension = emulator.rows({ projectId: 'acme-dw', datasetId: 'history', tableId: 'dim_accounts' })
      expect(dimension?.map((r) => r.name).sort()).toEqual(['Ana', 'Bruno'])
      const createdTables = emulator.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/tables'))
      expect(createdTables.length).toBeGreaterThan(0)
      expect(JSON.stringify(emulator.requests)).not.toContain(SECRET)
    })
  })
})

describe('excluded columns of a CSV file source', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dimsync-excluded-file-'))
    await writeFile(join(dir, 'accounts.csv'), `id,name,${SECRET}\n1,Ana,${SECRET_VALUE}\n`)
  })
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true })
  })
  const spec = (exclude: readonly string[]): TableSpec =>
    tableSpec({
      name: 'accounts',
      key: ['id'],
      source: { type: 'file', path: 'accounts.csv', format: 'csv', csv: { header: true, delimiter: ',' } },
      exclude,
    })

  it('is not staged', async () => {
    const harness = await ExtractHarness.create()
    try {
      const staged = await harness.extract(new FileSource({ baseDir: dir }), spec([SECRET]))
      expect(Object.keys(staged.types)).toEqual(['id', 'name'])
      expect(staged.result.columns.map((c) => c.name)).toEqual(['id', 'name'])
      expect(await new FileSource({ baseDir: dir }).describe(spec([SECRET]))).toEqual(staged.result.columns)
    } finally {
      await harness.close()
    }
  })

  it('an excluded column the file lacks is refused naming the table and the column', async () => {
    const harness = await ExtractHarness.create()
    try {
      const error = await harness
        .extract(new FileSource({ baseDir: dir }), spec(['pasword_hash']))
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(SourceError)
      expect((error as Error).message).toMatch(/^accounts: excluded column pasword_hash is not a column of /)
    } finally {
      await harness.close()
    }
  })
})
