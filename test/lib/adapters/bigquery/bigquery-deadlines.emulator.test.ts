import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  longestCallWaitMs,
  longestMergeWaitMs,
} from '../../../../lib/adapters/warehouse/bigquery-deadlines.ts'
import {
  BigQueryWarehouse,
  type BigQueryWarehouseOptions,
} from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { WarehouseError } from '../../../../lib/core/errors.ts'
import { mergeBatch } from '../../../../lib/use-cases/merge-batch.ts'
import type { BigQueryEmulator } from '../../../support/bigquery-emulator/bigquery-emulator.ts'
import { withTestEmulator } from '../../../support/bigquery-emulator/emulator-per-test.ts'
import type { RequestInfo } from '../../../support/bigquery-emulator/faults.ts'
import { ZetaSqlService } from '../../../support/bigquery-emulator/zetasql-service.ts'
import { TestBatches } from '../../../support/staged-batches.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

/*
 * Every BigQuery API call has a deadline: a call that gets no answer is abandoned after `requestTimeoutMs` and
 * tried again (with the same job id when it creates a job), and after `maxAttempts` the merge fails retryably.
 * Each kind of call dimsync makes is stalled here (the emulator never answers it): the merge ends within the
 * documented bound instead of hanging until the Lambda's timeout.
 *
 * The tests spend most of their time waiting out deadlines, so they run at once, each on an emulator of its own
 * (sharing the file's ZetaSQL service and staging folder): the file takes one test's waits instead of their sum.
 */

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
const DATASET = 'history'
const LOCATION = 'EU'
const table = tableSpec({ deletes: 'invalidate' })
const COLUMNS = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
]
const DEADLINES = {
  // Long enough for an answer on a loaded machine (the suite shares two cores); short enough to wait out.
  requestTimeoutMs: 3000,
  maxAttempts: 2,
  retryDelayMs: 1,
  jobTimeoutMs: 5000,
  pollIntervalMs: 5,
} satisfies Partial<BigQueryWarehouseOptions>

let zetaSql: ZetaSqlService
let batches: TestBatches
beforeAll(async () => {
  ;[zetaSql, batches] = await Promise.all([ZetaSqlService.start(), TestBatches.create()])
})
afterAll(async () => {
  await batches?.dispose()
  await zetaSql?.stop()
})

/** Runs `work` on an emulator of its own (see emulator-per-test.ts), so the file's tests can run at once. */
const withEmulator = (work: (emulator: BigQueryEmulator) => Promise<void>): Promise<void> =>
  withTestEmulator({ zetaSql, dataset: { project: PROJECT, dataset: DATASET, location: LOCATION } }, work)

let batchNumber = 0
async function stagedBatch(): Promise<string> {
  batchNumber++
  return batches.stage(
    table.name,
    COLUMNS,
    [
      { customer_id: 1, name: 'Ana' },
      { customer_id: 2, name: `Bruno ${batchNumber}` },
    ],
    {
      extractedAt: `2030-03-${String(batchNumber).padStart(2, '0')}T00:00:00.000Z`,
      batchId: `2030030${batchNumber}T000000.000Z-aaaaa${batchNumber}`,
    },
  )
}

const merge = (emulator: BigQueryEmulator, batchId: string) =>
  mergeBatch(
    {
      warehouse: new BigQueryWarehouse({
        project: PROJECT,
        location: LOCATION,
        ...emulator.clientOptions(),
        ...DEADLINES,
      }),
      staging: batches,
    },
    { table, schema: DATASET, batchId, now: new Date('2030-03-10T14:31:00Z') },
  )

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; outcome: T | Error }> {
  const started = Date.now()
  const outcome = await work().catch((error: unknown) => error as Error)
  return { ms: Date.now() - started, outcome }
}

const API = `/bigquery/v2/projects/${PROJECT}`
const insertOf = (r: RequestInfo, prefix: string) =>
  r.method === 'POST' &&
  r.path === `${API}/jobs` &&
  String((r.json as { jobReference?: { jobId?: string } } | undefined)?.jobReference?.jobId).startsWith(
    prefix,
  )
/** Each kind of call a merge makes, as the emulator sees it. */
const CALLS: Record<string, (r: RequestInfo) => boolean> = {
  'datasets.get': (r) => r.method === 'GET' && r.path === `${API}/datasets/${DATASET}`,
  'tables.get of the staging table': (r) =>
    r.method === 'GET' && r.path.startsWith(`${API}/datasets/${DATASET}/tables/_dimsync_stage_`),
  'tables.insert of the staging table': (r) =>
    r.method === 'POST' && r.path === `${API}/datasets/${DATASET}/tables`,
  'jobs.insert of a query (a read of the ledger)': (r) => insertOf(r, 'dimsync_query_'),
  'jobs.insert of the merge script': (r) => insertOf(r, 'dimsync_merge_'),
  'jobs.get polling the merge job': (r) =>
    r.method === 'GET' && r.path.startsWith(`${API}/jobs/dimsync_merge_`),
  'getQueryResults of the merge job': (r) =>
    r.method === 'GET' && r.path.startsWith(`${API}/queries/dimsync_merge_`),
}

describe('a deadline on every BigQuery call', () => {
  // Per kind of call, both cases at once (each on its own emulator): vitest runs five concurrent tests at a time, so
  // fourteen tests of their own took three rounds of waits, and one test stalling every kind in turn took seven.
  it.concurrent.for(Object.entries(CALLS))(
    '%s: stalled once, the call is tried again and the merge succeeds; never answered, the merge fails retryably within one call’s bound instead of hanging',
    { timeout: 120_000 },
    async ([call, match], { expect }) => {
      const stalledOnce = withEmulator(async (emulator) => {
        const batchId = await stagedBatch()
        emulator.faults.stallRequest(match, 1)
        const stalled = await timed(() => merge(emulator, batchId))
        expect(stalled.outcome).toMatchObject({ status: 'merged', counts: { insertedVersions: 2 } })
        // The stalled call was made again (a poll may be made more often).
        expect(emulator.requests.filter(match).length).toBeGreaterThanOrEqual(2)
        // One merge job: an insertion that got no answer was tried again under the same id (answered 409, adopted).
        const inserts = emulator.requests.filter((r) => insertOf(r, 'dimsync_merge_'))
        expect(inserts).toHaveLength(call === 'jobs.insert of the merge script' ? 2 : 1)
        expect(new Set(inserts.map((r) => r.json?.jobReference?.jobId as string)).size).toBe(1)
      })
      const neverAnswered = withEmulator(async (emulator) => {
        // A merge with nothing stalled first: the time the work itself takes on this machine (beside the other
        // tests of the file, as the stalled merge runs).
        const clean = await timed(async () => merge(emulator, await stagedBatch()))
        expect(clean.outcome).toMatchObject({ status: 'merged' })
        const batchId = await stagedBatch()
        emulator.faults.stallRequest(match, 1000)
        const sent = emulator.requests.length
        const stalled = await timed(() => merge(emulator, batchId))
        expect(stalled.outcome).toBeInstanceOf(WarehouseError)
        expect((stalled.outcome as WarehouseError).retryable).toBe(true)
        // The stalled call was tried maxAttempts times, no more; counted, since the wait alone cannot tell a
        // third attempt from a loaded machine.
        expect(emulator.requests.slice(sent).filter(match)).toHaveLength(DEADLINES.maxAttempts)
        // Within one call's bound besides the merge's own work, which a loaded machine may slow twofold.
        expect(stalled.ms).toBeLessThan(2 * clean.ms + longestCallWaitMs(DEADLINES) + 2000)
      })
      await Promise.all([stalledOnce, neverAnswered])
    },
  )

  it('the documented bound of one call: attempts × request timeout + the waits between them', () => {
    expect(longestCallWaitMs({ requestTimeoutMs: 3000, maxAttempts: 2, retryDelayMs: 1 })).toBe(6001)
    // The defaults: 5 attempts of 30 s, waits of 1 + 2 + 4 + 8 s.
    expect(longestCallWaitMs({})).toBe(165_000)
  })

  it('the documented bound of a merge of one part group: the sum of its calls’ and jobs’ bounds', () => {
    // 5 calls × 165 s; 8 query jobs × (165 + 765 + 165) s; 2 × (165 + 1,515 + 765) s of loading; the script job
    // 165 + 165 + 765 + 165 s.
    expect(longestMergeWaitMs({})).toBe((825 + 8 * 1095 + 2 * 2445 + 1260) * 1000)
    expect(longestMergeWaitMs({})).toBe(15_735_000)
  })
})
