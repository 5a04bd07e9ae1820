import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { BigQuery } from '@google-cloud/bigquery'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import type { StagedColumn } from '../../../../lib/core/batch.ts'
import { planDimensionLayout } from '../../../../lib/core/dimension-layout.ts'
import { DimsyncError, WarehouseError } from '../../../../lib/core/errors.ts'
import { metadataColumnList } from '../../../../lib/core/metadata-columns.ts'
import { createBigQueryDialect } from '../../../../lib/sql/bigquery/bigquery-dialect.ts'
import { MAX_QUERY_CHARACTERS } from '../../../../lib/sql/bigquery/script-length.ts'
import { dimensionObjects } from '../../../../lib/sql/render-ddl.ts'
import { renderMergeScript, stagingTableName } from '../../../../lib/sql/render-merge-script.ts'
import { BigQueryEmulator } from '../../../support/bigquery-emulator/bigquery-emulator.ts'
import { ZetaSqlService } from '../../../support/bigquery-emulator/zetasql-service.ts'
import { tableSpec } from '../../../support/table-spec-builder.ts'

/*
 * BigQuery refuses a query (a script included) longer than 1,024K characters. The emulator refuses it too, and
 * dimsync measures its merge script before submitting it: a script over it runs as several queries of one session
 * (test/integration/wide-table-session.emulator.test.ts), and a table with a statement that no query can hold
 * fails with an error naming the table, before any merge job exists, instead of BigQuery's error after the batch
 * was loaded.
 */

process.env.METADATA_SERVER_DETECTION = 'none'

const PROJECT = 'acme-dw'
const DATASET = 'history'
const LOCATION = 'EU'
const BATCH = '20300310T000000.000Z-aaaaaa'

let zeta: ZetaSqlService
let emulator: BigQueryEmulator

beforeAll(async () => {
  zeta = await ZetaSqlService.start()
})
afterAll(async () => {
  await zeta.stop()
})
beforeEach(async () => {
  emulator = await BigQueryEmulator.start({ zetaSql: zeta })
  emulator.createDataset(PROJECT, DATASET, { location: LOCATION })
})
afterEach(async () => {
  await emulator.stop()
})

/** A query of exactly `length` characters: SELECT 1 and a comment. */
const queryOf = (length: number) => {
  const head = 'SELECT 1 AS one -- '
  return head + 'x'.repeat(length - head.length)
}

/** A key and `width - 1` type 1 attributes named like real columns, padded to `nameLength` characters. */
function wideType1Table(width: number, nameLength: number) {
  const names = Array.from({ length: width - 1 }, (_, i) =>
    `attribute_name_${String(i).padStart(5, '0')}`.padEnd(nameLength, '_x'),
  )
  const columns: StagedColumn[] = [
    { name: 'customer_id', type: 'BIGINT' },
    ...names.map((name) => ({ name, type: 'VARCHAR' })),
  ]
  return { table: tableSpec({ tracked: { kind: 'list', columns: [] } }), columns }
}

describe('the query length limit', () => {
  it('the emulator refuses a query over 1,024K characters as BigQuery does, and runs one at the limit', async () => {
    const client = new BigQuery({ projectId: PROJECT, ...emulator.clientOptions() })
    const run = (query: string) =>
      client.createJob({ location: LOCATION, configuration: { query: { query, useLegacySql: false } } })
    const [atLimit] = await run(queryOf(MAX_QUERY_CHARACTERS))
    expect(atLimit.metadata.status.errorResult).toBeUndefined()
    const over = (await run(queryOf(MAX_QUERY_CHARACTERS + 1)).catch((e: unknown) => e)) as {
      code: number
      errors: { reason: string; message: string }[]
    }
    expect(over.code).toBe(400)
    expect(over.errors[0]).toMatchObject({
      reason: 'invalidQuery',
      message:
        'The query is too large. The maximum standard SQL query length is 1024.00K characters, including comments and white space characters.',
    })
  })

  it('a merge with a statement too long for any query fails naming the table before any job is submitted', async () => {
    // 3,000 type 1 columns of 290 characters: a later batch's diff names each twice, over the limit by itself.
    const { table, columns } = wideType1Table(3_000, 290)
    const d = createBigQueryDialect({ project: PROJECT })
    const first = planDimensionLayout(table, BATCH, columns, undefined)
    const layout = planDimensionLayout(table, BATCH, columns, [
      ...first.stored,
      ...metadataColumnList(table.columns),
    ])
    const stage = { schema: DATASET, name: stagingTableName(table.target, BATCH) }
    const script = renderMergeScript(d, {
      table,
      layout,
      objects: dimensionObjects(table, DATASET),
      stage,
      batchId: BATCH,
      extractedAt: '2030-03-10T00:00:00.000Z',
      appliedAt: '2030-03-10T00:01:00.000Z',
      mode: 'full',
      allowMassDelete: false,
    })
    expect(script.text.length).toBeGreaterThan(MAX_QUERY_CHARACTERS)
    const warehouse = new BigQueryWarehouse({
      project: PROJECT,
      location: LOCATION,
      ...emulator.clientOptions(),
      pollIntervalMs: 5,
    })
    const error = await warehouse
      .runMergeScript({ table, batchId: BATCH, script, stage, dryRun: false, columns: layout.stored })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(DimsyncError)
    expect(error).not.toBeInstanceOf(WarehouseError)
    expect((error as DimsyncError).retryable).toBe(false)
    const diff = script.merge.find((s) => s.label === 'diff snapshot against current versions')!
    expect((error as DimsyncError).message).toBe(
      `table customers: its merge script is ${Math.ceil(script.text.length / 1000).toLocaleString('en-US')}K ` +
        "characters (3000 columns), over BigQuery's limit of 1,024K characters per query, and its statement " +
        `"diff snapshot against current versions" (${Math.ceil(diff.sql.length / 1000).toLocaleString('en-US')}K ` +
        'characters) does not fit one query of a session either; nothing was merged. Exclude columns the ' +
        'dimension does not need (exclude:), or rename long source columns in a query source',
    )
    expect(emulator.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/jobs'))).toEqual([])
  })
})
