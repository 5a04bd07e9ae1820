/**
 * Faults at every call of the cloud path. The real extract and merge handlers run through the synthesized state
 * machine (the project's interpreter, with its retries) on s3rver, dynalite, PostgreSQL and the BigQuery
 * emulator, each behind a fault proxy (test/support/faults) that answers calls by a seeded schedule: 500/503,
 * throttling, a request cut before it arrives, a request applied whose answer is lost, a delay. A random
 * sequence of snapshots, deltas and change-feed events for three tables is loaded twice, with faults and
 * without; the histories must be equal, and nothing may be left behind: every batch has one ledger row, no
 * staging table remains, every lease is released, every run record is closed. A run that gives up ends as a
 * failed run with one notice, and the next scheduled run completes the load.
 *
 * CI runs the seeds below; `DIMSYNC_CHAOS_SEEDS=1-200` (or `7,9`) runs others, `DIMSYNC_CHAOS_RATE` sets the
 * share of calls that meet a fault (scripts/chaos.sh runs many seeds).
 */
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'

import { ScanCommand } from '@aws-sdk/client-dynamodb'
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, it } from 'vitest'

import { createExtractHandler, createMergeHandler } from '../../functions/shared/handlers.ts'
import { buildAwsDeps } from '../../lib/runtime/aws-deps.ts'
import { AWS_ENV } from '../../lib/runtime/aws-env.ts'
import { PG_URL, PgScratch, postgresReachable } from '../integration/sources/support/db-services.ts'
import { startDynalite, type DynaliteHandle } from '../support/aws/dynalite.ts'
import { fakeContext, useEmulatorCredentials } from '../support/aws/lambda.ts'
import { startS3rver, type S3rverHandle } from '../support/aws/s3rver.ts'
import { BigQueryEmulator, type TextRow } from '../support/bigquery-emulator/bigquery-emulator.ts'
import { ZetaSqlService } from '../support/bigquery-emulator/zetasql-service.ts'
import { FaultProxy } from '../support/faults/fault-proxy.ts'
import {
  FaultSchedule,
  addTallies,
  formatTally,
  xorshift32,
  type FaultKind,
  type FaultTally,
} from '../support/faults/fault-schedule.ts'
import { TcpFaultProxy } from '../support/faults/tcp-fault-proxy.ts'
import {
  SNS_PUBLISH,
  type ExecutionResult,
  type LambdaInvoker,
} from '../support/step-functions/jsonata-state-machine.ts'
import { deployedMachine, type DeployedMachine } from './support/deployed-machine.ts'

const available = await postgresReachable()

// Two seeds keep CI's time in bounds (each takes one to two minutes here); scripts/chaos.sh runs 1-200.
const CI_SEEDS = [1, 2]
const SEEDS = seedsFromEnv(process.env.DIMSYNC_CHAOS_SEEDS) ?? CI_SEEDS
const RATE = Number(process.env.DIMSYNC_CHAOS_RATE ?? 0.12)
/**
 * Share of scheduled starts delivered twice (EventBridge Scheduler delivers at least once). Off in CI, where seeds
 * 1-3 were measured without it; with DIMSYNC_CHAOS_REDELIVERY=0.2 seed 1 passes (it found a repeated snapshot
 * leaving its staging table behind, fixed with a regression test in bigquery-exactly-once.emulator.test.ts).
 */
const REDELIVERY = Number(process.env.DIMSYNC_CHAOS_REDELIVERY ?? 0)
const STEPS = 3
/**
 * The first wait before a BigQuery call is tried again (the functions wait 1 s, doubling): a tenth here, so that a
 * seed spends its time on the calls and their faults rather than on waits (the waits took half of a seed's time).
 * How long a call waits changes neither which faults it meets nor how many attempts it has.
 */
const BIGQUERY_RETRY_DELAY_MS = 100
/** Scheduled starts of one step before the test gives up on a table (a stuck table). */
const STARTS_PER_STEP = 6
const PROJECT = 'acme-dw'
const HOUR = 3_600_000
const TABLES = ['snap', 'delta', 'feed'] as const
type TableName = (typeof TABLES)[number]

/** What the stack deploys: the state machine knows the table names and which functions serve them. */
const DEPLOYED_YAML = `
version: 1
tables:
${TABLES.map((t) => `  - name: ${t}\n    source: { type: postgres, url_env: DB_URL, table: public.${t} }\n    key: id`).join('\n')}
aws:
  secrets:
    DB_URL: dimsync/source-db
  bigquery_secret: dimsync/bigquery
`

/**
 * Faults each call may meet. Every call meets every kind, except where a kind is known not to be survived yet
 * (see KNOWN_UNSURVIVED): those calls meet the other kinds.
 */
const ALL_KINDS: readonly FaultKind[] = ['error', 'throttle', 'timeout', 'drop', 'delay']
const KNOWN_UNSURVIVED: Readonly<Record<string, { kinds: readonly FaultKind[]; why: string }>> = {}
const policy = (call: string) => {
  const known = KNOWN_UNSURVIVED[call]
  return known === undefined ? ALL_KINDS : ALL_KINDS.filter((k) => !known.kinds.includes(k))
}

function seedsFromEnv(text: string | undefined): number[] | undefined {
  if (text === undefined || text.trim() === '') return undefined
  return text.split(',').flatMap((part) => {
    const [from, to] = part.split('-').map((n) => Number(n.trim()))
    if (!Number.isSafeInteger(from) || (to !== undefined && !Number.isSafeInteger(to)))
      throw new Error(`DIMSYNC_CHAOS_SEEDS: expected numbers and ranges like 1-200,7 (got ${text})`)
    return to === undefined ? [from!] : Array.from({ length: to - from! + 1 }, (_, i) => from! + i)
  })
}

/** One side of the comparison: its own bucket, state table, dataset and endpoints (proxied or not). */
interface Side {
  readonly name: string
  readonly env: Record<string, string>
  readonly bucket: string
  readonly stateTable: string
  readonly dataset: string
  clockMs: number
}

/** How the scheduled starts of a table went on a side. */
interface Outcome {
  readonly side: string
  readonly table: TableName
  readonly step: number
  readonly start: number
  /** already-applied: the batch was in the ledger already, or repeats the last snapshot merged (no ledger row). */
  readonly status: 'merged' | 'already-applied' | 'skipped' | 'failed'
  readonly error?: string
  readonly cause?: string
  readonly batchId?: string
  readonly notices: number
}

describe.skipIf(!available)('chaos: faults at every call of the cloud path', () => {
  let deployed: DeployedMachine
  let zetaSql: ZetaSqlService
  let bigQuery: BigQueryEmulator
  let s3: S3rverHandle
  let dynamo: DynaliteHandle
  let pg: PgScratch
  const tallies: FaultTally[] = []
  /** Every Lambda invocation with its duration, to show where a slow seed spent its time. */
  const invocations: { what: string; ms: number; error?: string }[] = []
  const gaveUp: Outcome[] = []
  const restoreOutput = silenceHandlers()

  beforeAll(async () => {
    useEmulatorCredentials()
    process.env.METADATA_SERVER_DETECTION = 'none'
    ;[deployed, zetaSql, s3, dynamo, pg] = await Promise.all([
      deployedMachine(DEPLOYED_YAML),
      ZetaSqlService.start(),
      startS3rver(),
      startDynalite(),
      PgScratch.create(),
    ])
    bigQuery = await BigQueryEmulator.start({ zetaSql })
  }, 300_000)

  afterAll(async () => {
    restoreOutput()
    const total = addTallies(tallies)
    console.log(
      [
        formatTally(`chaos: ${SEEDS.length} seeds at rate ${RATE}, redelivery ${REDELIVERY}`, total),
        `runs that gave up (completed by the next scheduled run): ${gaveUp.length}`,
        ...gaveUp.map((o) => `  seed step ${o.step} ${o.table} start ${o.start}: ${o.error}: ${o.cause}`),
        'slowest invocations:',
        ...[...invocations]
          .sort((a, b) => b.ms - a.ms)
          .slice(0, 5)
          .map((i) => `  ${i.ms} ms ${i.what}${i.error ? ` failed: ${i.error}` : ''}`),
        ...Object.entries(KNOWN_UNSURVIVED).map(
          ([call, { kinds, why }]) => `not injected at ${call}: ${kinds.join(', ')} (${why})`,
        ),
      ].join('\n'),
    )
    await bigQuery?.stop()
    await zetaSql?.stop()
    await Promise.all([s3?.stop(), dynamo?.stop(), pg?.drop()])
  })

  // The seeds run side by side: each has its own schedule, proxies, source tables, buckets, state tables and
  // datasets, and half of a seed's time is spent waiting (faults' delays, retries, deadlines).
  for (const seed of SEEDS) {
    it.concurrent(
      `seed ${seed}: the history with faults equals the history without, nothing left behind`,
      async ({ expect }) => {
        const schedule = new FaultSchedule({ seed, rate: RATE, policy })
        schedule.enabled = false
        // The reference's BigQuery calls go through a proxy that never faults, for the same wait on jobs.
        const faultFree = new FaultSchedule({ seed, rate: 0, policy })
        const jobsDone = { beforeForward: finishedJobs }
        const proxies = await Promise.all([
          FaultProxy.start('s3', s3.endpoint, schedule),
          FaultProxy.start('dynamodb', dynamo.endpoint, schedule),
          FaultProxy.start('bigquery', bigQuery.url, schedule, jobsDone),
          FaultProxy.start('bigquery', bigQuery.url, faultFree, jobsDone),
        ])
        const [s3Proxy, dynamoProxy, bigQueryProxy, referenceBigQuery] = proxies
        const pgProxy = await TcpFaultProxy.start(
          'postgres connect',
          Number(new URL(PG_URL).port || 5432),
          schedule,
        )
        const proxiedPgUrl = Object.assign(new URL(PG_URL), { port: String(pgProxy.port) }).href
        try {
          const sources = await createSources(pg, seed)
          const base = Math.ceil(Date.now() / HOUR) * HOUR
          const chaos = await makeSide(`chaos_${seed}`, sources, {
            s3: s3Proxy!.url,
            dynamo: dynamoProxy!.url,
            bigQuery: bigQueryProxy!.url,
            db: proxiedPgUrl,
          })
          const reference = await makeSide(`ref_${seed}`, sources, {
            s3: s3.endpoint,
            dynamo: dynamo.endpoint,
            bigQuery: referenceBigQuery!.url,
            db: PG_URL,
          })
          const outcomes: Outcome[] = []
          const random = xorshift32(seed)
          const redelivery = xorshift32(seed + 0x5eed)
          for (let step = 1; step <= STEPS; step++) {
            await sources.change(step, random)
            // Both sides read the same source state: the reference fault free, the other with faults.
            schedule.enabled = true
            try {
              for (const table of TABLES) {
                const [fine, faulted] = await Promise.all([
                  scheduledUntilMerged(reference, table, step, base),
                  scheduledUntilMerged(chaos, table, step, base, () => redelivery() < REDELIVERY),
                ])
                outcomes.push(...fine, ...faulted)
              }
            } finally {
              schedule.enabled = false
            }
          }
          const tally = schedule.tally()
          const failed = outcomes.filter((o) => o.status === 'failed')
          gaveUp.push(...failed)
          const log = [
            formatTally(`seed ${seed}`, tally),
            ...failed.map(
              (o) => `  gave up: step ${o.step} ${o.table} start ${o.start}: ${o.error}: ${o.cause}`,
            ),
          ].join('\n')

          for (const table of TABLES) {
            expect(await history(chaos, table), `${log}\n\ntable ${table}: history`).toEqual(
              await history(reference, table),
            )
          }
          for (const side of [reference, chaos]) {
            const ofSide = outcomes.filter((o) => o.side === side.name)
            const named = (o: Outcome) => `${o.table} ${o.batchId}`
            const merged = ofSide.filter((o) => o.status === 'merged').map(named)
            // Already applied: by an attempt whose answer was lost (in the ledger), or a repeated snapshot (not).
            const reported = new Set([
              ...merged,
              ...ofSide.filter((o) => o.status === 'already-applied').map(named),
            ])
            const ledger = await ledgerBatches(side)
            const what = `${log}\n\n${side.name}: ledger ${JSON.stringify(ledger)}`
            expect(new Set(ledger).size, `${what}: one ledger row per batch`).toBe(ledger.length)
            expect(ledger, `${what}: every merged batch is in the ledger`).toEqual(
              expect.arrayContaining(merged),
            )
            expect(
              ledger.filter((b) => !reported.has(b)),
              `${what}: no batch in the ledger that no run merged`,
            ).toEqual([])
            expect(await leftoverTables(side), `${log}\n\n${side.name}: staging tables left`).toEqual([])
            expect(await heldLeases(side), `${log}\n\n${side.name}: leases still held`).toEqual([])
            expect(await openRuns(side), `${log}\n\n${side.name}: run records not closed`).toEqual([])
            expect(await stagedObjects(side), `${log}\n\n${side.name}: staged batches left in S3`).toEqual([])
          }
          // A run that gave up told it once (one notice) and recorded its run as failed.
          for (const o of failed) expect(o.notices, `${log}\n\nnotices of ${JSON.stringify(o)}`).toBe(1)
        } finally {
          tallies.push(schedule.tally())
          await Promise.all([...proxies.map((p) => p.stop()), pgProxy.stop()])
        }
      },
      600_000,
    )
  }

  /**
   * The merge polls a job once a second until it is DONE; the emulator runs a job right after inserting it, so a
   * poll is answered once the jobs queued so far have run (a long poll): the test does not wait out the seconds.
   */
  async function finishedJobs(call: string): Promise<void> {
    if (call === 'bigquery jobs.get' || call === 'bigquery jobs.getQueryResults') await bigQuery.jobs.idle()
  }

  /** A side's sandbox: a bucket, a state table, a dataset and the dimsync.yaml of the three tables. */
  async function makeSide(
    name: string,
    sources: Sources,
    endpoints: { s3: string; dynamo: string; bigQuery: string; db: string },
  ): Promise<Side> {
    const dir = await mkdtemp(path.join(tmpdir(), `dimsync-${name}-`))
    const bucket = await s3.createBucket(name.replace('_', '-'))
    const stateTable = await dynamo.createTable(name)
    bigQuery.createDataset(PROJECT, name, { location: 'EU' })
    await writeFile(
      path.join(dir, 'dimsync.yaml'),
      [
        'version: 1',
        `warehouse: { type: bigquery, project: ${PROJECT}, dataset: ${name}, location: EU }`,
        'tables:',
        '  - name: snap',
        `    source: { type: postgres, url_env: DB_URL, table: ${sources.snap} }`,
        '    target: dim_snap',
        '    key: id',
        '    tracked: [name]',
        '    deletes: invalidate',
        // The scenario's random steps may delete most keys (seed 194 deleted 5 of 9); the mass-delete guard would
        // then refuse the step on both sides alike. It has its own tests; here every step must merge.
        '    max_delete_share: 1',
        '  - name: delta',
        `    source: { type: postgres, url_env: DB_URL, table: ${sources.delta} }`,
        '    target: dim_delta',
        '    key: id',
        '    tracked: [name]',
        '    extract: { mode: incremental, cursor: updated_at }',
        '    valid_from: { column: updated_at }',
        '  - name: feed',
        `    source: { type: postgres, url_env: DB_URL, table: ${sources.feed} }`,
        '    target: dim_feed',
        '    key: id',
        '    tracked: [name]',
        '    extract: { mode: changes, sequence: seq }',
        '    valid_from: { column: changed_at }',
        '',
      ].join('\n'),
    )
    return {
      name,
      bucket,
      stateTable,
      dataset: name,
      clockMs: 0,
      env: {
        [AWS_ENV.configPath]: path.join(dir, 'dimsync.yaml'),
        [AWS_ENV.stagingBucket]: bucket,
        [AWS_ENV.stagingPrefix]: 'staging',
        [AWS_ENV.stateTable]: stateTable,
        [AWS_ENV.warehouse]: 'bigquery',
        [AWS_ENV.s3Endpoint]: endpoints.s3,
        [AWS_ENV.dynamoDbEndpoint]: endpoints.dynamo,
        [AWS_ENV.bigQueryEndpoint]: endpoints.bigQuery,
        [AWS_ENV.scratchDir]: dir,
        DB_URL: endpoints.db,
      },
    }
  }

  /**
   * The scheduled starts of one step: a start every 10 minutes (of the side's clock) until one merges; a start
   * that finds the table busy is skipped, one that gives up fails. `redelivered`: whether a start is delivered
   * twice. Each Lambda invocation builds its own
   * adapters, as a new container would.
   */
  async function scheduledUntilMerged(
    side: Side,
    table: TableName,
    step: number,
    base: number,
    redelivered: () => boolean = () => false,
  ): Promise<Outcome[]> {
    const outcomes: Outcome[] = []
    for (let start = 0; start < STARTS_PER_STEP; start++) {
      side.clockMs = base + step * 3 * HOUR + start * 10 * 60_000
      // EventBridge Scheduler delivers at least once: a start is sometimes delivered twice, one after the other.
      const deliveries = redelivered() ? 2 : 1
      const ofThisStart: Outcome[] = []
      for (let delivery = 1; delivery <= deliveries; delivery++) {
        const result = await deployed.machine.run({
          input: { table, reason: 'schedule', whenBusy: 'skip' },
          executionName: `${side.name}-${table}-${step}-${start}-${delivery}`,
          invoke: invoker(side),
        })
        ofThisStart.push(outcomeOf(side, table, step, start, result))
      }
      outcomes.push(...ofThisStart)
      const done = (o: Outcome) => o.status === 'merged' || o.status === 'already-applied'
      if (ofThisStart.some(done) && ofThisStart.every((o) => o.status !== 'failed')) return outcomes
    }
    throw new Error(
      `${side.name}: table ${table} was not merged after ${STARTS_PER_STEP} scheduled starts of step ${step}:\n` +
        outcomes.map((o) => `  ${o.status} ${o.error ?? ''}: ${o.cause ?? ''}`).join('\n'),
    )
  }

  function invoker(side: Side): LambdaInvoker {
    return async (functionName, payload) => {
      const role = deployed.roles.get(functionName)
      if (role === undefined) throw new Error(`no function ${functionName} in the stack`)
      const deps = await buildAwsDeps(side.env, {
        clock: () => new Date(side.clockMs),
        bigQuery: { retryDelayMs: BIGQUERY_RETRY_DELAY_MS },
      })
      const started = Date.now()
      const what = `${side.name} ${role} ${JSON.stringify(payload)}`
      try {
        const handler =
          role === 'extract'
            ? createExtractHandler({ deps: async () => deps })
            : createMergeHandler({ deps: async () => deps })
        const result = await handler(payload, fakeContext())
        invocations.push({ what, ms: Date.now() - started })
        return result
      } catch (error) {
        invocations.push({ what, ms: Date.now() - started, error: String(error).slice(0, 300) })
        throw error
      } finally {
        await deps.close()
      }
    }
  }

  /** The history of a side's dimension: its versions, times at the hour of their step (retries start later). */
  async function history(side: Side, table: TableName): Promise<TextRow[]> {
    const rows = await bigQuery.query(
      PROJECT,
      `SELECT * EXCEPT (dimsync_sk, dimsync_batch_id) FROM \`${PROJECT}.${side.dataset}.dim_${table}\` ORDER BY id, valid_from`,
      { location: 'EU' },
    )
    return rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([column, value]) => [
          column,
          value !== null && /^\d{4}-\d\d-\d\d[ T]\d\d:\d\d/.test(value) ? value.slice(0, 13) : value,
        ]),
      ),
    )
  }

  async function ledgerBatches(side: Side): Promise<string[]> {
    const ledger = bigQuery.store
      .listTables(PROJECT, side.dataset)
      .map((t) => t.ref.tableId)
      .find((name) => name === '_dimsync_batches')
    if (ledger === undefined) throw new Error(`${side.name}: no ledger table`)
    const rows = await bigQuery.query(
      PROJECT,
      `SELECT target, batch_id FROM \`${PROJECT}.${side.dataset}.${ledger}\` ORDER BY target, batch_id`,
      { location: 'EU' },
    )
    return rows.map((r) => `${r.target!.replace(/^dim_/, '')} ${r.batch_id}`).sort()
  }

  /** The per-batch staging tables left in the dataset. */
  async function leftoverTables(side: Side): Promise<string[]> {
    return bigQuery.store
      .listTables(PROJECT, side.dataset)
      .map((t) => t.ref.tableId)
      .filter((name) => name.startsWith('_dimsync_stage_'))
      .sort()
  }

  async function heldLeases(side: Side): Promise<string[]> {
    const items = await dynamo.client.send(new ScanCommand({ TableName: side.stateTable }))
    return (items.Items ?? [])
      .filter((item) => item.owner !== undefined)
      .map((item) => `${item.pk?.S} ${item.sk?.S} held by ${item.owner?.S}`)
  }

  async function openRuns(side: Side): Promise<string[]> {
    const deps = await buildAwsDeps(side.env)
    try {
      const runs = await Promise.all(TABLES.map((t) => deps.state.listRuns(t, 100)))
      return runs
        .flat()
        .filter((r) => r.status === 'running')
        .map((r) => `${r.table} ${r.runId}`)
    } finally {
      await deps.close()
    }
  }

  async function stagedObjects(side: Side): Promise<string[]> {
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: side.bucket }))
    return (listed.Contents ?? []).map((o) => o.Key!)
  }
})

function outcomeOf(
  side: Side,
  table: TableName,
  step: number,
  start: number,
  result: ExecutionResult,
): Outcome {
  const notices = result.calls.filter((c) => c.resource === SNS_PUBLISH).length
  const output = result.output as
    { status?: string; batchId?: string; merge?: { status?: string } } | undefined
  if (result.status === 'FAILED')
    return {
      side: side.name,
      table,
      step,
      start,
      status: 'failed',
      error: result.error ?? '',
      cause: (result.cause ?? '').slice(0, 400),
      notices,
    }
  if (output?.status === 'skipped') return { side: side.name, table, step, start, status: 'skipped', notices }
  const status = output?.merge?.status === 'already-applied' ? 'already-applied' : 'merged'
  return { side: side.name, table, step, start, status, batchId: output!.batchId!, notices }
}

/** The three source tables of a seed and the random changes of each step. */
interface Sources {
  readonly snap: string
  readonly delta: string
  readonly feed: string
  change(step: number, random: () => number): Promise<void>
}

async function createSources(pg: PgScratch, seed: number): Promise<Sources> {
  const snap = `${pg.schema}.snap_${seed}`
  const delta = `${pg.schema}.delta_${seed}`
  const feed = `${pg.schema}.feed_${seed}`
  await pg.sql(`CREATE TABLE ${snap} (id BIGINT PRIMARY KEY, name TEXT NOT NULL)`)
  await pg.sql(
    `CREATE TABLE ${delta} (id BIGINT PRIMARY KEY, name TEXT NOT NULL, updated_at TIMESTAMP NOT NULL)`,
  )
  await pg.sql(
    `CREATE TABLE ${feed} ("Op" TEXT NOT NULL, seq BIGINT NOT NULL, changed_at TIMESTAMP NOT NULL, id BIGINT NOT NULL, name TEXT)`,
  )
  const business = (step: number, minute: number) =>
    new Date(Date.UTC(2024, 0, 1) + step * HOUR + minute * 60_000)
      .toISOString()
      .replace('T', ' ')
      .replace('Z', '')
  const alive = new Set<number>()
  let seq = 0
  return {
    snap,
    delta,
    feed,
    async change(step, random) {
      const pick = (p: number) => random() < p
      for (let id = 1; id <= 12; id++) {
        if (step === 1 || (!alive.has(id) && pick(0.3))) {
          await pg.sql(`INSERT INTO ${snap} VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET name = $2`, [
            id,
            `s${id}-${step}`,
          ])
        } else if (alive.has(id) && pick(0.15)) {
          await pg.sql(`DELETE FROM ${snap} WHERE id = $1`, [id])
        } else if (alive.has(id) && pick(0.3)) {
          await pg.sql(`UPDATE ${snap} SET name = $2 WHERE id = $1`, [id, `s${id}-${step}`])
        }
      }
      alive.clear()
      for (const row of (await pg.sql(`SELECT id FROM ${snap}`)).rows as { id: string }[])
        alive.add(Number(row.id))
      for (let id = 1; id <= 10; id++) {
        if (step === 1 || pick(0.35))
          await pg.sql(
            `INSERT INTO ${delta} VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET name = $2, updated_at = $3`,
            [id, `d${id}-${step}`, business(step, id)],
          )
      }
      const events = 3 + Math.floor(random() * 5)
      for (let i = 0; i < events; i++) {
        const id = 1 + Math.floor(random() * 6)
        const op = pick(0.2) ? 'D' : pick(0.5) ? 'I' : 'U'
        seq++
        await pg.sql(`INSERT INTO ${feed} VALUES ($1, $2, $3, $4, $5)`, [
          op,
          seq,
          business(step, i),
          id,
          op === 'D' ? null : `f${id}-${seq}`,
        ])
      }
    },
  }
}

/**
 * The handlers log JSON lines and metrics to stdout and stderr (Powertools): kept out of the test output while the
 * file runs; returns the function that restores them.
 */
function silenceHandlers(): () => void {
  if (process.env.DIMSYNC_CHAOS_VERBOSE === '1') return () => undefined
  const originals = [process.stdout.write, process.stderr.write] as const
  const swallow = (() => true) as typeof process.stdout.write
  process.stdout.write = swallow
  process.stderr.write = swallow
  return () => {
    process.stdout.write = originals[0]
    process.stderr.write = originals[1]
  }
}
