import { spawnSync } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { LocalStateStore } from '../../../lib/adapters/state/local-state-store.ts'
import { makeBatchId } from '../../../lib/core/batch-id.ts'
import { LockHeldError } from '../../../lib/core/errors.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { discardBatches } from '../../../lib/use-cases/discard-batches.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

/**
 * What a run killed on the CLI path leaves behind (an uncommitted batch folder, a run record at `running`, its
 * lease) is cleaned up by the next run of the table, and `discard` sees uncommitted batches too.
 */
let at: EmbeddedProject
const [JAN, FEB] = ['2024-01-01', '2024-02-01'].map((day) => new Date(`${day}T00:00:00Z`)) as [Date, Date]

const table = (): TableSpec => at.project.tables[0]!
const writeCsv = (rows: string[]) => at.writeCsv('customers.csv', 'customer_id,region', rows)

/** The pid of a process that has ended: a lease it holds belongs to a dead process. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid!
}

/**
 * Leaves what `dimsync run` killed during its extract leaves: its lease (held by a process that is gone), its
 * record at `running` naming its batch, and the batch's folder with a part but no manifest.
 */
async function killedDuringExtract(runId: string, batchId: string): Promise<void> {
  const dead = new LocalStateStore({ root: at.project.state.path, pid: deadPid() })
  await dead.acquireLease('customers', runId, 600_000, new Date())
  await dead.recordRun({
    runId,
    table: 'customers',
    status: 'running',
    startedAt: new Date().toISOString(),
    batchId,
  })
  const writer = await at.deps.staging.beginBatch('customers', batchId)
  const part = join(writer.scratchDir, 'part.parquet')
  await writeFile(part, 'half a part')
  await writer.addPart(part, 1)
}

beforeEach(async () => {
  at = await makeEmbeddedProject(customersYaml())
})
afterEach(() => at.dispose())

describe('crash leftovers on the CLI path', () => {
  it('the next run removes the uncommitted batch of a run killed during its extract and records that run as interrupted', async () => {
    writeCsv(['1,South'])
    await runTable(at.deps, table(), { extractedAt: JAN })
    const killed = makeBatchId(FEB)
    await killedDuringExtract('run-killed', killed)
    expect((await at.deps.staging.listUncommitted('customers')).map((b) => b.batchId)).toEqual([killed])

    writeCsv(['1,North'])
    const next = await runTable(at.deps, table(), { extractedAt: FEB })
    expect(next.merge.status).toBe('merged')
    expect(await at.deps.staging.listUncommitted('customers')).toEqual([])
    expect(at.events).toContainEqual({ step: 'cleanup', table: 'customers', removed: [killed] })
    expect(at.events).toContainEqual({
      step: 'interrupted',
      table: 'customers',
      runId: 'run-killed',
      by: next.runId,
      record: 'interrupted',
    })
    const runs = await at.deps.state.listRuns('customers', 10)
    expect(runs.find((r) => r.runId === 'run-killed')).toMatchObject({
      status: 'failed',
      batchId: killed,
      error: expect.stringMatching(
        new RegExp(`^interrupted: the run stopped while it held the table; run ${next.runId} took it over`),
      ),
    })
    expect(runs.filter((r) => r.status === 'running')).toEqual([])
  })

  it('a run killed after it recorded its success is taken over without being called interrupted', async () => {
    writeCsv(['1,South'])
    const dead = new LocalStateStore({ root: at.project.state.path, pid: deadPid() })
    await dead.acquireLease('customers', 'run-done', 600_000, new Date())
    const finished = {
      runId: 'run-done',
      table: 'customers',
      status: 'succeeded' as const,
      startedAt: new Date(Date.now() - 1000).toISOString(),
      finishedAt: new Date().toISOString(),
    }
    await dead.recordRun(finished)

    const next = await runTable(at.deps, table(), { extractedAt: JAN })
    expect(at.events).toContainEqual({
      step: 'interrupted',
      table: 'customers',
      runId: 'run-done',
      by: next.runId,
      record: 'succeeded',
    })
    const runs = await at.deps.state.listRuns('customers', 10)
    expect(runs.find((r) => r.runId === 'run-done')).toEqual(finished)
  })

  it('a lease released normally marks no run as interrupted', async () => {
    writeCsv(['1,South'])
    await runTable(at.deps, table(), { extractedAt: JAN })
    await runTable(at.deps, table(), { extractedAt: FEB })
    expect(at.events.filter((e) => e.step === 'interrupted')).toEqual([])
  })

  it('discard sees uncommitted batches as well as committed ones, and is refused while a run holds the table', async () => {
    writeCsv(['1,South'])
    const killed = makeBatchId(FEB)
    await killedDuringExtract('run-killed', killed)
    const committed = await at.deps.staging.beginBatch('customers', makeBatchId(JAN))
    await committed.commit({
      table: 'customers',
      batchId: committed.batchId,
      extractedAt: JAN.toISOString(),
      mode: 'full',
      rowCount: 0,
      columns: [],
      sourceDescription: 'test',
    })
    const alive = new LocalStateStore({ root: at.project.state.path })
    const lease = await alive.acquireLease('customers', 'run-alive', 600_000, new Date())
    await expect(discardBatches(at.deps, 'customers')).rejects.toThrow(LockHeldError)
    await alive.releaseLease(lease)

    expect(await discardBatches(at.deps, 'customers')).toEqual([committed.batchId, killed])
    expect(await at.deps.staging.listBatches('customers')).toEqual([])
    expect(await at.deps.staging.listUncommitted('customers')).toEqual([])
  })

  it('discard of one uncommitted batch by id', async () => {
    const killed = makeBatchId(FEB)
    await killedDuringExtract('run-killed', killed)
    expect(await discardBatches(at.deps, 'customers', killed)).toEqual([killed])
    await expect(discardBatches(at.deps, 'customers', killed)).rejects.toThrow(
      `table customers: no staged batch ${killed} (staged: none)`,
    )
  })
})
