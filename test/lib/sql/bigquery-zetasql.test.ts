import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { COLUMN_PRESETS, type ColumnPreset } from '../../../lib/core/metadata-columns.ts'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import type { DeletePolicy, TableSpec } from '../../../lib/core/table-spec.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import { bigQueryColumnType } from '../../../lib/sql/bigquery/bigquery-types.ts'
import type { CompiledStatement } from '../../../lib/sql/dialect.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ZetaSqlAnalyzer, type StatementVerdict } from '../../support/zetasql/zetasql-analyzer.ts'

const PROJECT = 'acme-dw'
const DATASET = 'history'
const BATCH = '20240310T143000.000Z-3f9a1c'
const d = createBigQueryDialect({ project: PROJECT })

const STAGED: StagedColumn[] = [
  { name: 'tenant_id', type: 'VARCHAR' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'balance', type: 'DECIMAL(12,2)' },
  { name: 'score', type: 'DOUBLE' },
  { name: 'visits', type: 'INTEGER' },
  { name: 'signup', type: 'DATE' },
  { name: 'opens_at', type: 'TIME' },
  { name: 'photo', type: 'BLOB' },
  { name: 'active', type: 'BOOLEAN' },
  { name: 'last_login', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'local_seen', type: 'TIMESTAMP' },
  { name: 'updated_at', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'changed_at', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'deleted_at', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'Op', type: 'VARCHAR' },
  { name: 'change_seq', type: 'BIGINT' },
]

interface Case {
  readonly title: string
  readonly table: TableSpec
  /** Columns the dimension already has (an earlier run), or undefined for the first run. */
  readonly existing?: readonly StagedColumn[]
}

const PRESETS: ColumnPreset[] = ['dimsync', 'dbt', 'fivetran', 'databricks']
const DELETES: DeletePolicy[] = ['ignore', 'invalidate', 'new_record']
const SHAPES = [
  'snapshot',
  'change-time full',
  'change-time delta',
  'change feed',
  'sequenced change feed',
] as const
const DMS = { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] }

function cases(): Case[] {
  const out: Case[] = []
  let i = 0
  for (const key of [['customer_id'], ['tenant_id', 'customer_id']])
    for (const deletes of DELETES)
      for (const openEnd of [null, '9999-12-31T23:59:59.000Z'])
        for (const shape of SHAPES) {
          const preset = PRESETS[i++ % PRESETS.length]!
          const incremental = shape === 'change-time delta' || shape === 'sequenced change feed'
          const feed = shape === 'change feed' || shape === 'sequenced change feed'
          const table = tableSpec({
            key,
            deletes,
            openEnd,
            columns: COLUMN_PRESETS[preset],
            validFrom:
              shape === 'snapshot' ? { kind: 'extracted_at' } : { kind: 'column', column: 'changed_at' },
            extract: incremental
              ? { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 }
              : { mode: 'full' },
            tracked: { kind: 'all_except', columns: ['last_login'] },
            ...(feed
              ? {
                  changes: {
                    operation: DMS,
                    ...(shape === 'sequenced change feed' ? { sequence: 'change_seq' } : {}),
                  },
                }
              : {}),
            ...(incremental || i % 2 === 0 ? { softDeleteColumn: 'deleted_at' } : {}),
          })
          const title = `${key.join('+')} key, deletes ${deletes}, open end ${openEnd ?? 'NULL'}, ${shape}, ${preset} columns`
          out.push({ title, table })
          // Every fourth case also runs against an existing dimension that lacks two columns (ALTER TABLE ADD COLUMN).
          if (i % 4 === 0)
            out.push({
              title: `${title}, existing dimension gains columns`,
              table,
              existing: STAGED.filter((c) => c.name !== 'score' && c.name !== 'photo'),
            })
        }
  // Table modes: a mirror over every input shape (deletes remove rows), and append over full and delta extracts.
  for (const shape of SHAPES) {
    const incremental = shape === 'change-time delta' || shape === 'sequenced change feed'
    const feed = shape === 'change feed' || shape === 'sequenced change feed'
    out.push({
      title: `mirror, ${shape}`,
      table: tableSpec({
        mode: 'mirror',
        key: ['tenant_id', 'customer_id'],
        deletes: 'invalidate',
        tracked: { kind: 'list', columns: [] },
        validFrom: shape === 'snapshot' ? { kind: 'extracted_at' } : { kind: 'column', column: 'changed_at' },
        extract: incremental
          ? { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 }
          : { mode: 'full' },
        ...(feed
          ? {
              changes: {
                operation: DMS,
                ...(shape === 'sequenced change feed' ? { sequence: 'change_seq' } : {}),
              },
            }
          : { softDeleteColumn: 'deleted_at' }),
      }),
    })
  }
  // Column policies (types 0, 3, 6) over every input shape, with a composite key.
  for (const shape of SHAPES) {
    const incremental = shape === 'change-time delta' || shape === 'sequenced change feed'
    const feed = shape === 'change feed' || shape === 'sequenced change feed'
    out.push({
      title: `column policies, ${shape}`,
      table: tableSpec({
        key: ['tenant_id', 'customer_id'],
        deletes: 'new_record',
        tracked: { kind: 'all_except', columns: ['last_login'] },
        policies: {
          keepFirst: ['signup'],
          previousValue: ['region', 'balance'],
          currentValue: ['region', 'name'],
        },
        validFrom: shape === 'snapshot' ? { kind: 'extracted_at' } : { kind: 'column', column: 'changed_at' },
        extract: incremental
          ? { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 }
          : { mode: 'full' },
        ...(feed
          ? {
              changes: {
                operation: DMS,
                ...(shape === 'sequenced change feed' ? { sequence: 'change_seq' } : {}),
              },
            }
          : {}),
      }),
    })
  }
  // Partial updates over every input shape: NULLs ignored in some columns, one column never updated.
  for (const shape of SHAPES) {
    const feed = shape === 'change feed' || shape === 'sequenced change feed'
    out.push({
      title: `partial updates, ${shape}`,
      table: tableSpec({
        key: ['tenant_id', 'customer_id'],
        deletes: 'invalidate',
        partialUpdates: {
          ignoreNulls: { kind: 'all_except', columns: ['score', 'signup'] },
          columnsToUpdate: ['name', 'region', 'score', 'balance', 'updated_at', 'last_login'],
        },
        validFrom: shape === 'snapshot' ? { kind: 'extracted_at' } : { kind: 'column', column: 'changed_at' },
        extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
        ...(feed
          ? {
              changes: {
                operation: DMS,
                ...(shape === 'sequenced change feed' ? { sequence: 'change_seq' } : {}),
              },
            }
          : {}),
      }),
    })
  }
  // A column the source stopped sending: the dimension keeps it, current versions are hashed again without it.
  for (const feed of [false, true])
    out.push({
      title: `removed source column, ${feed ? 'change feed' : 'snapshot'}`,
      table: tableSpec({
        deletes: 'new_record',
        ...(feed
          ? {
              validFrom: { kind: 'column', column: 'changed_at' },
              changes: { operation: DMS },
              removedColumns: 'keep_last',
            }
          : { softDeleteColumn: 'deleted_at' }),
      }),
      existing: [...STAGED, { name: 'legacy_code', type: 'VARCHAR' }],
    })
  // Bitemporal history over every input shape: the merge runs on a working copy, then closes and inserts rows
  // in system time.
  for (const [i, shape] of SHAPES.entries()) {
    const incremental = shape === 'change-time delta' || shape === 'sequenced change feed'
    const feed = shape === 'change feed' || shape === 'sequenced change feed'
    out.push({
      title: `bitemporal, ${shape}`,
      table: tableSpec({
        key: ['tenant_id', 'customer_id'],
        deletes: i % 2 === 0 ? 'invalidate' : 'new_record',
        openEnd: i % 2 === 0 ? null : '9999-12-31T23:59:59.000Z',
        systemTime: { systemFrom: 'system_from', systemTo: 'system_to' },
        tracked: { kind: 'all_except', columns: ['last_login'] },
        validFrom: shape === 'snapshot' ? { kind: 'extracted_at' } : { kind: 'column', column: 'changed_at' },
        extract: incremental
          ? { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 }
          : { mode: 'full' },
        ...(feed
          ? {
              changes: {
                operation: DMS,
                ...(shape === 'sequenced change feed' ? { sequence: 'change_seq' } : {}),
              },
            }
          : {}),
      }),
    })
  }
  // Widened types: the dimension's columns (a key among them) take the source's wider types in place.
  const narrower: Record<string, string> = {
    customer_id: 'INTEGER',
    balance: 'DECIMAL(10,2)',
    visits: 'SMALLINT',
  }
  out.push({
    title: 'widened types (key, decimal precision, integer)',
    table: tableSpec({
      deletes: 'invalidate',
      validFrom: { kind: 'column', column: 'changed_at' },
      extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
      softDeleteColumn: 'deleted_at',
    }),
    existing: STAGED.map((c) => ({ ...c, type: narrower[c.name] ?? c.type })),
  })
  for (const openEnd of [null, '9999-12-31T23:59:59.000Z'])
    for (const extract of [
      { mode: 'full' },
      { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
    ] as const)
      out.push({
        title: `append, ${extract.mode} extract, open end ${openEnd ?? 'NULL'}`,
        table: tableSpec({ mode: 'append', extract, openEnd }),
      })
  return out
}

let analyzer: ZetaSqlAnalyzer

beforeAll(async () => {
  analyzer = await ZetaSqlAnalyzer.start()
})
afterAll(async () => {
  await analyzer?.stop()
})

/** Renders the whole merge script of `c` and analyzes every statement in order, as BigQuery would run them. */
async function analyzeCase(c: Case): Promise<{ verdicts: StatementVerdict[]; syntax: string | undefined }> {
  analyzer.reset()
  const objects = dimensionObjects(c.table, DATASET)
  const stage = { schema: DATASET, name: stagingTableName(c.table.target, BATCH) }
  analyzer.addTable(
    `${PROJECT}.${DATASET}.${stage.name}`,
    STAGED.map((s) => ({ name: s.name, type: bigQueryColumnType(s.type, { table: 't', column: s.name }) })),
  )
  const verdicts: StatementVerdict[] = []
  const run = async (statements: readonly CompiledStatement[]) => {
    for (const s of statements) verdicts.push(await analyzer.analyze(s.label, s.sql))
  }
  if (c.existing !== undefined) {
    // The earlier run: its DDL creates the dimension the way it was then.
    const before = planDimensionLayout(c.table, BATCH, c.existing, undefined)
    const earlier = renderMergeScript(d, request(c.table, before, objects, stage))
    await run(earlier.ddl)
  }
  const existing = c.existing === undefined ? undefined : layoutColumns(c.table, c.existing)
  const layout = planDimensionLayout(c.table, BATCH, STAGED, existing)
  const script = renderMergeScript(d, request(c.table, layout, objects, stage))
  await run(script.ddl)
  await run(script.merge)
  await run(script.after)
  return { verdicts, syntax: await analyzer.parseScript(script.text) }
}

function request(
  table: TableSpec,
  layout: ReturnType<typeof planDimensionLayout>,
  objects: ReturnType<typeof dimensionObjects>,
  stage: { schema: string; name: string },
) {
  return {
    table,
    layout,
    objects,
    stage,
    batchId: BATCH,
    extractedAt: '2024-03-10T14:30:00.000Z',
    appliedAt: '2024-03-10T14:31:02.123456Z',
    mode: table.extract.mode,
    allowMassDelete: false,
  }
}

/** The columns a dimension created from `staged` has (stored columns + metadata), as describeTable reports them. */
function layoutColumns(table: TableSpec, staged: readonly StagedColumn[]) {
  const layout = planDimensionLayout(table, BATCH, staged, undefined)
  const n = table.columns
  return [
    ...layout.stored,
    ...[n.surrogateKey, n.validFrom, n.validTo, n.isCurrent, n.isDeleted, n.rowHash, n.batchId].map(
      (name) => ({
        name,
        type: 'VARCHAR',
      }),
    ),
  ]
}

describe('every BigQuery statement of the merge passes the GoogleSQL analyzer (ZetaSQL)', () => {
  const all = cases()

  it('covers the matrix: both key shapes, every delete policy, both open ends, every preset, snapshot, change-time and change feeds, schema evolution', () => {
    expect(all.length).toBeGreaterThanOrEqual(60)
    expect(all.filter((c) => c.table.changes?.sequence !== undefined).length).toBeGreaterThanOrEqual(12)
    expect(new Set(all.map((c) => c.table.columns.validTo)).size).toBe(4)
    expect(all.some((c) => c.existing !== undefined)).toBe(true)
    expect(all.filter((c) => c.table.mode === 'mirror').length).toBe(SHAPES.length)
    expect(all.filter((c) => c.table.mode === 'append').length).toBe(4)
    expect(all.filter((c) => c.table.policies !== undefined).length).toBe(SHAPES.length)
    expect(all.filter((c) => c.table.partialUpdates !== undefined).length).toBe(SHAPES.length)
    expect(all.filter((c) => c.table.systemTime !== undefined).length).toBe(SHAPES.length)
  })

  it.each(all.map((c) => [c.title, c] as const))('%s', async (_title, c) => {
    const { verdicts, syntax } = await analyzeCase(c)
    const failed = verdicts.filter((v) => !v.ok).map((v) => `${v.label}: ${v.error}`)
    expect(failed).toEqual([])
    expect(verdicts.length).toBeGreaterThan(c.table.mode === 'append' ? 6 : 10)
    expect(syntax).toBeUndefined()
  })
})

describe('the same check rejects what BigQuery would reject', () => {
  const c: Case = { title: 'base', table: tableSpec({ deletes: 'invalidate' }) }

  async function prepared() {
    analyzer.reset()
    const objects = dimensionObjects(c.table, DATASET)
    const stage = { schema: DATASET, name: 'stage' }
    analyzer.addTable(`${PROJECT}.${DATASET}.stage`, [
      { name: 'customer_id', type: 'INT64' },
      { name: 'name', type: 'STRING' },
    ])
    const layout = planDimensionLayout(
      c.table,
      BATCH,
      [
        { name: 'customer_id', type: 'BIGINT' },
        { name: 'name', type: 'VARCHAR' },
      ],
      undefined,
    )
    const script = renderMergeScript(d, request(c.table, layout, objects, stage))
    for (const s of script.ddl) expect((await analyzer.analyze(s.label, s.sql)).ok).toBe(true)
    return script
  }

  it('a DuckDB-only function (md5 returning text, strftime) fails', async () => {
    await prepared()
    const verdict = await analyzer.analyze(
      'duckdb hash',
      `SELECT md5(CAST(customer_id AS STRING)) || strftime(CURRENT_TIMESTAMP(), '%Y') FROM \`${PROJECT}\`.\`${DATASET}\`.\`stage\``,
    )
    expect(verdict.ok).toBe(false)
    expect(verdict.error).toMatch(/strftime|md5|BYTES/i)
  })

  it('a misspelled column fails, naming it', async () => {
    await prepared()
    const verdict = await analyzer.analyze(
      'typo',
      `SELECT custmer_id FROM \`${PROJECT}\`.\`${DATASET}\`.\`stage\``,
    )
    expect(verdict).toMatchObject({ ok: false })
    expect(verdict.error).toContain('custmer_id')
  })

  it('DuckDB syntax (a :: cast, double-quoted identifiers as table names) fails', async () => {
    await prepared()
    expect((await analyzer.analyze('cast', `SELECT 1::INT64`)).ok).toBe(false)
    expect((await analyzer.analyze('quotes', `SELECT * FROM "${DATASET}"."stage"`)).ok).toBe(false)
  })

  it('the DuckDB rendering of the same merge statement fails', async () => {
    const script = await prepared()
    const insert = script.merge.find((s) => s.label === 'record batch as applied')!
    const duckish = insert.sql.replaceAll('`', '"').replace(/TIMESTAMP '/g, "TIMESTAMPTZ '")
    expect((await analyzer.analyze(insert.label, duckish)).ok).toBe(false)
  })

  it('a broken script (unbalanced BEGIN) fails the script parse', async () => {
    const script = await prepared()
    expect(await analyzer.parseScript(script.text)).toBeUndefined()
    expect(await analyzer.parseScript(script.text.replace('END;\n', ''))).toMatch(/Syntax error/i)
  })
})
