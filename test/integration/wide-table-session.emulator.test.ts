import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BigQueryWarehouse } from '../../lib/adapters/warehouse/bigquery-warehouse.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { MergeScriptRequest } from '../../lib/adapters/warehouse/bigquery-script-job.ts'
import { metadataColumnList } from '../../lib/core/metadata-columns.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { BothWarehouses, type PairedDimension } from '../support/both-warehouses.ts'
import { DIMSYNC_COLUMNS, tableSpec } from '../support/table-spec-builder.ts'

/*
 * The widest table BigQuery holds (a dimension of 10,000 columns) merges there: its merge is over BigQuery's 1,024K-character query limit, so it
 * runs as several queries of one session transaction, its widest statements in column groups. The same batches
 * merged into DuckDB give the history both must hold. WIDE_TABLE_COLUMNS sets the width (default: the widest that
 * merges on the emulator within CI's time, see docs/bigquery.md; test/lib/sql/bigquery-statement-lengths.test.ts
 * renders the 10,000-column merge).
 */
const WIDTH = Number(process.env.WIDE_TABLE_COLUMNS ?? 1_300)
const NAME_LENGTH = Number(process.env.WIDE_TABLE_NAME_LENGTH ?? 200)
// The dimension's columns: the source's and dimsync's (surrogate key, window, flags, hash, batch).
const METADATA = metadataColumnList(DIMSYNC_COLUMNS).length
const names = Array.from({ length: WIDTH - METADATA - 1 }, (_, i) =>
  `attribute_name_${String(i).padStart(5, '0')}`.padEnd(NAME_LENGTH, '_x'),
)
const columns: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  ...names.map((name) => ({ name, type: 'VARCHAR' })),
]
const [firstColumn, lastColumn] = [names[0]!, names.at(-1)!]
const row = (id: number, changes: Record<string, string> = {}) => ({
  customer_id: id,
  ...Object.fromEntries(names.map((n, i) => [n, i % 3 === 0 ? null : `v${id}`])),
  ...changes,
})

const shapes: [string, TableSpec][] = [
  ['all columns tracked', tableSpec({})],
  ['all columns type 1', tableSpec({ tracked: { kind: 'list', columns: [] } })],
  // The first half of the columns type 1: the first column is type 1, the last one tracked.
  [
    'half the columns type 1',
    tableSpec({ tracked: { kind: 'all_except', columns: names.slice(0, names.length / 2) } }),
  ],
]

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

/** The texts of the session queries the emulator received (jobs that create a session or run in one). */
function sessionQueries(dimension: PairedDimension, from = 0): string[] {
  return dimension.emulator.requests.slice(from).flatMap((r) => {
    const query = (r.json as { configuration?: { query?: Record<string, unknown> } } | undefined)
      ?.configuration?.query
    const inSession =
      query !== undefined && (query.createSession === true || query.connectionProperties !== undefined)
    return inSession ? [String(query.query)] : []
  })
}

describe(`a ${WIDTH.toLocaleString('en-US')}-column table merges on BigQuery as several queries of one session transaction`, () => {
  for (const [shape, table] of shapes) {
    it(`${shape}: a first load, then a later batch (a change in the first and in the last column, a new key), with DuckDB's history`, async () => {
      await both.withDimension(table, columns, async (dimension) => {
        const started = performance.now()
        const first = await dimension.load([row(1), row(2)], { extractedAt: '2024-01-01T00:00:00Z' })
        expect(first.duckdb).toMatchObject({ status: 'merged', counts: { insertedVersions: 2 } })
        expect(first.bigquery).toEqual(first.duckdb)
        const later = await dimension.load(
          [row(1, { [firstColumn]: 'changed' }), row(2, { [lastColumn]: 'changed' }), row(3)],
          { extractedAt: '2024-02-01T00:00:00Z' },
        )
        expect('error' in later.duckdb ? later.duckdb.message : later.duckdb.status).toBe('merged')
        expect(later.bigquery).toEqual(later.duckdb)
        const held = await dimension.holdings()
        expect(held.bigquery).toEqual(held.duckdb)
        expect(held.bigquery.dimension!.length).toBe(
          3 + (table.tracked.kind === 'list' ? 0 : table.tracked.columns.length === 0 ? 2 : 1),
        )
        // The later batch ran as a session's queries, its widest statements in column groups.
        const queries = sessionQueries(dimension)
        expect(queries.filter((q) => q.includes('BEGIN TRANSACTION;'))).toHaveLength(
          queries.filter((q) => q.includes('COMMIT TRANSACTION;')).length,
        )
        expect(queries.some((q) => /SET __dimsync_step = '[^']* \(columns 1 to /.test(q))).toBe(true)
        // The type 1 overwrite's groups do not fit one query: their guard is evaluated once, in a session variable.
        if (table.tracked.kind === 'list')
          expect(queries.some((q) => q.includes('SET __dimsync_guard = ('))).toBe(true)
        console.info(
          `${WIDTH} columns of ${NAME_LENGTH} characters, ${shape}: ${Math.round(performance.now() - started)} ms ` +
            `(DuckDB ${Math.round(both.tally.duckdb.ms)} ms, emulator ${Math.round(both.tally.bigquery.ms)} ms so far)`,
        )
      })
    }, 600_000)
  }
})

describe('a failure inside the session transaction of a wide table’s merge', () => {
  const table = shapes[2]![1]
  const later = [row(1, { [firstColumn]: 'changed' }), row(2, { [lastColumn]: 'changed' }), row(3)]

  it('in its last query rolls back what its earlier queries wrote: the dimension is as it was, and the next run merges the batch', async () => {
    await both.withDimension(table, columns, async (dimension) => {
      await dimension.load([row(1), row(2)], { extractedAt: '2024-01-01T00:00:00Z' })
      const before = await dimension.holdings()
      const batchId = await dimension.stage(later, { extractedAt: '2024-02-01T00:00:00Z' })
      const sent = dimension.emulator.requests.length
      dimension.emulator.faults.failStatement((s) => s.text.includes('would be recorded'), {
        reason: 'invalidQuery',
        message: 'Query error: injected failure at [1:1]',
      })
      const failed = await dimension.merge(batchId)
      expect(failed.bigquery).toMatchObject({ error: 'WarehouseError' })
      expect('message' in failed.bigquery && failed.bigquery.message).toContain('injected failure')
      // The failing statement ran in a later query of the session than the writes it rolled back.
      const queries = sessionQueries(dimension, sent)
      const failing = queries.findIndex((q) => q.includes('would be recorded'))
      const inserting = queries.findIndex((q) => q.includes("SET __dimsync_step = 'insert new versions'"))
      expect(inserting).toBeGreaterThan(0)
      expect(failing).toBeGreaterThan(inserting)
      // Its session was ended after the failure.
      expect(queries.at(-1)).toBe('CALL BQ.ABORT_SESSION();')
      expect((await dimension.holdings()).bigquery).toEqual(before.bigquery)
      const again = await dimension.merge(batchId)
      expect(again).toMatchObject({ duckdb: { status: 'already-applied' }, bigquery: { status: 'merged' } })
      const held = await dimension.holdings()
      expect(held.bigquery).toEqual(held.duckdb)
    })
  }, 300_000)

  it('failing transiently, ends that session and merges the batch in a new one, once', async () => {
    await both.withDimension(table, columns, async (dimension) => {
      await dimension.load([row(1), row(2)], { extractedAt: '2024-01-01T00:00:00Z' })
      const batchId = await dimension.stage(later, { extractedAt: '2024-02-01T00:00:00Z' })
      const sent = dimension.emulator.requests.length
      dimension.emulator.faults.failStatement((s) => s.text.includes('would be recorded'), {
        reason: 'backendError',
        message: 'Error encountered during execution. Retrying may solve the problem.',
      })
      const merged = await dimension.merge(batchId)
      expect(merged.bigquery).toEqual(merged.duckdb)
      const queries = sessionQueries(dimension, sent)
      expect(queries.filter((q) => q.includes('SELECT') && q.includes('AS committed;'))).toHaveLength(2)
      expect(queries.filter((q) => q === 'CALL BQ.ABORT_SESSION();')).toHaveLength(2)
      const held = await dimension.holdings()
      expect(held.bigquery).toEqual(held.duckdb)
      expect(await dimension.merge(batchId)).toMatchObject({
        duckdb: { status: 'already-applied' },
        bigquery: { status: 'already-applied' },
      })
    })
  }, 300_000)
})

describe('a wide table’s session merge after its COMMIT', () => {
  const table = shapes[2]![1]
  const later = [row(1, { [lastColumn]: 'changed' }), row(3)]
  const BACKEND_ERROR = {
    reason: 'backendError',
    message: 'Error encountered during execution. Retrying may solve the problem.',
  }

  it('whose answer was lost is committed once: the next run reads the ledger and finds the batch applied, starting no session', async () => {
    await both.withDimension(table, columns, async (dimension) => {
      await dimension.load([row(1), row(2)], { extractedAt: '2024-01-01T00:00:00Z' })
      const batchId = await dimension.stage(later, { extractedAt: '2024-02-01T00:00:00Z' })
      // The result of the session's last query (its counts) is refused once: the merge committed, the call failed.
      const lastResult = (r: { method: string; path: string }) =>
        r.method === 'GET' && /\/queries\/dimsync_merge_/.test(r.path) && !/_p0_/.test(r.path)
      dimension.emulator.faults.failRequest(lastResult, 403, {
        reason: 'accessDenied',
        message: 'Access Denied: injected',
      })
      // The request the adapter was given, to ask it again below as a retried Lambda would.
      const bigquery = dimension.warehouses.bigquery as BigQueryWarehouse
      const run = bigquery.runMergeScript.bind(bigquery)
      let request: MergeScriptRequest | undefined
      bigquery.runMergeScript = (r) => run((request = r))
      const lost = await dimension.merge(batchId)
      expect(lost.bigquery).toMatchObject({ error: 'WarehouseError' })
      const sent = dimension.emulator.requests.length
      const again = await dimension.merge(batchId)
      expect(again).toMatchObject({
        duckdb: { status: 'already-applied' },
        bigquery: { status: 'already-applied' },
      })
      // The adapter asked again adopts the session's last query, done: its counts, no new session.
      const adopted = await run(request!)
      expect(adopted.row).toMatchObject({ events: 2, inserted_versions: 2, closed_versions: 1 })
      expect(sessionQueries(dimension, sent)).toEqual([])
      const held = await dimension.holdings()
      expect(held.bigquery).toEqual(held.duckdb)
    })
  }, 300_000)

  it('whose staging table’s drop fails transiently is retried: the new session finds the batch in the ledger and answers its counts', async () => {
    await both.withDimension(table, columns, async (dimension) => {
      await dimension.load([row(1), row(2)], { extractedAt: '2024-01-01T00:00:00Z' })
      const batchId = await dimension.stage(later, { extractedAt: '2024-02-01T00:00:00Z' })
      const sent = dimension.emulator.requests.length
      dimension.emulator.faults.failStatement(
        (s) => s.text.startsWith('DROP TABLE') && s.jobId.startsWith('dimsync_merge_'),
        BACKEND_ERROR,
      )
      const merged = await dimension.merge(batchId)
      // The counts the ledger recorded inside the transaction (the keys' split is not recorded, as in one script).
      expect(merged.duckdb).toMatchObject({ status: 'merged' })
      expect(merged.bigquery).toMatchObject({
        status: 'merged',
        counts: (merged.duckdb as { counts: object }).counts,
      })
      const queries = sessionQueries(dimension, sent)
      expect(queries.filter((q) => q.includes("SET __dimsync_step = 'report recorded counts'"))).toHaveLength(
        1,
      )
      const held = await dimension.holdings()
      expect(held.bigquery).toEqual(held.duckdb)
    })
  }, 300_000)
})
