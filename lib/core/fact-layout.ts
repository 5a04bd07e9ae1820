import type { StagedColumn } from './batch.ts'
import type { DimensionColumn } from './dimension-layout.ts'
import { presetColumnList, RESERVED_PREFIX } from './dimension-layout.ts'
import { BatchRejectedError } from './errors.ts'
import type { FactReference, FactSpec } from './fact-spec.ts'
import { inferredColumnName } from './inferred-member.ts'
import { metadataColumnList } from './metadata-columns.ts'
import { isPointInTimeType, typeFamily } from './staged-types.ts'
import type { TableSpec } from './table-spec.ts'

/** Column of every fact table recording the batch that loaded the fact. */
export const FACT_BATCH_COLUMN = 'dimsync_batch_id'

/** One reference with the dimension it points at, as the warehouse holds it now. */
export interface ResolvedFactReference {
  readonly reference: FactReference
  readonly dimension: TableSpec
  /** The dimension's natural key columns with their stored types. */
  readonly dimensionKey: readonly DimensionColumn[]
  /** The dimension's other data columns (not key, not metadata): what the views show, prefixed. */
  readonly attributes: readonly DimensionColumn[]
  /**
   * The dimension's inferred-member flag column, when the reference infers members and the dimension has the
   * column (load-fact-batch.ts adds it first): facts whose key the dimension never held get a placeholder.
   */
  readonly inferredFlag?: string
}

/** How a staged fact batch maps onto the fact table. */
export interface FactLayout {
  /** Columns copied from the batch, in table order (grain, event time, kept natural keys, measures). */
  readonly copied: readonly DimensionColumn[]
  readonly eventTime: DimensionColumn
  readonly references: readonly ResolvedFactReference[]
  /** True when the fact table does not exist yet. */
  readonly createTable: boolean
  /**
   * A change feed's order column (the sequence, else the cursor of a database feed), whose value of each fact's
   * last loaded change is kept in the change log (FactObjects.changes); undefined when changes have no order.
   */
  readonly order?: StagedColumn
}

/**
 * Checks a staged fact batch against its fact spec, the referenced dimensions and the fact table (undefined when
 * it does not exist yet), and says what is stored. Throws BatchRejectedError naming the fact, the reference and
 * the column: a configured column missing from the batch, an event time that is not a point in time, reference
 * columns whose types cannot match the dimension's key, a dimension not loaded yet, a fact table created with
 * other columns.
 */
export function planFactLayout(
  fact: FactSpec,
  batchId: string,
  staged: readonly StagedColumn[],
  dimensions: readonly {
    readonly table: TableSpec
    readonly columns: readonly DimensionColumn[] | undefined
  }[],
  existing: readonly DimensionColumn[] | undefined,
): FactLayout {
  const reject = (message: string): never => {
    throw new BatchRejectedError(fact.name, batchId, `fact ${fact.name}: ${message}; nothing was written`)
  }
  const byName = new Map(staged.map((c) => [c.name, c]))
  const need = (name: string, role: string): StagedColumn =>
    byName.get(name) ??
    reject(`${role} column "${name}" is not in the source (source columns: ${[...byName.keys()].join(', ')})`)
  for (const c of staged) {
    if (c.name.startsWith(RESERVED_PREFIX) || c.name === FACT_BATCH_COLUMN)
      reject(
        `source column "${c.name}" uses a name dimsync reserves (${RESERVED_PREFIX}…, ${FACT_BATCH_COLUMN})`,
      )
  }

  const eventTime = need(fact.eventTime, 'event time')
  let order: StagedColumn | undefined
  if (fact.changes !== undefined) {
    need(fact.changes.operation.column, 'operation')
    if (fact.changes.sequence !== undefined) order = need(fact.changes.sequence, 'sequence')
    else if (fact.extract.mode === 'incremental') order = need(fact.extract.cursor, 'cursor')
  }
  const eventTimeProblem = eventTimeTypeProblem(eventTime)
  if (eventTimeProblem !== undefined) reject(eventTimeProblem)

  const references = fact.references.map((reference, i): ResolvedFactReference => {
    const found = dimensions[i]
    const where = `reference to ${reference.dimension}`
    if (found === undefined || found.table.name !== reference.dimension)
      throw new Error(`fact ${fact.name}: dimension of reference ${i} not given`)
    const { table, columns } = found
    if (columns === undefined)
      return reject(
        `${where}: dimension ${table.target} does not exist yet; load the dimension before its facts`,
      )
    const byColumn = new Map(columns.map((c) => [c.name, c]))
    const dimensionKey = table.key.map(
      (k) => byColumn.get(k) ?? reject(`${where}: dimension ${table.target} has no key column "${k}"`),
    )
    reference.key.forEach((name, k) => {
      const problem = referenceKeyTypeProblem(reference, need(name, `${where} key`), dimensionKey[k]!, table)
      if (problem !== undefined) reject(problem)
    })
    return { reference, dimension: table, dimensionKey, ...dimensionColumnsOf(reference, table, columns) }
  })

  const names = [
    ...fact.grain.map((g) => need(g, 'grain')),
    eventTime,
    ...fact.references.flatMap((r) => (r.keepNaturalKey ? r.key.map((k) => need(k, 'reference key')) : [])),
    ...fact.measures.map((m) => need(m, 'measure')),
  ]
  const copied = names.filter((c, i) => names.findIndex((o) => o.name === c.name) === i)
  const copiedNames = new Set(copied.map((c) => c.name))
  for (const r of fact.references) {
    if (copiedNames.has(r.surrogateKeyColumn))
      reject(
        `the surrogate key column "${r.surrogateKeyColumn}" of the reference to ${r.dimension} is also a source ` +
          'column; name it with `as` or `surrogate_key`',
      )
  }

  if (existing !== undefined) {
    const have = new Map(existing.map((c) => [c.name, c]))
    const wanted = [
      ...copied,
      ...fact.references.map((r) => ({ name: r.surrogateKeyColumn, type: 'BIGINT' })),
      { name: FACT_BATCH_COLUMN, type: 'VARCHAR' },
    ]
    for (const c of wanted) {
      const stored = have.get(c.name)
      if (stored === undefined)
        reject(
          `fact table ${fact.target} has no column "${c.name}"; was it created with another configuration?`,
        )
      else if (typeFamily(stored.type).kind !== typeFamily(c.type).kind)
        reject(`column "${c.name}" changed type from ${stored.type} (fact table ${fact.target}) to ${c.type}`)
    }
  }
  return Object.freeze({
    copied,
    eventTime,
    references,
    createTable: existing === undefined,
    ...(order !== undefined ? { order } : {}),
  })
}

/** Why a fact's event time column cannot be loaded: not a timestamp or a date (a text, a number). */
export function eventTimeTypeProblem(eventTime: StagedColumn): string | undefined {
  if (isPointInTimeType(eventTime.type)) return undefined
  return (
    `event time column "${eventTime.name}" has type ${eventTime.type}; it must be a timestamp or a date; ` +
    'cast it in the source'
  )
}

/**
 * Why a reference's key column cannot be matched to the dimension's key column: their types are of different
 * families (text against a number), or of one no equality is defined on.
 */
export function referenceKeyTypeProblem(
  reference: FactReference,
  column: StagedColumn,
  dimensionColumn: DimensionColumn,
  dimension: TableSpec,
): string | undefined {
  const [ours, theirs] = [typeFamily(column.type).kind, typeFamily(dimensionColumn.type).kind]
  if (ours === theirs && ours !== 'other') return undefined
  return (
    `reference to ${reference.dimension}: column "${column.name}" (${column.type}) cannot match key column ` +
    `"${dimensionColumn.name}" (${dimensionColumn.type}) of ${dimension.target}; cast it in the source`
  )
}

/**
 * The fact's references with the dimensions as the warehouse holds them (their columns from `describeTable`),
 * for work on stored facts (re-pointing). Throws naming the fact when a dimension does not exist.
 */
export function resolveFactReferences(
  fact: FactSpec,
  dimensions: readonly {
    readonly table: TableSpec
    readonly columns: readonly DimensionColumn[] | undefined
  }[],
): ResolvedFactReference[] {
  return fact.references.map((reference, i) => {
    const found = dimensions[i]
    if (found?.columns === undefined)
      throw new Error(`fact ${fact.name}: dimension ${reference.dimension} does not exist in the warehouse`)
    const { table, columns } = found
    const byColumn = new Map(columns.map((c) => [c.name, c]))
    const dimensionKey = table.key.map((k) => {
      const column = byColumn.get(k)
      if (column === undefined) throw new Error(`fact ${fact.name}: ${table.target} has no key column "${k}"`)
      return column
    })
    return { reference, dimension: table, dimensionKey, ...dimensionColumnsOf(reference, table, columns) }
  })
}

/**
 * The dimension's attributes (not key, not metadata, not the inferred-member flag) and, for a reference that
 * infers members, the flag column when the dimension has it.
 */
function dimensionColumnsOf(
  reference: FactReference,
  table: TableSpec,
  columns: readonly DimensionColumn[],
): { attributes: readonly DimensionColumn[]; inferredFlag?: string } {
  const flag = inferredColumnName(table.columns)
  const metadata = new Set([
    ...metadataColumnList(table.columns).map((c) => c.name),
    ...presetColumnList(table).map((c) => c.name),
    flag,
  ])
  const keyNames = new Set(table.key)
  const attributes = columns.filter((c) => !metadata.has(c.name) && !keyNames.has(c.name))
  const hasFlag = columns.some((c) => c.name === flag)
  return { attributes, ...(reference.inferred && hasFlag ? { inferredFlag: flag } : {}) }
}
