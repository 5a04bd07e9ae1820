import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import { presetTableFields } from '../../../lib/config/table-options.ts'
import { presetColumnList, planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { planFactLayout } from '../../../lib/core/fact-layout.ts'
import type { FactSpec } from '../../../lib/core/fact-spec.ts'
import { PRESET_NAMES, metadataColumnList } from '../../../lib/core/metadata-columns.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { bigQueryColumnType } from '../../../lib/sql/bigquery/bigquery-types.ts'
import type { CompiledStatement } from '../../../lib/sql/dialect.ts'
import { dimensionObjects, renderDimensionDdl } from '../../../lib/sql/render-ddl.ts'
import { factObjects } from '../../../lib/sql/render-fact-ddl.ts'
import { renderFactScript } from '../../../lib/sql/render-fact-script.ts'
import { keyBucketsFor } from '../../../lib/sql/surrogate-keys.ts'
import { serialRowNumbers } from '../../support/zetasql/partition-pruning.ts'
import { stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import { inferredColumnName } from '../../../lib/core/inferred-member.ts'
import { renderInferredFlagColumn } from '../../../lib/sql/render-inferred-member.ts'
import { renderUnknownMember, renderUnknownMemberQuery } from '../../../lib/sql/render-unknown-member.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ZetaSqlAnalyzer } from '../../support/zetasql/zetasql-analyzer.ts'

const PROJECT = 'acme-dw'
const DATASET = 'history'
const BATCH = '20240310T143000.000Z-3f9a1c'
const d = createBigQueryDialect({ project: PROJECT })

const CUSTOMER: StagedColumn[] = [
  { name: 'tenant_id', type: 'VARCHAR' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'balance', type: 'DECIMAL(12,2)' },
  { name: 'signup', type: 'DATE' },
]
const EVENT_TIME_TYPES = ['TIMESTAMP WITH TIME ZONE', 'TIMESTAMP', 'DATE'] as const

interface Case {
  readonly title: string
  readonly dimension: TableSpec
  readonly fact: FactSpec
  readonly staged: readonly StagedColumn[]
}

/** Key shapes × event time types × presets and open ends × natural key kept or not × full or incremental. */
function cases(): Case[] {
  const out: Case[] = []
  let i = 0
  for (const key of [['customer_id'], ['tenant_id', 'customer_id']])
    for (const eventTimeType of EVENT_TIME_TYPES)
      for (const keepNaturalKey of [false, true]) {
        const preset = PRESET_NAMES[i % PRESET_NAMES.length]!
        const openEnd = i % 3 === 0 ? '9999-12-31T23:59:59.000Z' : null
        const full = i % 2 === 1
        const unknownMemberKey = i % 4 === 2 ? -1 : 0
        i++
        const dimension = tableSpec({ key, ...presetTableFields(preset), openEnd, deletes: 'new_record' })
        const factKey = key.map((k) => `order_${k}`)
        const fact: FactSpec = {
          name: 'orders',
          source: { type: 'file', path: 'o.csv', format: 'csv', csv: { delimiter: ',', header: true } },
          target: 'fact_orders',
          extract: full
            ? { mode: 'full' }
            : { mode: 'incremental', cursor: 'ordered_at', lookbackMinutes: 0 },
          grain: ['order_id', 'line_no'],
          eventTime: 'ordered_at',
          measures: ['amount', 'quantity'],
          references: [
            {
              dimension: 'customers',
              key: factKey,
              surrogateKeyColumn: 'customer_sk',
              alias: 'customer',
              unknownMemberKey,
              keepNaturalKey,
              inferred: keepNaturalKey,
            },
            {
              dimension: 'customers',
              key: factKey.map((k) => `ship_${k}`),
              surrogateKeyColumn: 'ship_to_sk',
              alias: 'ship_to',
              unknownMemberKey,
              keepNaturalKey: !keepNaturalKey,
              inferred: false,
            },
          ],
        }
        const keyTypes = (prefix: string) =>
          key.map((k) => ({ name: `${prefix}${k}`, type: CUSTOMER.find((c) => c.name === k)!.type }))
        const staged: StagedColumn[] = [
          { name: 'order_id', type: 'BIGINT' },
          { name: 'line_no', type: 'INTEGER' },
          ...keyTypes('order_'),
          ...keyTypes('ship_order_'),
          { name: 'ordered_at', type: eventTimeType },
          { name: 'amount', type: 'DECIMAL(12,2)' },
          { name: 'quantity', type: 'DOUBLE' },
        ]
        const title =
          `${key.join('+')} key, event time ${eventTimeType}, natural key ${keepNaturalKey ? 'kept' : 'not kept'}, ` +
          `${preset} columns, open end ${openEnd ?? 'NULL'}, ${full ? 'full' : 'incremental'}, unknown ${unknownMemberKey}`
        out.push({ title, dimension, fact, staged })
      }
  return out
}

let analyzer: ZetaSqlAnalyzer
beforeAll(async () => {
  analyzer = await ZetaSqlAnalyzer.start()
})
afterAll(async () => {
  await analyzer?.stop()
})

describe('every BigQuery statement of a fact load passes the GoogleSQL analyzer (ZetaSQL)', () => {
  const all = cases()

  it('covers the matrix: both key shapes, every event time type, natural keys kept or not, every preset', () => {
    expect(all.length).toBe(12)
    expect(new Set(all.map((c) => c.dimension.columns.surrogateKey)).size).toBe(4)
    expect(new Set(all.map((c) => c.fact.extract.mode)).size).toBe(2)
  })

  it.each(all.map((c) => [c.title, c] as const))('%s', async (_title, c) => {
    analyzer.reset()
    const verdicts: { label: string; ok: boolean; error?: string }[] = []
    // No statement numbers rows with one ROW_NUMBER() over the whole batch (one worker).
    const serial: string[] = []
    const run = async (statements: readonly CompiledStatement[]) => {
      for (const s of statements) {
        const verdict = await analyzer.analyze(s.label, s.sql)
        verdicts.push(verdict)
        if (verdict.ok && serialRowNumbers(verdict.resolved) > 0) serial.push(s.label)
      }
    }
    // The dimension, as its first merge creates it.
    const dimensionLayout = planDimensionLayout(c.dimension, BATCH, CUSTOMER, undefined)
    const dimObjects = dimensionObjects(c.dimension, DATASET)
    await run(renderDimensionDdl(d, c.dimension, dimensionLayout, dimObjects))
    const flag = inferredColumnName(c.dimension.columns)
    const inferring = c.fact.references.some((r) => r.inferred)
    const dimensionColumns = [
      ...dimensionLayout.stored,
      ...metadataColumnList(c.dimension.columns),
      ...presetColumnList(c.dimension),
      ...(inferring ? [{ name: flag, type: 'BOOLEAN' }] : []),
    ]
    if (inferring) {
      const { ddl, fill } = renderInferredFlagColumn(d, c.dimension, dimObjects.dimension, flag)
      await run([ddl, fill])
    }
    const stage = { schema: DATASET, name: stagingTableName(c.fact.target, BATCH) }
    analyzer.addTable(
      `${PROJECT}.${DATASET}.${stage.name}`,
      c.staged.map((s) => ({
        name: s.name,
        type: bigQueryColumnType(s.type, { table: 't', column: s.name }),
      })),
    )
    verdicts.push(
      await analyzer.analyze(
        'unknown member present?',
        renderUnknownMemberQuery(
          d,
          c.dimension,
          dimObjects.dimension,
          c.fact.references[0]!.unknownMemberKey,
        ),
      ),
    )
    const member = renderUnknownMember(
      d,
      c.dimension,
      dimObjects.dimension,
      dimensionColumns,
      c.fact.references[0]!.unknownMemberKey,
    )
    await run([...member.ddl, member.insert])
    const layout = planFactLayout(
      c.fact,
      BATCH,
      c.staged,
      c.fact.references.map(() => ({ table: c.dimension, columns: dimensionColumns })),
      undefined,
    )
    const script = renderFactScript(d, {
      fact: c.fact,
      layout,
      objects: factObjects(c.fact, DATASET),
      schema: DATASET,
      batchId: BATCH,
      extractedAt: '2024-03-10T14:30:00.000Z',
      appliedAt: '2024-03-10T14:31:02.123456Z',
      mode: c.fact.extract.mode === 'full' ? 'full' : 'incremental',
      stage,
      // A batch of 100M facts: inferred members are numbered per bucket.
      keyBuckets: keyBucketsFor(100_000_000, d.capabilities.rowsPerKeyBucket),
    })
    await run(script.ddl)
    await run(script.merge)
    await run(script.after)
    expect(verdicts.filter((v) => !v.ok).map((v) => `${v.label}: ${v.error}`)).toEqual([])
    expect(verdicts.length).toBeGreaterThan(12)
    expect(serial).toEqual([])
    expect(await analyzer.parseScript(script.text)).toBeUndefined()
  })
})
