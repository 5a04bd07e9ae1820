import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { DimensionColumn } from '../core/dimension-layout.ts'
import { FACT_BATCH_COLUMN, type FactLayout, type ResolvedFactReference } from '../core/fact-layout.ts'
import type { FactSpec } from '../core/fact-spec.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { SqlDialect } from './dialect.ts'
import { dimensionObjects, SOURCE_TYPE_NOTE } from './render-ddl.ts'
import { assertSafeTypeText } from './safe-type.ts'
import { andKnownNow, liveCurrentVersion } from './version-predicates.ts'

/** The warehouse objects of one fact table; the batch ledger is the one dimensions use. */
export interface FactObjects {
  readonly table: TableRef
  readonly batches: TableRef
  /** Facts with the attributes of the version each one points at (true at the event). */
  readonly asWasView: TableRef
  /** Facts with the attributes of their key's current version. */
  readonly asIsView: TableRef
  /**
   * A change feed's log of the last change loaded per grain (its order value and whether it deleted the fact), so
   * that a change older than one already loaded changes nothing (FACT_CHANGE_COLUMNS).
   */
  readonly changes: TableRef
}

/** Columns of the change log besides the grain: the last loaded change's order, delete flag and batch. */
export const FACT_CHANGE_COLUMNS = Object.freeze({
  order: 'dimsync_change_order',
  deleted: 'dimsync_deleted',
  batchId: 'dimsync_batch_id',
})

export function factObjects(fact: FactSpec, schema: string): FactObjects {
  return Object.freeze({
    table: { schema, name: fact.target },
    batches: { schema, name: '_dimsync_batches' },
    asWasView: { schema, name: `${fact.target}_as_was` },
    asIsView: { schema, name: `${fact.target}_as_is` },
    changes: { schema, name: `${fact.target}_dimsync_changes` },
  })
}

/** CREATE TABLE IF NOT EXISTS of the fact table: copied columns, one surrogate key per reference, the batch id. */
export function renderFactTableDdl(
  d: SqlDialect,
  fact: FactSpec,
  layout: FactLayout,
  objects: FactObjects,
): CompiledStatement {
  const notNull = new Set([...fact.grain, fact.eventTime])
  const column = (c: DimensionColumn, required: boolean, meaning: string) => {
    assertSafeTypeText(fact.name, c.name, c.type)
    const type = d.columnType(c.type, { table: fact.name, column: c.name })
    const description = `${meaning}${SOURCE_TYPE_NOTE}${c.type}`
    return `${d.quoteIdentifier(c.name)} ${type}${required ? ' NOT NULL' : ''}${d.columnDescription(description)}`
  }
  const columns = [
    ...layout.copied.map((c) => column(c, notNull.has(c.name), '')),
    ...fact.references.map((r) =>
      column(
        { name: r.surrogateKeyColumn, type: 'BIGINT' },
        true,
        `dimsync: surrogate key of the version of ${r.dimension} valid at ${fact.eventTime} (${r.unknownMemberKey}: unknown)\n`,
      ),
    ),
    column({ name: FACT_BATCH_COLUMN, type: 'VARCHAR' }, true, 'dimsync: batch that loaded the fact\n'),
  ]
  const grain = layout.copied.filter((c) => fact.grain.includes(c.name))
  return {
    label: 'create fact table',
    sql:
      `CREATE TABLE IF NOT EXISTS ${d.table(objects.table)} (\n  ${columns.join(',\n  ')}\n)` +
      d.tableOptions('fact', {
        key: grain.map((c) => ({ name: c.name, type: c.type })),
        description: `dimsync: facts of ${fact.name}, keyed to the dimension versions true at ${fact.eventTime}`,
      }),
  }
}

/**
 * The two readings of the facts (type 7): `<target>_as_was` joins each fact to the version its surrogate key
 * points at (the dimension as it was at the event, or the unknown member), `<target>_as_is` to its key's current
 * version: by the stored natural key when the reference keeps it, else through the version it points at. Each
 * dimension's attributes are prefixed with the reference's alias (`customer_name`).
 */
export function renderFactViews(
  d: SqlDialect,
  fact: FactSpec,
  layout: FactLayout,
  objects: FactObjects,
  schema: string,
): CompiledStatement[] {
  const q = (name: string) => d.quoteIdentifier(name)
  const taken = new Set([
    ...layout.copied.map((c) => c.name),
    ...fact.references.map((r) => r.surrogateKeyColumn),
    FACT_BATCH_COLUMN,
  ])
  const projections = layout.references.map((r, i) => {
    const names = r.attributes.map((a) => `${r.reference.alias}_${a.name}`)
    for (const name of names) {
      if (taken.has(name))
        throw new Error(
          `fact ${fact.name}: the views would show two columns named "${name}"; give the reference to ` +
            `${r.reference.dimension} another alias (as:)`,
        )
      taken.add(name)
    }
    return r.attributes.map((a, k) => `r${i}.${q(a.name)} AS ${q(names[k]!)}`)
  })
  const select = (joins: string[]) =>
    `SELECT f.*${projections
      .flat()
      .map((p) => `,\n  ${p}`)
      .join('')}\nFROM ${d.table(objects.table)} f${joins.join('')}`
  const dim = (r: ResolvedFactReference) => d.table(dimensionObjects(r.dimension, schema).dimension)
  const sk = (r: ResolvedFactReference) => q(r.dimension.columns.surrogateKey)
  // A bitemporal dimension holds a version's superseded rows beside the row known now, all with its surrogate key.
  const knownNow = (r: ResolvedFactReference, alias: string) => andKnownNow(d, r.dimension, alias)
  const asWas = layout.references.map(
    (r, i) =>
      `\nLEFT JOIN ${dim(r)} r${i} ON r${i}.${sk(r)} = f.${q(r.reference.surrogateKeyColumn)}${knownNow(r, `r${i}`)}`,
  )
  const asIs = layout.references.map((r, i) => {
    const current = liveCurrentVersion(d, r.dimension, `r${i}`)
    if (r.reference.keepNaturalKey) {
      const on = r.dimensionKey.map((k, j) => `r${i}.${q(k.name)} = f.${q(r.reference.key[j]!)}`)
      return `\nLEFT JOIN ${dim(r)} r${i} ON ${on.join(' AND ')} AND ${current}`
    }
    const on = r.dimensionKey.map((k) => `r${i}.${q(k.name)} = v${i}.${q(k.name)}`)
    return (
      `\nLEFT JOIN ${dim(r)} v${i} ON v${i}.${sk(r)} = f.${q(r.reference.surrogateKeyColumn)}${knownNow(r, `v${i}`)}` +
      `\nLEFT JOIN ${dim(r)} r${i} ON ${on.join(' AND ')} AND ${current}`
    )
  })
  return [
    {
      label: 'create as-was view',
      sql: d.createView(
        objects.asWasView,
        select(asWas),
        `dimsync: facts of ${fact.name} with the dimension versions true at ${fact.eventTime}`,
      ),
    },
    {
      label: 'create as-is view',
      sql: d.createView(
        objects.asIsView,
        select(asIs),
        `dimsync: facts of ${fact.name} with the current versions of their dimensions`,
      ),
    },
  ]
}

/**
 * CREATE TABLE IF NOT EXISTS of a change feed's log (FactObjects.changes): one row per grain whose change was
 * loaded, with that change's order value; none when the feed's changes have no order.
 */
export function renderFactChangeLogDdl(
  d: SqlDialect,
  fact: FactSpec,
  layout: FactLayout,
  objects: FactObjects,
): CompiledStatement[] {
  const order = layout.order
  if (order === undefined) return []
  const column = (c: DimensionColumn, meaning: string) => {
    assertSafeTypeText(fact.name, c.name, c.type)
    const type = d.columnType(c.type, { table: fact.name, column: c.name })
    return `${d.quoteIdentifier(c.name)} ${type} NOT NULL${d.columnDescription(meaning)}`
  }
  const grain = layout.copied.filter((c) => fact.grain.includes(c.name))
  const columns = [
    ...grain.map((c) => column(c, '')),
    column(
      { name: FACT_CHANGE_COLUMNS.order, type: order.type },
      `dimsync: ${order.name} of the last change loaded`,
    ),
    `${d.quoteIdentifier(FACT_CHANGE_COLUMNS.deleted)} ${d.type('bool')} NOT NULL` +
      d.columnDescription('dimsync: the last change loaded deleted the fact'),
    `${d.quoteIdentifier(FACT_CHANGE_COLUMNS.batchId)} ${d.type('string')} NOT NULL` +
      d.columnDescription('dimsync: batch that loaded the change'),
  ]
  return [
    {
      label: 'create fact change log',
      sql:
        `CREATE TABLE IF NOT EXISTS ${d.table(objects.changes)} (\n  ${columns.join(',\n  ')}\n)` +
        d.tableOptions('fact', {
          key: grain.map((c) => ({ name: c.name, type: c.type })),
          description: `dimsync: the last change of each fact of ${fact.name} loaded, by ${order.name}`,
        }),
    },
  ]
}
