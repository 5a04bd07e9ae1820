import type { CheckKind } from '../core/check-failure.ts'
import type { CompiledStatement } from '../core/compiled-sql.ts'
import { FACT_BATCH_COLUMN, type FactLayout } from '../core/fact-layout.ts'
import type { FactSpec } from '../core/fact-spec.ts'
import type { TableRef } from '../core/table-ref.ts'
import type { SqlDialect } from './dialect.ts'
import { FACT_CHANGE_COLUMNS, type FactObjects } from './render-fact-ddl.ts'
import { dimensionObjects } from './render-ddl.ts'
import { raiseCheck, refuseWithExamples } from './raise-check.ts'
import { TEMP } from './merge-sql.ts'
import { versionAtInJoin, versionsNotEndedBy } from './fact-version-join.ts'
import { renderInferredCount, renderInferredMembers } from './render-inferred-member.ts'
import { currentBeforeTheBatch } from './version-predicates.ts'

/** Everything the load of one fact batch depends on. Pure data: rendering does no I/O and reads no clock. */
export interface FactLoadPlan {
  readonly fact: FactSpec
  readonly layout: FactLayout
  readonly objects: FactObjects
  /** Schema (dataset) of the referenced dimensions. */
  readonly schema: string
  readonly batchId: string
  readonly extractedAt: string
  readonly appliedAt: string
  readonly mode: 'full' | 'incremental'
  /** The staged rows; default the session's temporary `__dimsync_stage` (see MergePlan.stage). */
  readonly stage?: TableRef
  /** Buckets the surrogate keys of inferred members are numbered in (surrogate-keys.ts); default 1. */
  readonly keyBuckets?: number
}

/**
 * The load of one fact batch, to run inside one transaction: the grain checks (which refuse the whole batch),
 * then the inferred members references that infer them need (render-inferred-member.ts), then the facts the
 * batch replaces are removed (all of them for a full extract, those with a grain in the
 * batch for an incremental one), then every staged fact is inserted with each reference resolved, in one
 * set-based join per reference, to the surrogate key of the live version whose half-open window contains the
 * event time (an inferred member included), or to the dimension's unknown member (where the dimension is partitioned
 * on valid_to, only the versions not ended by the batch's earliest event time are read: versionsNotEndedBy); last the
 * ledger row that makes a re-delivered batch a no-op.
 */
export function renderFactLoad(d: SqlDialect, plan: FactLoadPlan): CompiledStatement[] {
  const { fact, layout, objects } = plan
  const q = (name: string) => d.quoteIdentifier(name)
  const str = (value: string) => d.stringLiteral(value)
  const stage = d.table(plan.stage ?? { name: TEMP.stage })
  const table = d.table(objects.table)
  const prefix = `fact ${fact.name}: batch ${plan.batchId}`
  const raise = (kind: CheckKind, message: string) =>
    raiseCheck(d, { kind, table: fact.name, batchId: plan.batchId }, message)
  const count = (expression: string) => d.castToString(expression)
  const s = (column: string) => `s.${q(column)}`
  const out: CompiledStatement[] = []

  const feed = changeFeedSql(d, fact)
  const nullGrain = fact.grain.map((g) => `${s(g)} IS NULL`).join(' OR ')
  out.push({
    label: 'check NULL grain',
    sql:
      `SELECT ${raise(
        'null-key',
        `${str(`${prefix} has `)} || ${count('COUNT(*)')} || ` +
          str(` facts with a NULL grain column (${fact.grain.join(', ')}); nothing was written`),
      )}\n` + `FROM ${stage} s WHERE ${nullGrain} HAVING COUNT(*) > 0`,
  })
  out.push({
    label: 'check NULL event time',
    sql:
      `SELECT ${raise(
        'null-valid-from',
        `${str(`${prefix} has `)} || ${count('COUNT(*)')} || ` +
          str(` facts with a NULL event time (${fact.eventTime}); nothing was written`),
      )}\n` +
      `FROM ${stage} s WHERE ${s(fact.eventTime)} IS NULL${feed ? ` AND NOT ${feed.isDelete('s')}` : ''} HAVING COUNT(*) > 0`,
  })
  if (feed !== undefined) {
    out.push({
      label: 'check operations',
      sql:
        `SELECT ${raise(
          'bad-operation',
          `${str(`${prefix} has `)} || ${count('COUNT(*)')} || ` +
            str(
              ` changes whose operation (${feed.column}) is none of ${feed.known.join(', ')}, for example `,
            ) +
            ` || COALESCE(${d.castToString(`MIN(${d.castToString(s(feed.column))})`)}, 'NULL') || ${str('; nothing was written')}`,
        )}\n` + `FROM ${stage} s WHERE NOT (${feed.isKnown('s')}) HAVING COUNT(*) > 0`,
    })
  }
  const grainText = columnValuesText(d, fact.grain, 's')
  out.push({
    label: 'check duplicate grain',
    sql: refuseWithExamples(
      d,
      { kind: 'duplicate-key', table: fact.name, batchId: plan.batchId },
      {
        offending: `SELECT ${grainText} AS k, COUNT(*) AS n FROM ${stage} s GROUP BY ${[...fact.grain, ...(feed?.order !== undefined ? [feed.order] : [])].map(s).join(', ')} HAVING COUNT(*) > 1`,
        message: (n) =>
          `${str(`${prefix} has `)} || ${count(n)} || ` +
          str(
            feed?.order !== undefined
              ? ` grain values with two changes at one ${feed.order} (grain ${fact.grain.join(', ')})`
              : ` grain values held by more than one ${feed ? 'change (give the feed a sequence to order them)' : 'fact'} (grain ${fact.grain.join(', ')})`,
          ),
        example: `k || ${str(' (')} || ${d.castToString('n')} || ${str(' facts)')}`,
      },
    ),
  })

  // A change feed applies the last change of each grain: the rows stored are those whose last change is not a
  // delete (the facts the batch touches are all removed first). With an order, only changes newer than the last
  // one loaded for their grain (the change log) apply: a late change of an older order changes nothing.
  const lastChanges =
    feed === undefined
      ? stage
      : `(\n  SELECT * FROM (\n    SELECT s.*, ROW_NUMBER() OVER (PARTITION BY ${fact.grain.map(s).join(', ')}` +
        `${feed.order !== undefined ? ` ORDER BY ${s(feed.order)} DESC` : ''}) AS ${q(LAST_CHANGE)}\n    FROM ${stage} s\n  ) x\n` +
        `  WHERE x.${q(LAST_CHANGE)} = 1\n)`
  const logged = feed?.order !== undefined && layout.order !== undefined
  if (logged) out.push(...renderChangeLogChecks(d, plan, lastChanges, prefix, raise))
  const applying = logged ? d.table({ name: APPLIED_CHANGES }) : lastChanges
  if (logged) {
    const log = d.table(objects.changes)
    const newer = fact.grain.map((g) => `g.${q(g)} = l.${q(g)}`).join(' AND ')
    out.push({
      label: 'changes newer than the last loaded change of their fact',
      sql: d.createTempTableAs(
        APPLIED_CHANGES,
        `SELECT l.* FROM ${lastChanges} l\nWHERE NOT EXISTS (SELECT 1 FROM ${log} g WHERE ${newer} ` +
          `AND g.${q(FACT_CHANGE_COLUMNS.order)} >= l.${q(feed.order!)})`,
      ),
    })
  }
  const rows = feed === undefined ? stage : `(SELECT * FROM ${applying} x WHERE NOT ${feed.isDelete('x')})`
  for (const reference of layout.references) {
    const inferredFlag = reference.inferredFlag
    if (inferredFlag !== undefined)
      out.push(
        ...renderInferredMembers(d, {
          fact,
          reference: { ...reference, inferredFlag },
          schema: plan.schema,
          batchId: plan.batchId,
          stage: rows,
          ...(plan.keyBuckets !== undefined ? { keyBuckets: plan.keyBuckets } : {}),
        }),
      )
  }

  const grainEq = fact.grain.map((g) => `f.${q(g)} = ${s(g)}`).join(' AND ')
  out.push(
    plan.mode === 'full' && feed === undefined
      ? { label: 'remove the facts a full extract replaces', sql: `DELETE FROM ${table} WHERE TRUE` }
      : {
          label: 'remove the facts the batch replaces',
          sql: `DELETE FROM ${table} f WHERE EXISTS (SELECT 1 FROM ${logged ? applying : stage} s WHERE ${grainEq})`,
        },
  )

  const eventTime = d.castToTimestamp(s(fact.eventTime))
  // Every fact is at or after the batch's earliest event time: where the dimension is partitioned on valid_to,
  // the partitions of versions ended by then are not read (elsewhere the bound would only add a filter to the
  // join, which DuckDB plans as a nested loop against the one-row subquery).
  const earliest = d.capabilities.partitionedOnValidTo
    ? d.earliestEventTime(`SELECT MIN(${eventTime}) FROM ${rows} s`)
    : undefined
  for (const sql of earliest?.statements ?? []) out.push({ label: 'note the earliest event time', sql })
  const joins = layout.references.map((r, i) => {
    const dimension = dimensionObjects(r.dimension, plan.schema).dimension
    const ref =
      earliest === undefined
        ? d.table(dimension)
        : versionsNotEndedBy(d, r.dimension, dimension, earliest.value)
    const keyEq = r.dimensionKey.map((k, j) => `r${i}.${q(k.name)} = ${s(r.reference.key[j]!)}`)
    const on = `${keyEq.join(' AND ')}\n  AND ${versionAtInJoin(d, r.dimension, eventTime, `r${i}`)}`
    // A dimension bent by an older dimsync (a key with two current versions) has two versions valid at one
    // instant: a fact there would be stored once per version. The batch is refused until the dimension is repaired.
    // Only the facts of bent keys are joined again: the keys are found among the current versions (on BigQuery the
    // open partition), so a batch of a sound dimension pays one aggregate of them, not a second join of every fact.
    const dimensionKeys = r.dimensionKey.map((k) => `c.${q(k.name)}`).join(', ')
    const bent =
      `SELECT ${dimensionKeys} FROM ${d.table(dimension)} c\n` +
      `    WHERE ${currentBeforeTheBatch(d, r.dimension, 'c')}\n    GROUP BY ${dimensionKeys} HAVING COUNT(*) > 1`
    const bentEq = r.dimensionKey.map((k, j) => `b.${q(k.name)} = ${s(r.reference.key[j]!)}`).join(' AND ')
    const keyText = columnValuesText(d, r.reference.key, 's')
    out.push({
      label: `check one version of ${r.dimension.name} per fact (${r.reference.alias})`,
      sql: refuseWithExamples(
        d,
        { kind: 'bent-key', table: fact.name, batchId: plan.batchId },
        {
          offending:
            `SELECT ${grainText} AS k, ${keyText} AS key_text, COUNT(*) AS n\n  FROM ${rows} s\n` +
            `  JOIN (\n    ${bent}\n  ) b ON ${bentEq}\n  JOIN ${ref} r${i}\n  ON ${on}\n` +
            `  GROUP BY ${[...fact.grain, ...r.reference.key].map(s).join(', ')} HAVING COUNT(*) > 1`,
          message: (n) =>
            `${str(`${prefix} has `)} || ${count(n)} || ` +
            `(CASE WHEN ${n} = 1 THEN ${str(' fact')} ELSE ${str(' facts')} END) || ` +
            str(
              ` whose ${r.reference.alias} matches more than one version of ${r.dimension.name} valid at its time ` +
                '(the dimension was bent before dimsync checked it; repair it as docs/errors.md says, then run again)',
            ),
          example: `k || ${str(' (')} || key_text || ${str(', ')} || ${count('n')} || ${str(' versions)')}`,
        },
      ),
    })
    return `\nLEFT JOIN ${ref} r${i}\n  ON ${on}`
  })
  const columns = [
    ...layout.copied.map((c) => c.name),
    ...fact.references.map((r) => r.surrogateKeyColumn),
    FACT_BATCH_COLUMN,
  ]
  const values = [
    ...layout.copied.map((c) => s(c.name)),
    ...layout.references.map(
      (r, i) => `COALESCE(r${i}.${q(r.dimension.columns.surrogateKey)}, ${r.reference.unknownMemberKey})`,
    ),
    str(plan.batchId),
  ]
  out.push({
    label: 'insert facts keyed to the versions true at their event time',
    sql:
      `INSERT INTO ${table} (${columns.map(q).join(', ')})\n` +
      `SELECT ${values.join(', ')}\nFROM ${rows} s${joins.join('')}`,
  })
  if (logged) {
    const log = d.table(objects.changes)
    const grainCols = fact.grain.map(q)
    out.push(
      {
        label: 'change log: forget the changes the batch supersedes',
        sql: `DELETE FROM ${log} f WHERE EXISTS (SELECT 1 FROM ${applying} s WHERE ${grainEq})`,
      },
      {
        label: 'change log: record the changes the batch loaded',
        sql:
          `INSERT INTO ${log} (${[...grainCols, ...Object.values(FACT_CHANGE_COLUMNS).map(q)].join(', ')})\n` +
          `SELECT ${[...fact.grain.map(s), s(feed.order!), feed.isDelete('s'), str(plan.batchId)].join(', ')} FROM ${applying} s`,
      },
    )
  }
  out.push({
    label: 'record batch as applied',
    sql:
      `INSERT INTO ${d.table(objects.batches)} (target, table_name, batch_id, extracted_at, mode, applied_at, events, inserted_versions, closed_versions, deleted_keys, unchanged_events, late_keys)\n` +
      `SELECT ${str(fact.target)}, ${str(fact.name)}, ${str(plan.batchId)}, ${d.timestampLiteral(plan.extractedAt)}, ` +
      `${str(plan.mode)}, ${d.timestampLiteral(plan.appliedAt)},\n  x.n, x.n, 0, 0, 0, 0\nFROM (SELECT COUNT(*) AS n FROM ${stage}) x`,
  })
  return out
}

/** `order_id=7, line=2`: the values of `columns` (a grain, a reference's key) in the row `alias`, as text for a refusal's example. */
function columnValuesText(d: SqlDialect, columns: readonly string[], alias: string): string {
  return columns
    .map(
      (g, i) =>
        `${d.stringLiteral(`${i > 0 ? ', ' : ''}${g}=`)} || ${d.castToString(`${alias}.${d.quoteIdentifier(g)}`)}`,
    )
    .join(' || ')
}

/** Working column ranking the changes of one grain, latest first (the reserved prefix keeps it apart). */
const LAST_CHANGE = '__dimsync_last_change'

/** The batch's last change of each grain that is newer than the one its change log holds (a temporary table). */
const APPLIED_CHANGES = '__dimsync_applied_changes'

/**
 * A change at the order value of the last change loaded for its fact is that change delivered again, and changes
 * nothing; unless it says something else (another operation, other values): one order value, two changes, which
 * refuses the batch.
 */
function renderChangeLogChecks(
  d: SqlDialect,
  plan: FactLoadPlan,
  lastChanges: string,
  prefix: string,
  raise: (kind: CheckKind, message: string) => string,
): CompiledStatement[] {
  const { fact, layout, objects } = plan
  const feed = changeFeedSql(d, fact)!
  const q = (name: string) => d.quoteIdentifier(name)
  const str = (value: string) => d.stringLiteral(value)
  const order = feed.order!
  const on = (alias: string) => fact.grain.map((g) => `${alias}.${q(g)} = l.${q(g)}`).join(' AND ')
  const differs = layout.copied
    .map((c) => `NOT (f.${q(c.name)} IS NOT DISTINCT FROM l.${q(c.name)})`)
    .join(' OR ')
  const grainText = columnValuesText(d, fact.grain, 'l')
  const conflict =
    `SELECT ${grainText} AS k, g.${q(FACT_CHANGE_COLUMNS.batchId)} AS b\n` +
    `  FROM ${lastChanges} l\n` +
    `  JOIN ${d.table(objects.changes)} g ON ${on('g')} AND g.${q(FACT_CHANGE_COLUMNS.order)} = l.${q(order)}\n` +
    `  LEFT JOIN ${d.table(objects.table)} f ON ${on('f')}\n` +
    `  WHERE g.${q(FACT_CHANGE_COLUMNS.deleted)} <> ${feed.isDelete('l')}` +
    `${differs === '' ? '' : ` OR (NOT g.${q(FACT_CHANGE_COLUMNS.deleted)} AND (f.${q(fact.grain[0]!)} IS NULL OR ${differs}))`}`
  return [
    {
      label: 'check changes at the order of a loaded change',
      sql:
        `WITH conflict AS (\n  ${conflict}\n)\n` +
        `SELECT ${raise(
          'duplicate-key',
          `${str(`${prefix} has `)} || ${d.castToString('COUNT(*)')} || ` +
            str(
              ` changes at the ${order} of a change already loaded for their fact that say something else ` +
                `(another operation or other values: one ${order}, two changes), for example `,
            ) +
            ` || MIN(k || ${str(' (loaded by batch ')} || b || ${str(')')}) || ${str('; nothing was written')}`,
        )}\nFROM conflict HAVING COUNT(*) > 0`,
    },
  ]
}

/** The SQL a change feed of facts needs: which changes delete, which operations are known, their order. */
function changeFeedSql(d: SqlDialect, fact: FactSpec) {
  const feed = fact.changes
  if (feed === undefined) return undefined
  const q = (name: string) => d.quoteIdentifier(name)
  const column = feed.operation.column
  const isIn = (alias: string, values: readonly string[]) =>
    `COALESCE(${d.castToString(`${alias}.${q(column)}`)} IN (${values.map((v) => d.stringLiteral(v)).join(', ')}), FALSE)`
  const known = [...feed.operation.insert, ...feed.operation.update, ...feed.operation.delete]
  return {
    column,
    known,
    order: feed.sequence ?? (fact.extract.mode === 'incremental' ? fact.extract.cursor : undefined),
    isDelete: (alias: string) => isIn(alias, feed.operation.delete),
    isKnown: (alias: string) => isIn(alias, known),
  }
}

/** Column of the load report counting the facts of reference `index` that went to the unknown member. */
export function unknownCountColumn(index: number): string {
  return `unknown_${index}`
}

/** Column of the load report counting the inferred members reference `index` created. */
export function inferredCountColumn(index: number): string {
  return `inferred_${index}`
}

/**
 * One row read after the load: `facts` (the batch's facts now stored) and, per reference, how many of them point
 * at the dimension's unknown member (`unknown_0`, `unknown_1`, ...) and, per reference that infers members, how
 * many placeholders the batch created (`inferred_0`, ...).
 */
export function renderFactReport(d: SqlDialect, plan: FactLoadPlan): string {
  const q = (name: string) => d.quoteIdentifier(name)
  const counts = plan.fact.references.map(
    (r, i) =>
      `,\n  COALESCE(SUM(CASE WHEN ${q(r.surrogateKeyColumn)} = ${r.unknownMemberKey} THEN 1 ELSE 0 END), 0) AS ${unknownCountColumn(i)}`,
  )
  plan.layout.references.forEach((r, i) => {
    if (r.inferredFlag !== undefined)
      counts.push(
        `,\n  ${renderInferredCount(d, r.dimension, plan.schema, r.inferredFlag, plan.batchId)} AS ${inferredCountColumn(i)}`,
      )
  })
  const batch = d.stringLiteral(plan.batchId)
  // A feed with a change log: of the batch's changes, those applied as deletes and those that changed nothing
  // (not newer than their fact's latest change, in the batch or loaded before). Read from the log and the ledger,
  // not the staged rows, so a load answered again after its commit (render-fact-script.ts) gives the same counts.
  if (changeFeedSql(d, plan.fact)?.order !== undefined && plan.layout.order !== undefined) {
    const log = `FROM ${d.table(plan.objects.changes)} WHERE ${q(FACT_CHANGE_COLUMNS.batchId)} = ${batch}`
    const staged =
      `(SELECT MAX(events) FROM ${d.table(plan.objects.batches)} ` +
      `WHERE target = ${d.stringLiteral(plan.fact.target)} AND batch_id = ${batch})`
    counts.push(
      `,\n  (SELECT COUNT(*) ${log} AND ${q(FACT_CHANGE_COLUMNS.deleted)}) AS ${FEED_REPORT.deletes}`,
      `,\n  ${staged} - (SELECT COUNT(*) ${log}) AS ${FEED_REPORT.superseded}`,
    )
  }
  return (
    `SELECT COUNT(*) AS facts${counts.join('')}\nFROM ${d.table(plan.objects.table)}\n` +
    `WHERE ${q(FACT_BATCH_COLUMN)} = ${batch}`
  )
}

/** Columns of the load report of a change feed with a change log (renderFactReport). */
export const FEED_REPORT = Object.freeze({ deletes: 'delete_changes', superseded: 'superseded_changes' })
