import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { metadataColumnList } from '../../../lib/core/metadata-columns.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { bigQueryColumnType } from '../../../lib/sql/bigquery/bigquery-types.ts'
import type { CompiledStatement } from '../../../lib/sql/dialect.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import { renderRowHash } from '../../../lib/sql/row-hash.ts'
import { BigQueryEmulator } from '../../support/bigquery-emulator/bigquery-emulator.ts'
import { BothWarehouses } from '../../support/both-warehouses.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ZetaSqlAnalyzer } from '../../support/zetasql/zetasql-analyzer.ts'

/**
 * Wide tables on BigQuery: a query or script may hold at most 1,024K characters. The merge script of a
 * 2,000-column table stays under it (the row hash is rendered compactly), every statement of it passes the
 * GoogleSQL analyzer, and the compact hash is the same hash: ZetaSQL's reference implementation and DuckDB give
 * the same hex for the same values.
 */
const PROJECT = 'acme-dw'
const DATASET = 'history'
const BATCH = '20240310T143000.000Z-3f9a1c'
const LIMIT = 1_024_000
const d = createBigQueryDialect({ project: PROJECT })

/** A key and `width - 1` attributes of the common types, named like real columns (20 characters). */
function wideColumns(width: number): StagedColumn[] {
  const types = [
    'VARCHAR',
    'BIGINT',
    'TIMESTAMP WITH TIME ZONE',
    'DECIMAL(18,2)',
    'DOUBLE',
    'BOOLEAN',
    'DATE',
  ]
  return [
    { name: 'customer_id', type: 'BIGINT' },
    { name: 'updated_at', type: 'TIMESTAMP WITH TIME ZONE' },
    ...Array.from({ length: width - 2 }, (_, i) => ({
      name: `attribute_name_${String(i).padStart(5, '0')}`,
      type: types[i % types.length]!,
    })),
  ]
}

function render(table: TableSpec, columns: readonly StagedColumn[], later: boolean) {
  const first = planDimensionLayout(table, BATCH, columns, undefined)
  const existing = later ? [...first.stored, ...metadataColumnList(table.columns)] : undefined
  const layout = planDimensionLayout(table, BATCH, columns, existing)
  return renderMergeScript(d, {
    table,
    layout,
    objects: dimensionObjects(table, DATASET),
    stage: { schema: DATASET, name: stagingTableName(table.target, BATCH) },
    batchId: BATCH,
    extractedAt: '2024-03-10T14:30:00.000Z',
    appliedAt: '2024-03-10T14:31:02.123456Z',
    mode: table.extract.mode,
    allowMassDelete: false,
  })
}

/** Each shape at the widest its script fits (measured: change-time tables repeat each column more). */
const SHAPES: Record<string, { table: TableSpec; width: number }> = {
  snapshot: { table: tableSpec({ deletes: 'new_record' }), width: 2_000 },
  'change times (late events)': {
    table: tableSpec({
      deletes: 'invalidate',
      extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
      validFrom: { kind: 'column', column: 'updated_at' },
    }),
    width: 1_300,
  },
}

describe(`merge scripts of wide tables fit BigQuery's ${LIMIT}-character limit`, () => {
  let analyzer: ZetaSqlAnalyzer
  beforeAll(async () => {
    analyzer = await ZetaSqlAnalyzer.start()
  })
  afterAll(async () => {
    await analyzer?.stop()
  })

  it.each(Object.keys(SHAPES))(
    '%s: first and later batches, every statement analyzed',
    async (shape) => {
      const { table, width } = SHAPES[shape]!
      const columns = wideColumns(width)
      for (const later of [false, true]) {
        const script = render(table, columns, later)
        console.info(
          `${width} columns, ${shape}, ${later ? 'later' : 'first'} batch: ${script.text.length} characters`,
        )
        expect(script.text.length).toBeLessThan(LIMIT)
        analyzer.reset()
        analyzer.addTable(
          `${PROJECT}.${DATASET}.${stagingTableName(table.target, BATCH)}`,
          columns.map((c) => ({
            name: c.name,
            type: bigQueryColumnType(c.type, { table: 't', column: c.name }),
          })),
        )
        // A later batch finds the dimension the first one created.
        const earlier: CompiledStatement[] = later ? [...render(table, columns, false).ddl] : []
        const statements: CompiledStatement[] = [...earlier, ...script.ddl, ...script.merge, ...script.after]
        const failed: string[] = []
        for (const s of statements) {
          const verdict = await analyzer.analyze(s.label, s.sql)
          if (!verdict.ok) failed.push(`${s.label}: ${verdict.error}`)
        }
        expect(failed).toEqual([])
      }
    },
    300_000,
  )
})

describe('a wide table merges on the BigQuery emulator as on DuckDB', () => {
  const WIDE = 400
  let both: BothWarehouses
  beforeAll(async () => {
    both = await BothWarehouses.start()
  })
  afterAll(async () => {
    await both?.stop()
  })

  it(`${WIDE} columns: a change in the last column opens a version on both, with the same rows`, async () => {
    const columns = wideColumns(WIDE).filter((c) => c.name !== 'updated_at')
    const row = () =>
      Object.fromEntries(
        columns.map((c, i) => [
          c.name,
          c.name === 'customer_id' ? 1 : i === columns.length - 1 ? null : sample(c.type, i),
        ]),
      )
    const lastName = columns[columns.length - 1]!.name
    const dimension = await both.open(tableSpec({ deletes: 'invalidate' }), columns)
    try {
      await dimension.load([row()], { extractedAt: '2024-01-01T00:00:00Z' })
      const changed = await dimension.load([{ ...row(), [lastName]: sample(columns.at(-1)!.type, 0) }], {
        extractedAt: '2024-02-01T00:00:00Z',
      })
      expect(changed.duckdb).toMatchObject({ status: 'merged', counts: { insertedVersions: 1 } })
      expect(changed.bigquery).toEqual(changed.duckdb)
      const held = await dimension.holdings()
      expect(held.bigquery).toEqual(held.duckdb)
    } finally {
      await dimension.close()
    }
  }, 300_000)
})

/** A value of a staged type of `wideColumns`, varied by `i`. */
function sample(type: string, i: number): string | number | boolean {
  switch (type) {
    case 'VARCHAR':
      return `text ${i}`
    case 'BIGINT':
      return i * 1_000_003
    case 'TIMESTAMP WITH TIME ZONE':
      return `2024-01-01 00:${String(i % 60).padStart(2, '0')}:00`
    case 'DECIMAL(18,2)':
      return `${i}.25`
    case 'DOUBLE':
      return i + 0.5
    case 'BOOLEAN':
      return i % 2 === 0
    default:
      return '2024-03-10'
  }
}

describe('the compact BigQuery row hash is the portable one: ZetaSQL and DuckDB give the same hex', () => {
  /** Name, staged type, DuckDB literal, BigQuery literal of one value (NULL in both when the literal is NULL). */
  type Value = readonly [string, string, string, string]
  const ROWS: readonly (readonly Value[])[] = [
    [
      ['name', 'VARCHAR', `'Ana'`, `'Ana'`],
      ['note', 'VARCHAR', `'é ''q'' | ; :'`, `'é \\'q\\' | ; :'`],
      ['visits', 'INTEGER', '-42', '-42'],
      ['big', 'BIGINT', '9007199254740993', '9007199254740993'],
      ['active', 'BOOLEAN', 'true', 'true'],
      ['signup', 'DATE', `DATE '2024-03-10'`, `DATE '2024-03-10'`],
      ['opens', 'TIME', `TIME '09:05:00.25'`, `TIME '09:05:00.25'`],
      [
        'seen',
        'TIMESTAMP WITH TIME ZONE',
        `TIMESTAMPTZ '2024-03-10 16:30:00.12+02'`,
        `TIMESTAMP '2024-03-10 16:30:00.12+02'`,
      ],
      ['local_seen', 'TIMESTAMP', `TIMESTAMP '2024-03-10 14:30:00'`, `DATETIME '2024-03-10 14:30:00'`],
      ['balance', 'DECIMAL(12,2)', '1.5::DECIMAL(12,2)', `NUMERIC '1.5'`],
      ['score', 'DOUBLE', '0.1::DOUBLE', 'CAST(0.1 AS FLOAT64)'],
      ['photo', 'BLOB', `'\\x00\\xFFa'::BLOB`, `b'\\x00\\xffa'`],
    ],
    [
      ['name', 'VARCHAR', `''`, `''`],
      ['visits', 'INTEGER', 'NULL', 'NULL'],
      ['balance', 'DECIMAL(12,2)', 'NULL', 'NULL'],
      ['score', 'DOUBLE', 'NULL', 'NULL'],
      ['seen', 'TIMESTAMP WITH TIME ZONE', 'NULL', 'NULL'],
      ['active', 'BOOLEAN', 'NULL', 'NULL'],
    ],
    [['only', 'VARCHAR', 'NULL', 'NULL']],
    // -0 hashes as 0 on both (lib/core/staged-types.ts). ZetaSQL's FORMAT prints -0 as 0 by itself, so the IF that
    // keeps BigQuery's C printf from printing -0 is checked as text (row-hash-cross-dialect.test.ts), not here.
    [['score', 'DOUBLE', `'-0'::DOUBLE`, `CAST('-0' AS FLOAT64)`]],
  ]
  const BIGQUERY_TYPES: Record<string, string> = {
    VARCHAR: 'STRING',
    INTEGER: 'INT64',
    BIGINT: 'INT64',
    BOOLEAN: 'BOOL',
    DATE: 'DATE',
    TIME: 'TIME',
    'TIMESTAMP WITH TIME ZONE': 'TIMESTAMP',
    TIMESTAMP: 'DATETIME',
    'DECIMAL(12,2)': 'NUMERIC',
    DOUBLE: 'FLOAT64',
    BLOB: 'BYTES',
  }

  let emulator: BigQueryEmulator
  let duck: DuckDBInstance
  beforeAll(async () => {
    emulator = await BigQueryEmulator.start()
    duck = await DuckDBInstance.create(':memory:')
  })
  afterAll(async () => {
    await emulator?.stop()
    duck?.closeSync()
  })

  it.each(ROWS.map((row, i) => [i + 1, row] as const))('row %i', async (_i, row) => {
    const columns = row.map(([name, type]) => ({ name, type }))
    const connection = await duck.connect()
    try {
      await connection.run(`SET TimeZone='UTC'`)
      const duckSelect = row
        .map(([name, type, literal]) => `CAST(${literal} AS ${type}) AS "${name}"`)
        .join(', ')
      const duckHash = (
        await connection.runAndReadAll(
          `SELECT ${renderRowHash(duckDbDialect, columns, 's')} AS h FROM (SELECT ${duckSelect}) s`,
        )
      ).getRowObjectsJson()[0]!.h
      const bqSelect = row
        .map(([name, type, , literal]) => `CAST(${literal} AS ${BIGQUERY_TYPES[type]}) AS \`${name}\``)
        .join(', ')
      const [bq] = await emulator.query(
        PROJECT,
        `SELECT ${renderRowHash(d, columns, 's')} AS h FROM (SELECT ${bqSelect}) s`,
      )
      expect(bq!.h).toMatch(/^[0-9a-f]{32}$/)
      expect(bq!.h).toBe(duckHash)
    } finally {
      connection.closeSync()
    }
  })
})
