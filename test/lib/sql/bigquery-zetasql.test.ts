import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import { bigQueryColumnType } from '../../../lib/sql/bigquery/bigquery-types.ts'
import type { CompiledStatement } from '../../../lib/sql/dialect.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ZetaSqlAnalyzer, type StatementVerdict } from '../../support/zetasql/zetasql-analyzer.ts'
import {
  BATCH,
  DATASET,
  PROJECT,
  SHAPES,
  STAGED,
  bigQuery,
  layoutColumns,
  mergeConfigMatrix,
  mergeRequest,
  type MatrixCase,
} from '../../support/zetasql/merge-config-matrix.ts'

let analyzer: ZetaSqlAnalyzer

beforeAll(async () => {
  analyzer = await ZetaSqlAnalyzer.start()
})
afterAll(async () => {
  await analyzer?.stop()
})

/** Renders the whole merge script of `c` and analyzes every statement in order, as BigQuery would run them. */
async function analyzeCase(
  c: MatrixCase,
): Promise<{ verdicts: StatementVerdict[]; syntax: string | undefined }> {
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
    const earlier = renderMergeScript(bigQuery, mergeRequest(c.table, before, objects, stage))
    await run(earlier.ddl)
  }
  const existing = c.existing === undefined ? undefined : layoutColumns(c.table, c.existing)
  const layout = planDimensionLayout(c.table, BATCH, STAGED, existing)
  const script = renderMergeScript(bigQuery, mergeRequest(c.table, layout, objects, stage))
  await run(script.ddl)
  await run(script.merge)
  await run(script.after)
  return { verdicts, syntax: await analyzer.parseScript(script.text) }
}

describe('every BigQuery statement of the merge passes the GoogleSQL analyzer (ZetaSQL)', () => {
  const all = mergeConfigMatrix()

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
  const c: MatrixCase = { title: 'base', table: tableSpec({ deletes: 'invalidate' }) }

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
    const script = renderMergeScript(bigQuery, mergeRequest(c.table, layout, objects, stage))
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
