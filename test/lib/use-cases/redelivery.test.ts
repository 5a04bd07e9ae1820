import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { makeBatchId, runIdOfBatch } from '../../../lib/core/batch-id.ts'
import { BatchRejectedError } from '../../../lib/core/errors.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { backfill } from '../../../lib/use-cases/backfill.ts'
import { extractTable } from '../../../lib/use-cases/extract-table.ts'
import { mergeTable } from '../../../lib/use-cases/merge-table.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

/**
 * Re-running is safe: a snapshot delivered again at an extraction time already merged changes nothing when its
 * content is the same, is refused without blocking the table when it differs, and a finished backfill run again
 * applies nothing.
 */
let at: EmbeddedProject
const [JAN, FEB, MAR] = ['2024-01-01', '2024-02-01', '2024-03-01'].map(
  (day) => new Date(`${day}T00:00:00Z`),
) as [Date, Date, Date]

const table = (): TableSpec => at.project.tables[0]!
const writeCsv = (rows: string[]) => at.writeCsv('customers.csv', 'customer_id,region', rows)
const history = async () =>
  (await readHistory(await at.deps.openWarehouse(), { table: table(), schema: 'main' })).map((r) => [
    r.customer_id,
    r.region,
    String(r.valid_from),
    r.is_current,
  ])
const staged = async () => [
  ...(await at.deps.staging.listBatches('customers')).map((m) => m.batchId),
  ...(await at.deps.staging.listUncommitted('customers')).map((b) => b.batchId),
]

describe.each(['deletes: invalidate', 'deletes: ignore', 'deletes: new_record'])(
  'a snapshot delivered again at an extraction time already merged (%s)',
  (deletes) => {
    beforeEach(async () => {
      at = await makeEmbeddedProject(customersYaml(deletes))
    })
    afterEach(() => at.dispose())

    it('with the same content succeeds as already applied, changes nothing and leaves nothing staged', async () => {
      writeCsv(['1,South', '2,North'])
      await runTable(at.deps, table(), { extractedAt: JAN })
      writeCsv(['1,West', '3,East'])
      await runTable(at.deps, table(), { extractedAt: FEB })
      const before = await history()

      const again = await runTable(at.deps, table(), { extractedAt: FEB })
      expect(again.merge.status).toBe('already-applied')
      expect(await history()).toEqual(before)
      expect(await staged()).toEqual([])
      expect((await at.deps.state.listRuns('customers', 1))[0]).toMatchObject({
        runId: again.runId,
        status: 'succeeded',
      })

      writeCsv(['1,West', '3,North'])
      const next = await runTable(at.deps, table(), { extractedAt: MAR })
      expect(next.merge.counts).toMatchObject({ insertedVersions: 1, closedVersions: 1 })
    })

    it('with different content is refused naming the way out, writes nothing, and does not block later runs', async () => {
      writeCsv(['1,South', '2,North'])
      await runTable(at.deps, table(), { extractedAt: JAN })
      const before = await history()

      writeCsv(['1,West', '2,North'])
      const refused = await runTable(at.deps, table(), { extractedAt: JAN }).catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(BatchRejectedError)
      const message = (refused as Error).message
      expect(message).toMatch(/^table customers: batch \S+ was extracted at 2024-01-01T00:00:00\.000Z/)
      expect(message).toContain('a different snapshot at that extraction time is already merged')
      expect(message).toContain('nothing was written and the batch was removed from staging')
      expect(message).toContain('To load this snapshot, run it again with a later --extracted-at (after ')
      expect(message).not.toContain('option named above')
      expect(await history()).toEqual(before)
      expect(await staged()).toEqual([])
      expect((await at.deps.state.listRuns('customers', 1))[0]).toMatchObject({ status: 'failed' })

      const next = await runTable(at.deps, table(), { extractedAt: FEB })
      expect(next.resumed).toEqual([])
      expect(next.merge.counts).toMatchObject({ insertedVersions: 1, closedVersions: 1 })
    })

    it('an older snapshot than the last merged one is refused, removed from staging, and later runs go on', async () => {
      writeCsv(['1,South'])
      await runTable(at.deps, table(), { extractedAt: FEB })
      writeCsv(['1,North'])
      const refused = await runTable(at.deps, table(), { extractedAt: JAN }).catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(BatchRejectedError)
      expect((refused as Error).message).toContain('run it again with a later --extracted-at')
      expect(await staged()).toEqual([])
      const next = await runTable(at.deps, table(), { extractedAt: MAR })
      expect(next.merge.status).toBe('merged')
    })
  },
)

describe('a snapshot delivered again, with type 1 columns', () => {
  beforeEach(async () => {
    at = await makeEmbeddedProject(customersYaml('tracked: [region]'))
  })
  afterEach(() => at.dispose())

  const write = (rows: string[]) => at.writeCsv('customers.csv', 'customer_id,name,region', rows)

  it('compares type 1 values at the last merged time only: later snapshots overwrite them on every version', async () => {
    write(['1,Ana,South'])
    await runTable(at.deps, table(), { extractedAt: JAN })
    write(['1,Anna,South'])
    await runTable(at.deps, table(), { extractedAt: FEB })

    write(['1,Ana,South'])
    expect((await runTable(at.deps, table(), { extractedAt: JAN })).merge.status).toBe('already-applied')
    const refused = await runTable(at.deps, table(), { extractedAt: FEB }).catch((e: unknown) => e)
    expect((refused as Error).message).toContain('but a different snapshot at that extraction time')
    write(['1,Anna,South'])
    expect((await runTable(at.deps, table(), { extractedAt: FEB })).merge.status).toBe('already-applied')
    expect(await staged()).toEqual([])
  })
})

describe.each(['deletes: invalidate', 'deletes: new_record', 'deletes: ignore'])(
  'a snapshot delivered again, with a soft-delete column (%s)',
  (deletes) => {
    beforeEach(async () => {
      at = await makeEmbeddedProject(customersYaml(deletes, 'soft_delete_column: deleted'))
    })
    afterEach(() => at.dispose())

    const write = (rows: string[]) => at.writeCsv('customers.csv', 'customer_id,region,deleted', rows)

    it('a soft delete counts as content: the same flags are already applied, another flag is refused', async () => {
      write(['1,South,false', '2,North,false'])
      await runTable(at.deps, table(), { extractedAt: JAN })
      write(['1,South,false', '2,North,true'])
      await runTable(at.deps, table(), { extractedAt: FEB })
      const before = await history()

      expect((await runTable(at.deps, table(), { extractedAt: FEB })).merge.status).toBe('already-applied')
      write(['1,South,false', '2,North,false'])
      const again = await runTable(at.deps, table(), { extractedAt: FEB }).catch((e: unknown) => e)
      if (deletes === 'deletes: ignore')
        expect((again as { merge: { status: string } }).merge.status).toBe('already-applied')
      else expect((again as Error).message).toContain('but a different snapshot at that extraction time')
      expect(await history()).toEqual(before)
      expect(await staged()).toEqual([])
    })
  },
)

describe('re-runs after a crash and of a finished backfill', () => {
  beforeEach(async () => {
    at = await makeEmbeddedProject(customersYaml('deletes: invalidate'))
  })
  afterEach(() => at.dispose())

  it('a run killed after its extract committed, retried with the same command, ends as one clean run', async () => {
    writeCsv(['1,South', '2,North'])
    await runTable(at.deps, table(), { extractedAt: JAN })
    writeCsv(['1,West', '2,North'])
    // The killed run: its extract committed its batch at FEB, its merge never ran.
    const batchId = makeBatchId(FEB)
    await extractTable(at.deps, table(), {
      run: { runId: runIdOfBatch(batchId), leaseTtlMs: 60_000 },
      batchId,
      extractedAt: FEB,
    })
    const retried = await runTable(at.deps, table(), { extractedAt: FEB })
    expect(retried.resumed.map((r) => r.batchId)).toEqual([batchId])
    expect(retried.merge.status).toBe('already-applied')
    expect(await staged()).toEqual([])
    expect(await history()).toEqual([
      [1, 'South', '2024-01-01 00:00:00+00', false],
      [1, 'West', '2024-02-01 00:00:00+00', true],
      [2, 'North', '2024-01-01 00:00:00+00', true],
    ])
  })

  it('a merge step given a batch at an already merged time with the same content ends as already applied (the merge function)', async () => {
    writeCsv(['1,South'])
    await runTable(at.deps, table(), { extractedAt: JAN })
    const batchId = makeBatchId(JAN)
    const run = { runId: runIdOfBatch(batchId), leaseTtlMs: 60_000 }
    await extractTable(at.deps, table(), { run, batchId, extractedAt: JAN })
    const merged = await mergeTable(at.deps, table(), { run, batchId })
    expect(merged.merge.status).toBe('already-applied')
    expect(await staged()).toEqual([])
    const runs = await at.deps.state.listRuns('customers', 10)
    expect(runs.find((r) => r.runId === run.runId)).toMatchObject({ status: 'succeeded' })
  })

  it('a finished backfill run again applies nothing and says each snapshot was already applied', async () => {
    at.writeCsv('customers_2024-01-01.csv', 'customer_id,region', ['1,South', '2,North'])
    at.writeCsv('customers_2024-02-01.csv', 'customer_id,region', ['1,West'])
    at.writeCsv('customers_2024-03-01.csv', 'customer_id,region', ['1,West', '2,East'])
    const request = {
      table: table(),
      files: 'customers_*.csv',
      timeFromName: 'customers_%Y-%m-%d.csv',
      baseDir: at.dir,
    }
    const first = await backfill(at.deps, request)
    expect(first.map((r) => r.merge.status)).toEqual(['merged', 'merged', 'merged'])
    const before = await history()
    const again = await backfill(at.deps, request)
    expect(again.map((r) => r.merge.status)).toEqual([
      'already-applied',
      'already-applied',
      'already-applied',
    ])
    expect(await history()).toEqual(before)
    expect(await staged()).toEqual([])
  })
})
