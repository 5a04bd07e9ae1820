import { afterEach, describe, expect, it } from 'vitest'
import { BlobStagingStore } from '../../../lib/adapters/staging/blob-staging-store.ts'
import { FileBlobStore } from '../../../lib/adapters/staging/file-blob-store.ts'
import { makeBatchId, runIdOfBatch } from '../../../lib/core/batch-id.ts'
import { extractTable } from '../../../lib/use-cases/extract-table.ts'
import { mergeTable } from '../../../lib/use-cases/merge-table.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { countingBlobs } from '../../support/counting-blobs.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

/**
 * How often one run reads the staging folder: the table's batches are listed once per run and each committed
 * manifest read once (the listed manifests are handed down the merge road, not read again). Counted on the real
 * file blob store under the staging store.
 */
let at: EmbeddedProject | undefined
afterEach(async () => {
  await at?.dispose()
  at = undefined
})

const day = (n: number) => new Date(Date.UTC(2024, 0, 1 + n))

/**
 * A project whose staging store is the real one over a counting file blob store, with `left` batches of
 * `customers` staged by the extract step (the extract function) and never merged.
 */
async function withLeftStaged(left: number, ...options: string[]) {
  at = await makeEmbeddedProject(customersYaml(...options))
  const { blobs, reads } = countingBlobs(
    new FileBlobStore(at.project.staging.path, (root) => ({
      name: `staging folder ${root}`,
      setting: 'test',
    })),
    'customers',
  )
  const deps = { ...at.deps, staging: new BlobStagingStore(blobs) }
  const table = at.project.tables[0]!
  for (let i = 0; i < left; i++) {
    at.writeCsv('customers.csv', 'customer_id,region', ['1,South', `${i + 2},North`])
    const batchId = makeBatchId(day(i))
    const run = { runId: runIdOfBatch(batchId), leaseTtlMs: 60_000 }
    await extractTable(deps, table, { run, batchId, extractedAt: day(i) })
  }
  expect(await deps.staging.listBatches('customers')).toHaveLength(left)
  at.writeCsv('customers.csv', 'customer_id,region', ['1,West'])
  reads.lists = reads.manifests = 0
  return { deps, table, reads, project: at }
}

describe('one dimsync run lists the table staging once and reads each manifest once', () => {
  it.each([1, 3, 10])('%i batch(es) left staged, a full snapshot table', async (left) => {
    const { deps, table, reads, project } = await withLeftStaged(left, 'deletes: invalidate')
    const result = await runTable(deps, table, { extractedAt: day(20) })
    expect(result.resumed).toHaveLength(left)
    expect(result.merge.status).toBe('merged')
    expect(reads).toEqual({ lists: 1, manifests: left })
    expect(await deps.staging.listBatches('customers')).toEqual([])
    const history = await readHistory(await project.deps.openWarehouse(), { table, schema: 'main' })
    expect(history.filter((r) => r.is_current).map((r) => [r.customer_id, r.region])).toEqual([[1, 'West']])
  })

  it('a dry run (dimsync plan) lists once and reads each left-staged manifest once, merging none of them', async () => {
    const { deps, table, reads } = await withLeftStaged(3, 'deletes: invalidate')
    const plan = await runTable(deps, table, { extractedAt: day(20), dryRun: true })
    expect(plan.merge.status).toBe('dry-run')
    expect(plan.leftStaged).toHaveLength(3)
    expect(reads).toEqual({ lists: 1, manifests: 3 })
    expect(await deps.staging.listBatches('customers')).toHaveLength(3)
  })

  it('the merge function (a run of its own) lists once and reads each manifest once', async () => {
    const { deps, table, reads } = await withLeftStaged(3, 'deletes: invalidate')
    const last = (await deps.staging.listBatches('customers')).at(-1)!
    reads.lists = reads.manifests = 0
    const merged = await mergeTable(deps, table, {
      run: { runId: runIdOfBatch(last.batchId), leaseTtlMs: 60_000 },
      batchId: last.batchId,
    })
    expect(merged.merge.status).toBe('merged')
    expect(reads).toEqual({ lists: 1, manifests: 3 })
    expect(await deps.staging.listBatches('customers')).toEqual([])
  })
})
