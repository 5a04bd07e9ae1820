import type { CheckKind } from '../core/check-failure.ts'
import type { CompiledStatement } from '../core/compiled-sql.ts'
import type { ResolvedFactReference } from '../core/fact-layout.ts'
import type { FactSpec } from '../core/fact-spec.ts'
import { INFERRED_MEMBER } from '../core/inferred-member.ts'
import { typeFamily } from '../core/staged-types.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { TableSpec } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'
import { dbtIdAssignments } from './dbt-ids.ts'
import { presetColumnNames, presetColumnValues } from './preset-columns.ts'
import { raiseCheck } from './raise-check.ts'
import { dimensionObjects, SOURCE_TYPE_NOTE } from './render-ddl.ts'
import { UNKNOWN_MEMBER } from './render-unknown-member.ts'
import {
  advanceRecordedHighestKey,
  newSurrogateKey,
  seedRecordedHighestKey,
  type SurrogateKeyRecord,
} from './surrogate-keys.ts'
import { currentVersion } from './version-predicates.ts'

/**
 * Adds the inferred-member flag column to a dimension (DDL, before the load; idempotent) and marks every row it
 * already holds as not inferred. Versions the merge writes later get the column's default, FALSE (where the
 * warehouse applies column defaults; read the flag as `IS TRUE`).
 */
export function renderInferredFlagColumn(
  d: SqlDialect,
  dimension: TableSpec,
  ref: TableRef,
  flag: string,
): { readonly ddl: CompiledStatement; readonly fill: CompiledStatement } {
  const q = d.quoteIdentifier(flag)
  const description = d.columnDescription(
    `dimsync: true for a placeholder version a fact created for a key the dimension did not hold yet; its first real extract completes it and clears the flag\n${SOURCE_TYPE_NOTE}BOOLEAN`,
  )
  return {
    ddl: {
      label: `add the inferred-member flag to ${dimension.target}`,
      sql: `ALTER TABLE ${d.table(ref)} ADD COLUMN IF NOT EXISTS ${q} ${d.columnType('BOOLEAN', { table: dimension.name, column: flag })} DEFAULT FALSE${description}`,
    },
    fill: {
      label: `mark the versions of ${dimension.target} as not inferred`,
      sql: `UPDATE ${d.table(ref)} SET ${q} = FALSE WHERE ${q} IS NULL`,
    },
  }
}

export interface InferredMembersPlan {
  readonly fact: FactSpec
  readonly reference: ResolvedFactReference & { readonly inferredFlag: string }
  readonly schema: string
  readonly batchId: string
  /** The staged facts (quoted table name). */
  readonly stage: string
  /** Buckets new surrogate keys are numbered in (surrogate-keys.ts); default 1. */
  readonly keyBuckets?: number
}

/**
 * The inferred members one reference of a fact batch needs, inside the load's transaction and before the facts
 * are inserted: facts carrying only part of the key are refused (a placeholder is a version of the whole key);
 * every natural key of the batch the dimension has never held (no version, nothing in its capture log) gets a
 * placeholder version, open from the
 * earliest event time of its facts (current, not deleted, flagged, text attributes `Unknown`, surrogate keys
 * numbered after the highest given out); and a placeholder not completed yet starts earlier when a fact of this
 * batch is older than its start (while no merge has closed it or logged its key). The facts' join then finds the placeholder as the version true at their time.
 * Keys the dimension holds (even with no version at the fact's time) are left alone: those facts point at the
 * unknown member.
 */
export function renderInferredMembers(d: SqlDialect, plan: InferredMembersPlan): CompiledStatement[] {
  const { fact, reference: r } = plan
  const q = (name: string) => d.quoteIdentifier(name)
  const str = (value: string) => d.stringLiteral(value)
  const table = r.dimension
  const n = table.columns
  const objects = dimensionObjects(table, plan.schema)
  const dim = d.table(objects.dimension)
  const flag = q(r.inferredFlag)
  const where = `fact ${fact.name}: batch ${plan.batchId}: reference to ${table.name}`
  const factKey = r.reference.key.map((k) => `s.${q(k)}`)
  const raise = (kind: CheckKind, message: string) =>
    raiseCheck(d, { kind, table: fact.name, batchId: plan.batchId }, message)

  const out: CompiledStatement[] = []
  /** Refuses the batch when some facts meet `condition`: "<where> infers members, but N facts <what>". */
  const refuseFacts = (label: string, kind: CheckKind, condition: string, what: string) =>
    out.push({
      label: `${label} of the reference to ${table.name}`,
      sql: `SELECT ${raise(
        kind,
        `${str(`${where} infers members, but `)} || ${d.castToString('COUNT(*)')} || ${str(` facts ${what}`)}`,
      )}\nFROM ${plan.stage} s WHERE ${condition} HAVING COUNT(*) > 0`,
    })
  if (factKey.length > 1)
    refuseFacts(
      'check partial keys',
      'null-key',
      `(${factKey.map((k) => `${k} IS NULL`).join(' OR ')}) AND NOT (${factKey.map((k) => `${k} IS NULL`).join(' AND ')})`,
      `carry only part of its key (${r.reference.key.join(', ')}: some NULL, some not); ` +
        'an inferred member is a version of the whole key; nothing was written',
    )
  // As a dimension's merge refuses NaN keys (render-merge.ts): on BigQuery a NaN placeholder would never be found
  // again, and every load would add another current one. (The fact's key column has the dimension key's family.)
  const nanKeys = r.reference.key.filter((_, j) => typeFamily(r.dimensionKey[j]!.type).kind === 'float')
  if (nanKeys.length > 0)
    refuseFacts(
      'check NaN keys',
      'nan-key',
      nanKeys.map((k) => d.isNan(`s.${q(k)}`)).join(' OR '),
      `carry a NaN key (${nanKeys.join(', ')}): NaN equals no value on BigQuery, so its member could never be ` +
        'found again; nothing was written',
    )

  const eventTime = d.castToTimestamp(`s.${q(fact.eventTime)}`)
  const keyNames = r.dimensionKey.map((k) => k.name)
  const keyEq = (alias: string) => keyNames.map((k) => `${alias}.${q(k)} = m.${q(k)}`).join(' AND ')
  const missing =
    `SELECT ${factKey.map((k, j) => `${k} AS ${q(keyNames[j]!)}`).join(', ')}, MIN(${eventTime}) AS t\n` +
    `  FROM ${plan.stage} s\n  WHERE ${factKey.map((k) => `${k} IS NOT NULL`).join(' AND ')}\n` +
    `  GROUP BY ${factKey.join(', ')}`
  // Numbered by the dimension's one rule for new keys (surrogate-keys.ts), as its merges number theirs.
  const keys: SurrogateKeyRecord = {
    dialect: d,
    record: objects.keys,
    surrogateKey: n.surrogateKey,
    givenOutIn: [objects.dimension, ...(objects.retired === undefined ? [] : [objects.retired])],
  }
  const numbering = { buckets: plan.keyBuckets ?? 1 }
  // NULLs typed: in an INSERT … SELECT with a window function BigQuery does not coerce an untyped NULL.
  const attribute = (c: { name: string; type: string }) =>
    typeFamily(c.type).kind === 'string'
      ? str(UNKNOWN_MEMBER.label)
      : `CAST(NULL AS ${d.columnType(c.type, { table: table.name, column: c.name })})`
  const openEnd =
    table.openEnd === null ? `CAST(NULL AS ${d.type('timestamp')})` : d.timestampLiteral(table.openEnd)
  const columns = [
    n.surrogateKey,
    ...keyNames,
    ...r.attributes.map((c) => c.name),
    n.validFrom,
    n.validTo,
    n.isCurrent,
    n.isDeleted,
    n.rowHash,
    n.batchId,
    r.inferredFlag,
    ...presetColumnNames(table),
  ]
  const naturalKey = r.dimensionKey.map((k) => ({ expression: `m.${q(k.name)}`, type: k.type }))
  const values = [
    newSurrogateKey(
      keys,
      numbering,
      r.dimensionKey,
      'm',
      keyNames.map((k) => `m.${q(k)}`),
    ),
    ...keyNames.map((k) => `m.${q(k)}`),
    ...r.attributes.map(attribute),
    'm.t',
    openEnd,
    'TRUE',
    'FALSE',
    str(INFERRED_MEMBER.rowHash),
    str(plan.batchId),
    'TRUE',
    // The fact load that infers it has no batch of the dimension: it is loaded now.
    ...presetColumnValues(d, table, {
      keys: naturalKey,
      start: 'm.t',
      deleted: 'FALSE',
      loadedAt: 'CURRENT_TIMESTAMP',
    }),
  ]
  // A key the capture log knows (a merge saw it deleted) has a history: its facts go to the unknown member.
  const logged =
    objects.captures === undefined
      ? ''
      : `\n  AND NOT EXISTS (SELECT 1 FROM ${d.table(objects.captures)} c WHERE ${keyEq('c')})`
  // Listed first: the count that records their keys as given out must not see the placeholders just inserted.
  out.push({
    label: `keys of ${table.name} to infer members of`,
    sql: d.createTempTableAs(
      INFERRED_KEYS,
      `SELECT m.* FROM (\n  ${missing}\n) m\nWHERE NOT EXISTS (SELECT 1 FROM ${dim} x WHERE ${keyEq('x')})${logged}`,
    ),
  })
  const inferred = `${d.table({ name: INFERRED_KEYS })} m`
  out.push(
    seedRecordedHighestKey(
      keys,
      `record the highest surrogate key given out in ${table.name} (a dimension without a record)`,
    ),
  )
  out.push({
    label: `infer members of ${table.name} for keys it never held`,
    sql:
      `INSERT INTO ${dim} (${columns.map(q).join(', ')})\n` + `SELECT ${values.join(', ')}\nFROM ${inferred}`,
  })
  out.push(
    advanceRecordedHighestKey(
      keys,
      numbering,
      r.dimensionKey,
      'm',
      inferred,
      `record the surrogate keys of the inferred members of ${table.name} as given out`,
    ),
  )
  // Only while no merge has seen the key: a placeholder a merge closed, or logged in the capture log (whose
  // states rebuild late keys' windows), keeps its start, and older facts go to the unknown member.
  const unseen =
    objects.captures === undefined
      ? ''
      : ` AND NOT EXISTS (SELECT 1 FROM ${d.table(objects.captures)} c WHERE ${keyNames.map((k) => `c.${q(k)} = d.${q(k)}`).join(' AND ')})`
  out.push({
    label: `start inferred members of ${table.name} at their earliest fact`,
    sql:
      `UPDATE ${dim} AS d SET ${[`${q(n.validFrom)} = m.t`, ...dbtIdAssignments(d, table, naturalKey, 'm.t')].join(', ')}\nFROM (\n  ${missing}\n) m\n` +
      `WHERE ${keyEq('d')} AND d.${flag} IS TRUE AND ${currentVersion(d, table, 'd')} AND m.t < d.${q(n.validFrom)}${unseen}`,
  })
  return out
}

/** Temporary table of the keys one reference infers members of (replaced for the next reference). */
const INFERRED_KEYS = '__dimsync_inferred_keys'

/** Placeholders of `dimension` (flag column `flag`) a batch created. */
export function renderInferredCount(
  d: SqlDialect,
  dimension: TableSpec,
  schema: string,
  flag: string,
  batchId: string,
): string {
  const n = dimension.columns
  return (
    `(SELECT COUNT(*) FROM ${d.table(dimensionObjects(dimension, schema).dimension)} ` +
    `WHERE ${d.quoteIdentifier(flag)} IS TRUE AND ${d.quoteIdentifier(n.batchId)} = ${d.stringLiteral(batchId)})`
  )
}
