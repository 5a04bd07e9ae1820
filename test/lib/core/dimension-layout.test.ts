import { describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import { planDimensionLayout, type DimensionColumn } from '../../../lib/core/dimension-layout.ts'
import { BatchRejectedError, MassDeleteRefusedError } from '../../../lib/core/errors.ts'
import { metadataColumnList } from '../../../lib/core/metadata-columns.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { DIMSYNC_COLUMNS, tableSpec } from '../../support/table-spec-builder.ts'

const STAGED: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'updated_at', type: 'TIMESTAMP' },
]
const METADATA: DimensionColumn[] = [...metadataColumnList(DIMSYNC_COLUMNS)]
const EXISTING: DimensionColumn[] = [...STAGED.filter((c) => c.name !== 'updated_at'), ...METADATA]
const FEED: Partial<TableSpec> = {
  validFrom: { kind: 'column', column: 'updated_at' },
  changes: { operation: { column: 'op', insert: ['I'], update: ['U'], delete: ['D'] }, sequence: 'seq' },
}
const FEED_COLUMNS = [...STAGED, { name: 'op', type: 'VARCHAR' }, { name: 'seq', type: 'BIGINT' }]

function refusal(
  overrides: Partial<TableSpec>,
  staged: readonly StagedColumn[] = STAGED,
  existing?: readonly DimensionColumn[],
): BatchRejectedError {
  try {
    planDimensionLayout(tableSpec(overrides), 'b0007', staged, existing)
  } catch (error) {
    expect(error).toBeInstanceOf(BatchRejectedError)
    expect(error).not.toBeInstanceOf(MassDeleteRefusedError)
    expect(error).toMatchObject({ table: 'customers', batchId: 'b0007' })
    return error as BatchRejectedError
  }
  throw new Error('planDimensionLayout accepted the batch')
}

const SOURCE_LIST = '(source columns: customer_id, name, region, updated_at)'

describe('planDimensionLayout refuses a batch it cannot merge, naming the table and the column', () => {
  it.each<[string, Partial<TableSpec>, string]>([
    [
      'a key column',
      { key: ['customer_id', 'tenant'] },
      `key column "tenant" is not in the source ${SOURCE_LIST}`,
    ],
    [
      'the soft delete column',
      { softDeleteColumn: 'is_gone' },
      `soft delete column "is_gone" is not in the source ${SOURCE_LIST}`,
    ],
    [
      'the valid_from column',
      { validFrom: { kind: 'column', column: 'changed_at' } },
      `valid_from column "changed_at" is not in the source ${SOURCE_LIST}`,
    ],
    [
      'the cursor column',
      { extract: { mode: 'incremental', cursor: 'modified', lookbackMinutes: 0 } },
      `cursor column "modified" is not in the source ${SOURCE_LIST}`,
    ],
    [
      'the operation column',
      {
        validFrom: { kind: 'column', column: 'updated_at' },
        changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } },
      },
      `operation column "Op" is not in the source ${SOURCE_LIST}`,
    ],
    [
      'the sequence column',
      {
        validFrom: { kind: 'column', column: 'updated_at' },
        changes: {
          operation: { column: 'name', insert: ['I'], update: ['U'], delete: ['D'] },
          sequence: 'lsn',
        },
      },
      `sequence column "lsn" is not in the source ${SOURCE_LIST}`,
    ],
    [
      'a tracked column',
      { tracked: { kind: 'list', columns: ['region', 'segment'] } },
      `tracked column "segment" is not in the source ${SOURCE_LIST}`,
    ],
    [
      'an untracked column',
      { tracked: { kind: 'all_except', columns: ['email'] } },
      `untracked column "email" is not in the source ${SOURCE_LIST}`,
    ],
  ])('%s missing from the source', (_what, overrides, message) => {
    expect(refusal(overrides).message).toBe(`table customers: ${message}`)
  })

  it.each<[string, Partial<TableSpec>, string]>([
    ['a key', { tracked: { kind: 'list', columns: ['customer_id'] } }, 'customer_id'],
    ['an excluded column', { exclude: ['name'], tracked: { kind: 'list', columns: ['name'] } }, 'name'],
    [
      'the soft delete column',
      { softDeleteColumn: 'region', tracked: { kind: 'list', columns: ['region'] } },
      'region',
    ],
    [
      'the valid_from column',
      {
        validFrom: { kind: 'column', column: 'updated_at' },
        tracked: { kind: 'list', columns: ['updated_at'] },
      },
      'updated_at',
    ],
    ['the operation column', { ...FEED, tracked: { kind: 'list', columns: ['op'] } }, 'op'],
    ['the sequence column', { ...FEED, tracked: { kind: 'list', columns: ['seq'] } }, 'seq'],
  ])('a tracked column that is %s', (_what, overrides, column) => {
    expect(refusal(overrides, FEED_COLUMNS).message).toBe(
      `table customers: column "${column}" cannot be tracked: it is a key, excluded, the soft delete, the valid_from, the operation or the sequence column`,
    )
  })

  it('a source column with the reserved prefix', () => {
    expect(refusal({}, [...STAGED, { name: '__dimsync_row', type: 'BIGINT' }]).message).toBe(
      'table customers: source column "__dimsync_row" uses the reserved prefix __dimsync_',
    )
  })

  it('a source column named like a metadata column', () => {
    expect(refusal({}, [...STAGED, { name: 'valid_from', type: 'TIMESTAMP' }]).message).toBe(
      'table customers: source column "valid_from" has the name of a metadata column; rename it or choose other column names',
    )
  })

  it('a dimension created with other metadata column names', () => {
    const existing = EXISTING.filter((c) => c.name !== DIMSYNC_COLUMNS.isDeleted)
    expect(refusal({}, STAGED, existing).message).toBe(
      `table customers: dimension dim_customer has no metadata column "${DIMSYNC_COLUMNS.isDeleted}"; was it created with other column names?`,
    )
  })

  it('a stored column whose type changed', () => {
    const staged = STAGED.map((c) => (c.name === 'region' ? { ...c, type: 'INTEGER' } : c))
    expect(refusal({}, staged, EXISTING).message).toBe(
      'table customers: column "region" changed type from VARCHAR (dimension dim_customer) to INTEGER (source); ' +
        'nothing was written. Either give the new type a new column name in the source (the dimension keeps the old ' +
        'column), or rewrite the column in the dimension: dimsync evolve --table customers --column region',
    )
  })
})

describe('planDimensionLayout accepts', () => {
  const names = (columns: readonly DimensionColumn[]) => columns.map((c) => c.name)

  it('a dimension column that vanished from the source, as a removed column (kept, not stored from the source)', () => {
    const staged = STAGED.filter((c) => c.name !== 'name')
    const layout = planDimensionLayout(tableSpec(), 'b1', staged, EXISTING)
    expect(layout.removed).toEqual(EXISTING.filter((c) => c.name === 'name'))
    expect(names(layout.stored)).not.toContain('name')
    expect(names(layout.tracked)).not.toContain('name')
  })

  it('a batch without its excluded column (the extract drops it); one staged with it (older versions) leaves it out', () => {
    const table = tableSpec({ exclude: ['secret'] })
    const withoutIt = planDimensionLayout(table, 'b1', STAGED, undefined)
    const withIt = planDimensionLayout(
      table,
      'b1',
      [...STAGED, { name: 'secret', type: 'VARCHAR' }],
      undefined,
    )
    expect(names(withoutIt.stored)).toEqual(['customer_id', 'name', 'region', 'updated_at'])
    expect(names(withIt.stored)).toEqual(names(withoutIt.stored))
  })

  it('type names that differ only by alias or case (STRING is VARCHAR, int8 is BIGINT)', () => {
    const existing = EXISTING.map((c) =>
      c.name === 'customer_id' ? { ...c, type: 'int8' } : c.name === 'region' ? { ...c, type: 'STRING' } : c,
    )
    const layout = planDimensionLayout(tableSpec(), 'b1', STAGED.slice(0, 3), existing)
    expect(layout.addColumns).toEqual([])
    expect(layout.createDimension).toBe(false)
  })

  it('a new source column as a column to add; a new dimension as one to create', () => {
    const staged = [...STAGED.slice(0, 3), { name: 'segment', type: 'VARCHAR' }]
    expect(planDimensionLayout(tableSpec(), 'b1', staged, EXISTING).addColumns).toEqual([
      { name: 'segment', type: 'VARCHAR' },
    ])
    expect(planDimensionLayout(tableSpec(), 'b1', staged, undefined)).toMatchObject({
      createDimension: true,
      addColumns: [],
    })
  })

  it('bookkeeping columns are neither stored nor tracked; the cursor is type 1; untracked columns are type 1', () => {
    const layout = planDimensionLayout(
      tableSpec({
        extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
        tracked: { kind: 'all_except', columns: ['name'] },
      }),
      'b1',
      STAGED,
      undefined,
    )
    expect(names(layout.key)).toEqual(['customer_id'])
    expect(names(layout.tracked)).toEqual(['region'])
    expect(names(layout.type1)).toEqual(['name', 'updated_at'])
    expect(names(layout.stored)).toEqual(['customer_id', 'name', 'region', 'updated_at'])

    const feed = planDimensionLayout(
      tableSpec({ ...FEED, softDeleteColumn: 'name' }),
      'b1',
      FEED_COLUMNS,
      undefined,
    )
    expect(names(feed.stored)).toEqual(['customer_id', 'region'])
    expect([
      feed.operation?.name,
      feed.sequence?.name,
      feed.validFromColumn?.name,
      feed.softDelete?.name,
    ]).toEqual(['op', 'seq', 'updated_at', 'name'])
  })
})
