import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/index.ts'
import { BIGQUERY_ENDPOINT_VARIABLE, buildLocalDeps } from '../../../lib/runtime/local-deps.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { BigQueryEmulator } from '../../support/bigquery-emulator/bigquery-emulator.ts'
import { ZetaSqlService } from '../../support/bigquery-emulator/zetasql-service.ts'

process.env.METADATA_SERVER_DETECTION = 'none'

let zeta: ZetaSqlService
let emulator: BigQueryEmulator
let dir: string

beforeAll(async () => {
  zeta = await ZetaSqlService.start()
})
afterAll(async () => {
  await zeta.stop()
})
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dimsync-bq-deps-'))
  emulator = await BigQueryEmulator.start({ zetaSql: zeta })
  emulator.createDataset('acme-dw', 'history', { location: 'EU' })
  process.env[BIGQUERY_ENDPOINT_VARIABLE] = emulator.url
})
afterEach(async () => {
  delete process.env[BIGQUERY_ENDPOINT_VARIABLE]
  await emulator.stop()
  rmSync(dir, { recursive: true, force: true })
})

function project() {
  const yaml = `version: 1
warehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU }
staging: { type: local, path: staging }
state: { type: local, path: state }
tables:
  - name: customers
    source: { type: file, path: customers.csv }
    key: customer_id
`
  writeFileSync(join(dir, 'customers.csv'), 'customer_id,region\n1,South\n2,North\n')
  const configPath = join(dir, 'dimsync.yaml')
  writeFileSync(configPath, yaml)
  return parseProject(yaml, configPath)
}

describe(`the CLI deps with a BigQuery warehouse at ${BIGQUERY_ENDPOINT_VARIABLE} (the BigQuery emulator)`, () => {
  it('runs a table into BigQuery at the endpoint, sending no Google credentials', async () => {
    const spec = project()
    const deps = await buildLocalDeps(spec)
    try {
      const run = await runTable(deps, spec.tables[0]!)
      expect(run.merge.status).toBe('merged')
      expect(run.merge.counts).toMatchObject({ events: 2, insertedVersions: 2 })
    } finally {
      await deps.close()
    }
    expect(
      emulator
        .rows({ projectId: 'acme-dw', datasetId: 'history', tableId: 'dim_customers' })
        ?.map((r) => r.region),
    ).toEqual(['South', 'North'])
    expect(emulator.requests.length).toBeGreaterThan(0)
  })

  it('plan extracts locally, loads the staging table, prices the merge with a dry run and merges nothing', async () => {
    const spec = project()
    const deps = await buildLocalDeps(spec, undefined, {}, { bigQuery: { pollIntervalMs: 5 } })
    try {
      expect(deps.schema).toBe('history')
      const plan = await runTable(deps, spec.tables[0]!, { dryRun: true })
      expect(plan.merge.status).toBe('dry-run')
      expect(plan.merge.bytesProcessed).toBeGreaterThan(0)
      expect(plan.merge.counts).toBeUndefined()
      const configurations = emulator.requests
        .map(
          (r) =>
            (r.json ?? r.upload?.resource)?.configuration as {
              dryRun?: boolean
              query?: unknown
              load?: unknown
            },
        )
        .filter((c) => c !== undefined)
      expect(configurations.filter((c) => c.load !== undefined)).toHaveLength(1)
      // Reads (the ledger, the recorded column types) are query jobs too; no merge script runs.
      const mergeJobs = emulator.requests.filter((r) =>
        String(r.json?.jobReference?.jobId).startsWith('dimsync_merge_'),
      )
      expect(mergeJobs).toEqual([])
      // Each read of the merge is priced by its own dry run (a script's dry run stops at its first DDL).
      expect(configurations.filter((c) => c.dryRun).length).toBeGreaterThan(1)
      expect(await deps.staging.listBatches('customers')).toEqual([])
      expect(
        emulator.store.getTable({ projectId: 'acme-dw', datasetId: 'history', tableId: 'dim_customers' }),
      ).toBeUndefined()
    } finally {
      await deps.close()
    }
  })
})
