import { presetTableFields } from '../../../lib/config/table-options.ts'
import type { ColumnPreset } from '../../../lib/core/metadata-columns.ts'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import type { DeletePolicy, TableSpec } from '../../../lib/core/table-spec.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import type { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { tableSpec } from '../table-spec-builder.ts'

/**
 * The config matrix of merge scripts the ZetaSQL tests analyze (bigquery-zetasql.test.ts: every statement is
 * valid GoogleSQL; bigquery-partition-filters.test.ts: every read of the dimension is pruned to a partition).
 */

export const PROJECT = 'acme-dw'
export const DATASET = 'history'
export const BATCH = '20240310T143000.000Z-3f9a1c'
export const bigQuery = createBigQueryDialect({ project: PROJECT })

export const STAGED: StagedColumn[] = [
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

export interface MatrixCase {
  readonly title: string
  readonly table: TableSpec
  /** Columns the dimension already has (an earlier run), or undefined for the first run. */
  readonly existing?: readonly StagedColumn[]
}

const PRESETS: ColumnPreset[] = ['dimsync', 'dbt', 'fivetran', 'databricks']
const DELETES: DeletePolicy[] = ['ignore', 'invalidate', 'new_record']
export const SHAPES = [
  'snapshot',
  'change-time full',
  'change-time delta',
  'change feed',
  'sequenced change feed',
] as const
const DMS = { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] }

export function mergeConfigMatrix(): MatrixCase[] {
  const out: MatrixCase[] = []
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
            ...presetTableFields(preset),
            openEnd,
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

export function mergeRequest(
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
export function layoutColumns(table: TableSpec, staged: readonly StagedColumn[]) {
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
