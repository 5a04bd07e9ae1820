import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FileSource } from '../../../lib/adapters/source/file-source.ts'
import { LocalStateStore } from '../../../lib/adapters/state/local-state-store.ts'
import { parseProject } from '../../../lib/config/index.ts'
import { BatchRejectedError, LockHeldError, SourceError } from '../../../lib/core/errors.ts'
import type { ProjectSpec } from '../../../lib/core/table-spec.ts'
import { buildLocalDeps, type LocalDeps } from '../../../lib/runtime/local-deps.ts'
import { discardBatches } from '../../../lib/use-cases/discard-batches.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'

let dir: string
let project: ProjectSpec
let deps: LocalDeps
const JAN = new Date('2024-01-01T00:00:00Z')
const FEB = new Date('2024-02-01T00:00:00Z')
const MAR = new Date('2024-03-01T00:00:00Z')

function writeCsv(rows: string[]): void {
  writeFileSync(join(dir, 'customers.csv'), ['customer_id,region', ...rows].join('\n') + '\n')
}
const history = async () =>
  (await readHistory(deps.warehouse, { table: project.tables[0]!, schema: 'main' })).map((r) => [
    r.customer_id,
    r.region,
    r.is_current,
  ])

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dimsync-run-'))
  const configPath = join(dir, 'dimsync.yaml')
  const yaml = `version: 1
tables:
  - name: customers
    source: { type: file, path: customers.csv }
    key: customer_id
    deletes: invalidate
`
  writeFileSync(configPath, yaml)
  project = parseProject(yaml, configPath)
  deps = await buildLocalDeps(project)
})
afterEach(async () => {
  await deps.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('runTable with the embedded adapters (local files, DuckDB)', () => {
  it('a run stages, merges, records the run and leaves no staged batch behind', async () => {
    writeCsv(['1,South', '2,North'])
    const result = await runTable(deps, project.tables[0]!, { extractedAt: JAN })
    expect(result.merge.status).toBe('merged')
    expect(result.rows).toBe(2)
    expect(await deps.staging.listBatches('customers')).toEqual([])
    const [run] = await deps.state.listRuns('customers', 1)
    expect(run).toMatchObject({ status: 'succeeded', batchId: result.batchId, rowsExtracted: 2 })
  })

  it('a refused batch writes nothing, stays staged, and the next run says how to get past it', async () => {
    writeCsv(['1,South', '2,North', '3,West', '4,East'])
    await runTable(deps, project.tables[0]!, { extractedAt: JAN })
    const before = await history()
    writeCsv(['1,South'])
    await expect(runTable(deps, project.tables[0]!, { extractedAt: FEB })).rejects.toThrow(
      /would delete 3 of 4/,
    )
    expect(await history()).toEqual(before)
    const staged = await deps.staging.listBatches('customers')
    expect(staged).toHaveLength(1)
    expect((await deps.state.listRuns('customers', 1))[0]).toMatchObject({ status: 'failed' })

    writeCsv(['1,South', '2,North', '3,West', '4,East'])
    const again = await runTable(deps, project.tables[0]!, { extractedAt: MAR }).catch((e: unknown) => e)
    expect(again).toBeInstanceOf(BatchRejectedError)
    expect((again as Error).message).toContain(
      `drop it with: dimsync discard --table customers --batch ${staged[0]!.batchId}`,
    )
    expect(await discardBatches(deps.staging, 'customers')).toEqual([staged[0]!.batchId])
    const ok = await runTable(deps, project.tables[0]!, { extractedAt: MAR })
    expect(ok.merge.counts).toMatchObject({ insertedVersions: 0, deletedKeys: 0 })
    expect(await history()).toEqual(before)
  })

  it('a batch left staged by an interrupted run is merged first by the next run, in extraction order', async () => {
    writeCsv(['1,South'])
    await runTable(deps, project.tables[0]!, { extractedAt: JAN })
    // An interrupted run: the extract committed its manifest, the merge never ran.
    writeCsv(['1,North'])
    const writer = await deps.staging.beginBatch('customers', '20240201T000000.000Z-abcdef')
    const extracted = await new FileSource({ baseDir: dir }).extract({
      table: project.tables[0]!,
      batchId: writer.batchId,
      extractedAt: FEB,
      writer,
    })
    await writer.commit({
      table: 'customers',
      batchId: writer.batchId,
      extractedAt: FEB.toISOString(),
      mode: 'full',
      rowCount: extracted.rows,
      columns: extracted.columns,
      sourceDescription: extracted.sourceDescription,
    })
    writeCsv(['1,West'])
    const result = await runTable(deps, project.tables[0]!, { extractedAt: MAR })
    expect(result.resumed.map((r) => r.batchId)).toEqual(['20240201T000000.000Z-abcdef'])
    expect(await history()).toEqual([
      [1, 'South', false],
      [1, 'North', false],
      [1, 'West', true],
    ])
  })

  it('a run on a locked table fails naming the holder, and stages nothing', async () => {
    writeCsv(['1,South'])
    const other = new LocalStateStore({ root: project.state.path })
    const lease = await other.acquireLease('customers', 'run-other', 60_000, new Date())
    await expect(runTable(deps, project.tables[0]!)).rejects.toThrow(
      new LockHeldError('customers', 'run-other', lease.acquiredAt),
    )
    expect(await deps.staging.listBatches('customers')).toEqual([])
  })

  it('a malformed source file fails the run with file and line, and leaves nothing staged or written', async () => {
    writeCsv(['1,South'])
    await runTable(deps, project.tables[0]!, { extractedAt: JAN })
    writeFileSync(join(dir, 'customers.csv'), 'customer_id,region\n1,North\n2,West,extra\n')
    const error = await runTable(deps, project.tables[0]!, { extractedAt: FEB }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SourceError)
    expect((error as Error).message).toMatch(/customers\.csv line 3/)
    expect(await deps.staging.listBatches('customers')).toEqual([])
    expect(await history()).toEqual([[1, 'South', true]])
  })

  it('a dry run reports the changes and writes nothing', async () => {
    writeCsv(['1,South', '2,North'])
    await runTable(deps, project.tables[0]!, { extractedAt: JAN })
    writeCsv(['1,West', '2,North', '3,East'])
    const runsBefore = await deps.state.listRuns('customers', 10)
    const plan = await runTable(deps, project.tables[0]!, { extractedAt: FEB, dryRun: true })
    expect(await deps.state.listRuns('customers', 10)).toEqual(runsBefore)
    expect(plan.merge.status).toBe('dry-run')
    expect(plan.merge.keys).toEqual({ newKeys: 1, changedKeys: 1, deletedKeys: 0 })
    expect(await history()).toEqual([
      [1, 'South', true],
      [2, 'North', true],
    ])
    expect(await deps.staging.listBatches('customers')).toEqual([])
  })
})
