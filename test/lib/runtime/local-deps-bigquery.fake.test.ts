import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThroughClient } from 'google-auth-library'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/index.ts'
import { buildLocalDeps } from '../../../lib/runtime/local-deps.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { FakeBigQueryServer } from '../adapters/bigquery/fake-bigquery-server.ts'

process.env.METADATA_SERVER_DETECTION = 'none'

let dir: string
let fake: FakeBigQueryServer

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dimsync-bq-plan-'))
  fake = new FakeBigQueryServer()
  await fake.start()
})
afterEach(async () => {
  await fake.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('the CLI deps with a BigQuery warehouse (fake BigQuery endpoint)', () => {
  it('fake: plan extracts locally, loads the staging table, prices the merge with a dry run and writes nothing else', async () => {
    const yaml = `version: 1
warehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU }
tables:
  - name: customers
    source: { type: file, path: customers.csv }
    key: customer_id
`
    writeFileSync(join(dir, 'customers.csv'), 'customer_id,region\n1,South\n2,North\n')
    const configPath = join(dir, 'dimsync.yaml')
    writeFileSync(configPath, yaml)
    const project = parseProject(yaml, configPath)
    const deps = await buildLocalDeps(
      project,
      undefined,
      {},
      {
        bigQuery: { apiEndpoint: fake.url, authClient: new PassThroughClient(), pollIntervalMs: 5 },
      },
    )
    try {
      expect(deps.schema).toBe('history')
      const plan = await runTable(deps, project.tables[0]!, { dryRun: true })
      expect(plan.merge.status).toBe('dry-run')
      expect(plan.merge.bytesProcessed).toBe(fake.dryRunBytes)
      expect(plan.merge.counts).toBeUndefined()
      const configurations = fake.requests
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
      expect(configurations.filter((c) => c.query !== undefined && !c.dryRun)).toEqual([])
      expect(configurations.filter((c) => c.dryRun)).toHaveLength(1)
      expect(await deps.staging.listBatches('customers')).toEqual([])
    } finally {
      await deps.close()
    }
  })
})
