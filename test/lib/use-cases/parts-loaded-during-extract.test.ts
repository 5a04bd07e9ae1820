import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'

import { PostgresSource } from '../../../lib/adapters/source/postgres-source.ts'
import { stagedParquetVersion } from '../../../lib/core/staged-parquet.ts'
import type { BatchWriter, StagingStore } from '../../../lib/ports/staging-store.ts'
import { isPartLoadingWarehouse, type Warehouse } from '../../../lib/ports/warehouse.ts'
import type { SqlDialect } from '../../../lib/sql/dialect.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'
import { PG_URL, PgScratch, postgresReachable } from '../../integration/sources/support/db-services.ts'

/**
 * `dimsync run` on a PostgreSQL table of several parts, through the CLI's adapters (real PostgreSQL, DuckDB, local
 * staging): the warehouse holds the batch's parts before its manifest exists, the merge starts from them, and an
 * extract that fails before its manifest leaves the dimension untouched and nothing loaded behind.
 */
const PG_AVAILABLE = await postgresReachable()
const ROWS = 3000
/** Spooled CSV cut into parts this small, so the batch has several (the CLI cuts at 6 MiB). */
const SPOOL_BYTES = 64 << 10
const URL_VARIABLE = 'DIMSYNC_OVERLAP_TEST_PG_URL'
const LOADED_PARTS = '__dimsync_loaded_parts'

let pg: PgScratch
let project: EmbeddedProject

beforeAll(async () => {
  if (!PG_AVAILABLE) return
  process.env[URL_VARIABLE] = PG_URL
  pg = await PgScratch.create()
  await pg.sql(`CREATE TABLE ${pg.schema}.t (id bigint PRIMARY KEY, name text, pad text)`)
  await pg.sql(
    `INSERT INTO ${pg.schema}.t SELECT g, 'name ' || g, repeat('x', 200) FROM generate_series(1, ${ROWS}) g`,
  )
})
afterAll(async () => {
  if (PG_AVAILABLE) await pg.drop()
})
beforeEach(async () => {
  if (!PG_AVAILABLE) return
  project = await makeEmbeddedProject(
    [
      'version: 1',
      'tables:',
      '  - name: t',
      `    source: { type: postgres, url_env: ${URL_VARIABLE}, table: ${pg.schema}.t }`,
      '    key: id',
      '',
    ].join('\n'),
    'dimsync-overlap-',
  )
})
afterEach(async () => {
  if (PG_AVAILABLE) await project.dispose()
})

/** What the test sees when the extract writes the batch's manifest, just before it does. */
interface AtManifest {
  readonly loadedRows: number
  readonly committedBatches: number
  readonly dimensionExists: boolean
}

/**
 * The project's adapters with a PostgreSQL source that cuts small parts, and a staging store that calls `atCommit`
 * before it writes a manifest (throwing there fails the extract before the manifest); `opened` sees each warehouse
 * the run opens, once.
 */
function deps(
  atCommit: () => Promise<void>,
  opened: (warehouse: Warehouse<SqlDialect>) => void = () => undefined,
) {
  const seen = new WeakSet<object>()
  const real = project.deps.staging
  const watched = (writer: BatchWriter): BatchWriter => ({
    table: writer.table,
    batchId: writer.batchId,
    scratchDir: writer.scratchDir,
    addPart: (path, rows) => writer.addPart(path, rows),
    commit: async (manifest) => {
      await atCommit()
      return await writer.commit(manifest)
    },
    suspend: (state) => writer.suspend(state),
    abort: (options) => writer.abort(options),
  })
  const staging: StagingStore = {
    beginBatch: async (table, batchId) => watched(await real.beginBatch(table, batchId)),
    resumeBatch: (table, batchId) => real.resumeBatch(table, batchId),
    listBatches: (table) => real.listBatches(table),
    openBatch: (table, batchId) => real.openBatch(table, batchId),
    openBatchOnDemand: (table, batchId) => real.openBatchOnDemand(table, batchId),
    deleteBatch: (table, batchId) => real.deleteBatch(table, batchId),
    removeAbandoned: (table, olderThan) => real.removeAbandoned(table, olderThan),
    listUncommitted: (table) => real.listUncommitted(table),
  }
  return {
    ...project.deps,
    staging,
    openWarehouse: async () => {
      const warehouse = await project.deps.openWarehouse()
      if (!seen.has(warehouse)) {
        seen.add(warehouse)
        opened(warehouse)
      }
      return warehouse
    },
    openSource: () =>
      new PostgresSource({
        env: process.env,
        spoolBytes: SPOOL_BYTES,
        parquetVersion: stagedParquetVersion('duckdb'),
      }),
  }
}

/** Rows in the warehouse's table of loaded parts (0 when it does not exist). */
async function loadedRows(): Promise<number> {
  const warehouse = await project.deps.openWarehouse()
  const tables = await warehouse.query(
    `SELECT COUNT(*) AS n FROM duckdb_tables() WHERE temporary AND table_name = '${LOADED_PARTS}'`,
  )
  if (Number(tables[0]!.n) === 0) return 0
  const [row] = await warehouse.query(`SELECT COUNT(*) AS n FROM "${LOADED_PARTS}"`)
  return Number(row!.n)
}

async function dimensionExists(): Promise<boolean> {
  const warehouse = await project.deps.openWarehouse()
  return (await warehouse.describeTable({ schema: 'main', name: 't' })) !== undefined
}

describe.skipIf(!PG_AVAILABLE)('a run loads each part into the warehouse as the extract stages it', () => {
  it('holds every part of the batch before the manifest exists, and the merge starts from them', async () => {
    const seen: AtManifest[] = []
    const table = project.project.tables[0]!
    let stagedFromFiles = 0
    const run = deps(
      async () => {
        seen.push({
          loadedRows: await loadedRows(),
          committedBatches: (await project.deps.staging.listBatches('t')).length,
          dimensionExists: await dimensionExists(),
        })
      },
      (warehouse) => {
        const loadStaging = warehouse.loadStaging.bind(warehouse)
        warehouse.loadStaging = async (paths) => {
          stagedFromFiles++
          return await loadStaging(paths)
        }
      },
    )

    const result = await runTable(run, table)

    expect(seen).toEqual([{ loadedRows: ROWS, committedBatches: 0, dimensionExists: false }])
    const loaded = project.events.filter((e) => e.step === 'part-loaded')
    const extracted = project.events.find((e) => e.step === 'extract')
    expect(extracted).toMatchObject({ rows: ROWS })
    const parts = (extracted as { parts: number }).parts
    expect(parts).toBeGreaterThan(2)
    expect(loaded.map((e) => (e as { parts: number }).parts)).toEqual(
      Array.from({ length: parts }, (_, i) => i + 1),
    )
    // The merge read the loaded parts, not the staged files.
    expect(stagedFromFiles).toBe(0)
    expect(result.merge.counts).toMatchObject({ events: ROWS, insertedVersions: ROWS })
    const history = await readHistory(await project.deps.openWarehouse(), { table, schema: 'main' })
    expect(history).toHaveLength(ROWS)
    expect(new Set(history.map((r) => Number(r.id))).size).toBe(ROWS)
    expect(await loadedRows()).toBe(0)
  })

  it('an extract that fails before its manifest applies nothing, leaves nothing loaded, and the next run loads it all', async () => {
    const table = project.project.tables[0]!
    let loadedAtFailure = 0
    const failing = deps(async () => {
      loadedAtFailure = await loadedRows()
      throw new Error('the disk filled up before the manifest')
    })
    await expect(runTable(failing, table)).rejects.toThrow('the disk filled up before the manifest')
    expect(loadedAtFailure).toBe(ROWS)

    expect(await dimensionExists()).toBe(false)
    expect(await loadedRows()).toBe(0)
    expect(await project.deps.staging.listBatches('t')).toEqual([])
    expect(await project.deps.staging.listUncommitted('t')).toEqual([])
    await project.deps.releaseWarehouse?.()

    const again = await runTable(
      deps(async () => undefined),
      table,
    )
    expect(again.merge.counts).toMatchObject({ events: ROWS, insertedVersions: ROWS })
    expect(again.resumed).toEqual([])
  })

  it('merges from the staged files when the loaded parts are not the manifest’s', async () => {
    // A part the warehouse cannot load spoils the load, not the run: the merge reads the staged files.
    const table = project.project.tables[0]!
    let adds = 0
    let stagedFromFiles = 0
    const run = deps(
      async () => undefined,
      (warehouse) => {
        if (!isPartLoadingWarehouse(warehouse)) throw new Error('the embedded warehouse loads parts')
        const begin = warehouse.beginPartLoad.bind(warehouse)
        warehouse.beginPartLoad = () => {
          const load = begin()
          const add = load.add.bind(load)
          load.add = async (path) => {
            adds++
            if (adds === 2) throw new Error('part 2 could not be read')
            await add(path)
          }
          return load
        }
        const loadStaging = warehouse.loadStaging.bind(warehouse)
        warehouse.loadStaging = async (paths) => {
          stagedFromFiles++
          return await loadStaging(paths)
        }
      },
    )
    const result = await runTable(run, table)
    // No part is loaded after the one that failed.
    expect(adds).toBe(2)
    expect(project.events.filter((e) => e.step === 'part-loaded')).toHaveLength(1)
    expect(stagedFromFiles).toBe(1)
    expect(result.merge.counts).toMatchObject({ events: ROWS, insertedVersions: ROWS })
    expect(await project.deps.staging.listBatches('t')).toEqual([])
    const history = await readHistory(await project.deps.openWarehouse(), { table, schema: 'main' })
    expect(history).toHaveLength(ROWS)
  })
})
