import { describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import type { CompiledScript } from '../../../lib/core/compiled-sql.ts'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { metadataColumnList } from '../../../lib/core/metadata-columns.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { MAX_QUERY_CHARACTERS } from '../../../lib/sql/bigquery/script-length.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/*
 * The widest table BigQuery holds: 10,000 columns, here named like real columns (20 characters). Its merge script is
 * over BigQuery's 1,024K-character query limit, and so were single statements of it (the first load's insert 1,101K,
 * a later batch's diff 1,402K, its type 1 overwrite 1,471K): the merge runs as several queries of one session, its
 * widest statements rendered in column groups, and every query and every statement must fit.
 */
const WIDTH = 10_000
const BATCH = '20240310T143000.000Z-3f9a1c'
const names = Array.from({ length: WIDTH - 1 }, (_, i) => `attribute_name_${String(i).padStart(5, '0')}`)

function mergeScript(table: TableSpec, later: boolean, width = WIDTH): CompiledScript {
  const columns: StagedColumn[] = [
    { name: 'customer_id', type: 'BIGINT' },
    ...names.slice(0, width - 1).map((name) => ({ name, type: 'VARCHAR' })),
  ]
  const first = planDimensionLayout(table, BATCH, columns, undefined)
  const layout = later
    ? planDimensionLayout(table, BATCH, columns, [...first.stored, ...metadataColumnList(table.columns)])
    : first
  return renderMergeScript(createBigQueryDialect({ project: 'acme-dw' }), {
    table,
    layout,
    objects: dimensionObjects(table, 'history'),
    stage: { schema: 'history', name: stagingTableName(table.target, BATCH) },
    batchId: BATCH,
    extractedAt: '2024-03-10T14:30:00.000Z',
    appliedAt: '2024-03-10T14:31:00.000Z',
    mode: 'full',
    allowMassDelete: false,
    fence: { token: 7, owner: 'run-7' },
  })
}

const statements = (script: CompiledScript) => [...script.ddl, ...script.merge, ...script.after]
const k = (n: number) => Math.ceil(n / 1000)

const shapes: [string, TableSpec][] = [
  ['all columns tracked', tableSpec({})],
  ['all columns type 1', tableSpec({ tracked: { kind: 'list', columns: [] } })],
  [
    'half the columns type 1',
    tableSpec({ tracked: { kind: 'all_except', columns: names.slice(0, names.length / 2) } }),
  ],
]

describe(`merge of a ${WIDTH.toLocaleString('en-US')}-column table on BigQuery`, () => {
  for (const [shape, table] of shapes) {
    for (const later of [false, true]) {
      it(`${shape}, ${later ? 'a later batch' : 'the first load'}: every statement and every session query fits the query limit`, () => {
        const script = mergeScript(table, later)
        const overLimit = statements(script)
          .filter((s) => s.sql.length + (s.onlyIf?.length ?? 0) > MAX_QUERY_CHARACTERS)
          .map((s) => [s.label, k(s.sql.length)])
        expect(overLimit).toEqual([])
        if (script.text.length <= MAX_QUERY_CHARACTERS) {
          // Only the first load of the all-type-1 table fits one query: it runs as one script job.
          expect(script.session).toBeUndefined()
          return
        }
        const session = script.session!
        const queries = [session.ledgerCheck, session.committed, ...session.jobs]
        expect(queries.filter((q) => q.length > MAX_QUERY_CHARACTERS).map((q) => k(q.length))).toEqual([])
        expect(session.jobs.length).toBeGreaterThan(1)
        // One transaction across the session's queries: begun once, committed once, in the last query, after the
        // fence check; nothing of the merge runs after the COMMIT but the clean-up and the counts.
        const merge = session.jobs.join('\n')
        expect(merge.match(/^BEGIN TRANSACTION;$/gm)).toHaveLength(1)
        expect(merge.match(/^COMMIT TRANSACTION;$/gm)).toHaveLength(1)
        const last = session.jobs.at(-1)!
        const commitAt = last.indexOf('\nCOMMIT TRANSACTION;')
        expect(last.lastIndexOf("'check the lease fence")).toBeLessThan(commitAt)
        expect(last.lastIndexOf("SET __dimsync_step = 'report counts'")).toBeGreaterThan(commitAt)
        // Every statement of the script is in the session's queries, in order.
        // (A split run's guard is evaluated under the label of its first statement: the same label twice.)
        const labels = [...merge.matchAll(/SET __dimsync_step = '([^']*)';/g)]
          .map((m) => m[1])
          .filter((label, i, all) => label !== all[i - 1])
        const expected = statements(script)
          .map((s) => s.label)
          .filter((l) => l !== 'create batch ledger')
        expect(labels).toEqual(expected)
      })
    }
  }

  it('a later batch’s widest statements run in column groups; the row hash is computed once, into a copy of the staged rows', () => {
    const script = mergeScript(shapes[2]![1], true)
    const labels = script.merge.map((s) => s.label)
    expect(labels).toContain('copy staged rows with their row hash')
    expect(labels.filter((l) => l.startsWith('overwrite type 1 columns (columns ')).length).toBeGreaterThan(1)
    const diff = script.merge.find((s) => s.label === 'diff snapshot against current versions')!
    expect(diff.sql).toContain('e.`__dimsync_row_hash`')
    expect(diff.sql).not.toContain('MD5')
  })

  it('a guarded run of statements too long for one query is split, its guard evaluated once, before the first', () => {
    const script = mergeScript(shapes[1]![1], true)
    const groups = script.merge.filter((s) => s.label.startsWith('overwrite type 1 columns (columns '))
    const merge = script.session!.jobs.join('\n')
    expect(merge.match(/SET __dimsync_guard = \(/g)).toHaveLength(1)
    expect(merge.match(/IF __dimsync_guard THEN/g)).toHaveLength(groups.length)
    expect(merge.indexOf('SET __dimsync_guard = (')).toBeLessThan(merge.indexOf('IF __dimsync_guard THEN'))
  })

  it('a table whose script fits one query renders as before and runs as one script job', () => {
    const script = mergeScript(tableSpec({}), true, 400)
    expect(script.session).toBeUndefined()
    expect(script.merge.map((s) => s.label)).not.toContain('copy staged rows with their row hash')
    expect(script.merge.find((s) => s.label === 'diff snapshot against current versions')!.sql).toContain(
      'TO_HEX(MD5(',
    )
  })
})
