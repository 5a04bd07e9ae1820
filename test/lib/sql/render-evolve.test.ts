import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { renderEvolveColumn, renderLossyValuesQuery } from '../../../lib/sql/render-evolve.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ZetaSqlAnalyzer } from '../../support/zetasql/zetasql-analyzer.ts'

const table = tableSpec({
  extract: { mode: 'incremental', cursor: 'changed_at', lookbackMinutes: 0 },
  validFrom: { kind: 'column', column: 'changed_at' },
})
const before = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
]
const after = before.map((c) => (c.name === 'region' ? { ...c, type: 'DOUBLE' } : c))
const bigQuery = createBigQueryDialect({ project: 'acme-dw' })

/** A partial-update table: its capture log keeps `raw_region`, which evolve rewrites too. */
const partial = { ...table, partialUpdates: { ignoreNulls: { kind: 'all' as const } } }

function render(d: typeof bigQuery, spec = table, rawColumn?: string) {
  const objects = dimensionObjects(spec, 'history')
  const request = { table: spec, objects, columns: ['region'], from: 'VARCHAR', to: 'DOUBLE', rawColumn }
  const tracked = planDimensionLayout(table, 'b1', after, undefined).tracked
  return {
    objects,
    lossy: renderLossyValuesQuery(d, request, 5),
    evolve: renderEvolveColumn(d, request, tracked),
  }
}

describe('dimsync evolve: the rewrite of a column', () => {
  it('DuckDB alters the column type with a cast; BigQuery goes through a new column', () => {
    const rewrite = (d: typeof bigQuery) =>
      render(d)
        .evolve.filter((s) => s.label.startsWith('evolve: rewrite'))
        .map((s) => s.sql)
    expect(rewrite(duckDbDialect)).toEqual([
      'ALTER TABLE "history"."dim_customer" ALTER COLUMN "region" TYPE DOUBLE USING CAST("region" AS DOUBLE)',
    ])
    expect(rewrite(bigQuery)).toEqual([
      'ALTER TABLE `acme-dw`.`history`.`dim_customer` ADD COLUMN IF NOT EXISTS `region__dimsync_evolve` FLOAT64',
      'UPDATE `acme-dw`.`history`.`dim_customer` SET `region__dimsync_evolve` = CAST(`region` AS FLOAT64) WHERE TRUE',
      'ALTER TABLE `acme-dw`.`history`.`dim_customer` DROP COLUMN IF EXISTS `region`',
      'ALTER TABLE `acme-dw`.`history`.`dim_customer` RENAME COLUMN `region__dimsync_evolve` TO `region`',
    ])
    expect(render(bigQuery).lossy).toContain('SAFE_CAST(SAFE_CAST(d.`region` AS FLOAT64) AS STRING)')
  })

  describe('every BigQuery statement passes the GoogleSQL analyzer (ZetaSQL)', () => {
    let analyzer: ZetaSqlAnalyzer
    beforeAll(async () => {
      analyzer = await ZetaSqlAnalyzer.start()
    })
    afterAll(async () => {
      await analyzer?.stop()
    })

    /** Creates the dimension (and its capture log) as a merge of `columns` would, in a fresh catalog. */
    async function created(columns: typeof before, spec = table) {
      analyzer.reset()
      const objects = dimensionObjects(spec, 'history')
      const stage = { schema: 'history', name: stagingTableName(table.target, 'b1') }
      const script = renderMergeScript(bigQuery, {
        table: spec,
        layout: planDimensionLayout(spec, 'b1', columns, undefined),
        objects,
        stage,
        batchId: 'b1',
        extractedAt: '2024-03-10T14:30:00Z',
        appliedAt: '2024-03-10T14:31:00Z',
        mode: 'incremental',
        allowMassDelete: false,
      })
      const verdicts = []
      for (const s of script.ddl) verdicts.push(await analyzer.analyze(s.label, s.sql))
      return verdicts
    }

    it('the loss check and the rewrite on the dimension as it was; the new hashes on the dimension as it is after', async () => {
      const { lossy, evolve } = render(bigQuery)
      const verdicts = await created(before)
      verdicts.push(await analyzer.analyze('lossy values', lossy))
      // The analyzer's catalog applies ADD COLUMN but not DROP COLUMN, so the rename is not checked after it.
      for (const s of evolve.filter(
        (x) => x.label.startsWith('evolve: rewrite') && !x.sql.includes('RENAME'),
      ))
        verdicts.push(await analyzer.analyze(s.label, s.sql))
      verdicts.push(...(await created(after)))
      for (const s of evolve.filter((x) => !x.label.startsWith('evolve: rewrite')))
        verdicts.push(await analyzer.analyze(s.label, s.sql))
      expect(verdicts.filter((v) => !v.ok).map((v) => `${v.label}: ${v.error}`)).toEqual([])
      expect(verdicts.length).toBeGreaterThan(8)
    })

    it("a partial-update table: the loss check reads the capture log's raw column, and the rewrite casts it", async () => {
      const { lossy, evolve } = render(bigQuery, partial, 'raw_region')
      const rewrites = evolve.filter((x) => x.label.startsWith('evolve: rewrite'))
      expect(rewrites.map((x) => x.label)).toContain(
        'evolve: rewrite raw_region of dim_customer_dimsync_captures as DOUBLE',
      )
      const verdicts = await created(before, partial)
      verdicts.push(await analyzer.analyze('lossy values', lossy))
      for (const s of rewrites.filter((x) => !x.sql.includes('RENAME')))
        verdicts.push(await analyzer.analyze(s.label, s.sql))
      expect(verdicts.filter((v) => !v.ok).map((v) => `${v.label}: ${v.error}`)).toEqual([])
    })
  })
})
