import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FileSource } from '../../../lib/adapters/source/file-source.ts'
import { LocalStateStore } from '../../../lib/adapters/state/local-state-store.ts'
import { BatchRejectedError, LockHeldError, SourceError } from '../../../lib/core/errors.ts'
import type { ProjectSpec } from '../../../lib/core/table-spec.ts'
import type { LocalDeps } from '../../../lib/runtime/local-deps.ts'
import { discardBatches } from '../../../lib/use-cases/discard-batches.ts'
import { makeBatchId, runIdOfBatch } from '../../../lib/core/batch-id.ts'
import { extractTable } from '../../../lib/use-cases/extract-table.ts'
import { mergeTable } from '../../../lib/use-cases/merge-table.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import type { RunEvent } from '../../../lib/use-cases/run-event.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

let embedded: EmbeddedProject
let dir: string
let project: ProjectSpec
let deps: LocalDeps
let events: RunEvent[]
const JAN = new Date('2024-01-01T00:00:00Z')
const FEB = new Date('2024-02-01T00:00:00Z')
const MAR = new Date('2024-03-01T00:00:00Z')

const writeCsv = (rows: string[]) => embedded.writeCsv('customers.csv', 'customer_id,region', rows)
/** The steps reported, without the progress ticks (their number depends on the source's chunking). */
const steps = () =>
  events
    .filter((e) => e.step !== 'progress')
    .map((e) => (e.step === 'record' ? `record ${e.status}` : e.step))

const history = async () =>
  (await readHistory(await deps.openWarehouse(), { table: project.tables[0]!, schema: 'main' })).map((r) => [
    r.customer_id,
    r.region,
    r.is_current,
  ])

beforeEach(async () => {
  embedded = await makeEmbeddedProject(customersYaml('deletes: invalidate'))
  ;({ dir, project, deps, events } = embedded)
})
afterEach(() => embedded.dispose())

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
    expect(await discardBatches(deps, 'customers')).toEqual([staged[0]!.batchId])
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

describe('the extract and merge steps as runs of their own (what the Lambdas run), on the embedded adapters', () => {
  it('extract then merge record one run: the merge continues the record the extract wrote', async () => {
    writeCsv(['1,South', '2,North'])
    const batchId = makeBatchId(JAN)
    const runId = runIdOfBatch(batchId)
    const run = { runId, leaseTtlMs: 60_000 }
    const extracted = await extractTable(deps, project.tables[0]!, { run, batchId, extractedAt: JAN })
    expect(extracted).toMatchObject({ complete: true, batchId, rows: 2 })
    expect(await deps.state.listRuns('customers', 5)).toEqual([
      expect.objectContaining({ runId, status: 'running', startedAt: JAN.toISOString(), rowsExtracted: 2 }),
    ])
    expect(steps()).toEqual(['lock', 'record running', 'record running', 'extract'])

    events.length = 0
    const merged = await mergeTable(deps, project.tables[0]!, { run, batchId })
    expect(merged).toMatchObject({ batchId, watermark: 'none', merge: { status: 'merged' } })
    expect(steps()).toEqual(['lock', 'merging', 'merge', 'watermark', 'record succeeded'])
    const runs = await deps.state.listRuns('customers', 5)
    expect(runs).toEqual([
      expect.objectContaining({
        runId,
        status: 'succeeded',
        startedAt: JAN.toISOString(),
        batchId,
        rowsExtracted: 2,
        counts: expect.objectContaining({ insertedVersions: 2 }),
      }),
    ])
    expect(await deps.staging.listBatches('customers')).toEqual([])

    // Called again after its answer was lost: the batch is gone, the record says merged, nothing is redone.
    events.length = 0
    const again = await mergeTable(deps, project.tables[0]!, { run, batchId })
    expect(again).toMatchObject({ merge: { status: 'already-applied' }, watermark: 'unchanged' })
    expect(steps()).toEqual(['lock', 'already-merged'])
    expect(await deps.state.listRuns('customers', 5)).toEqual(runs)
  })

  it('a merge of a batch that was never staged fails, and says so in the run record', async () => {
    writeCsv(['1,South', '2,North'])
    const batchId = makeBatchId(JAN)
    const run = { runId: runIdOfBatch(batchId), leaseTtlMs: 60_000 }
    const error = await mergeTable(deps, project.tables[0]!, { run, batchId }).catch((e: unknown) => e)
    expect((error as Error).message).toMatch(new RegExp(`batch ${batchId} is not committed`))
    expect(steps()).toEqual(['lock', 'record failed', 'failed'])
    expect((await deps.state.listRuns('customers', 1))[0]).toMatchObject({
      status: 'failed',
      startedAt: JAN.toISOString(),
      batchId,
    })
  })

  it('dimsync run reports the same steps, under one lease and one run record', async () => {
    writeCsv(['1,South', '2,North'])
    const result = await runTable(deps, project.tables[0]!, { extractedAt: JAN })
    expect(steps()).toEqual([
      'lock',
      'record running',
      'record running',
      'record running',
      'extract',
      'merging',
      'merge',
      'watermark',
      'record succeeded',
    ])
    expect(events.filter((e) => e.step === 'lock')).toEqual([
      expect.objectContaining({ runId: result.runId, owner: result.runId }),
    ])
    expect(await deps.state.listRuns('customers', 5)).toEqual([
      expect.objectContaining({
        runId: result.runId,
        status: 'succeeded',
        batchId: result.batchId,
        rowsExtracted: 2,
      }),
    ])
  })
})
