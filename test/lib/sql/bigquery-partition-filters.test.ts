import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { bigQueryColumnType } from '../../../lib/sql/bigquery/bigquery-types.ts'
import type { CompiledStatement } from '../../../lib/sql/dialect.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import { keyBucketsFor } from '../../../lib/sql/surrogate-keys.ts'
import {
  BATCH,
  DATASET,
  PROJECT,
  STAGED,
  bigQuery,
  layoutColumns,
  mergeConfigMatrix,
  mergeRequest,
  type MatrixCase,
} from '../../support/zetasql/merge-config-matrix.ts'
import { ZetaSqlAnalyzer } from '../../support/zetasql/zetasql-analyzer.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { presetTableFields } from '../../../lib/config/table-options.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { versionsNotEndedBy } from '../../../lib/sql/fact-version-join.ts'
import { serialRowNumbers, tableScans, unprunedScans } from '../../support/zetasql/partition-pruning.ts'

/*
 * The cost of a merge on BigQuery grows with the batch and the open versions, not with the depth
 * of history. The dimension is partitioned on valid_to (render-ddl.ts, bigquery-dialect.ts), so every statement
 * that reads it must filter valid_to to the open end (a conjunct `valid_to IS NULL` or `valid_to = <sentinel>`)
 * for BigQuery to read only the open versions' partition. This test walks ZetaSQL's resolved tree of every
 * statement of every merge script in the config matrix and lists the scans of the dimension without that filter.
 * Statements the script runs only under a guard (`onlyIf`, e.g. the late path: only when the batch has late keys)
 * are excepted; their guard itself must read no dimension partition it does not filter. A statement listed in
 * READ_FROM_THE_BATCH may read the partitions from the batch's earliest change on instead.
 */

/**
 * Reads of the dimension that are not pruned yet, by statement label (prefix), each with why. A statement not
 * listed fails the test; a listed one that no case renders any more fails it too, so the list only shrinks.
 */
const NOT_PRUNED_YET: readonly (readonly [label: string, why: string])[] = [
  [
    'mirror: ',
    'retiring replaced rows reads the whole mirror, which between merges holds only current rows (its closed partitions are empty)',
  ],
  ['system time: ', 'bitemporal tables: reads the rows known now of the keys the batch can touch'],
]

/**
 * Reads of the dimension bounded below by the batch's earliest change (`valid_to > <script variable>`), which read
 * the partitions from that instant on: what they read grows with the time the batch spans, not with the depth of
 * history. By statement label, each with why; any other statement reading so fails the test.
 */
const READ_FROM_THE_BATCH: readonly (readonly [label: string, why: string])[] = [
  [
    'check one current version per key',
    'the versions this batch closed or moved end at or after its earliest change: one it left flagged current is seen',
  ],
]

/**
 * Reads of the capture log (partitioned by month of captured_at) by statements the merge always runs that are not
 * bounded by the batch's earliest event time (`captured_at >= __dimsync_events_from`, a script variable), by
 * statement label (prefix), each with why. Same rule: the list only shrinks.
 */
const CAPTURES_UNBOUNDED_YET: readonly (readonly [label: string, why: string])[] = []

/**
 * Statements that still number new surrogate keys with one ROW_NUMBER() over the whole batch, which BigQuery runs
 * on one worker. Same rule as above: the list only shrinks.
 */
const SERIAL_YET: readonly string[] = []

/** The merges are rendered for a batch of 100M rows: BigQuery's dialect numbers it in 100 buckets. */
const LARGE_BATCH_ROWS = 100_000_000

let analyzer: ZetaSqlAnalyzer

beforeAll(async () => {
  analyzer = await ZetaSqlAnalyzer.start()
})
afterAll(async () => {
  await analyzer?.stop()
})

/**
 * `label: what` for every unpruned read of the dimension by a statement the merge always runs, and the labels of
 * those that number rows with one ROW_NUMBER() over all of them.
 */
async function unprunedReads(
  c: MatrixCase,
): Promise<{ found: string[]; serial: string[]; captures: string[]; readFromTheBatch: string[] }> {
  analyzer.reset()
  const objects = dimensionObjects(c.table, DATASET)
  const stage = { schema: DATASET, name: stagingTableName(c.table.target, BATCH) }
  analyzer.addTable(
    `${PROJECT}.${DATASET}.${stage.name}`,
    STAGED.map((s) => ({ name: s.name, type: bigQueryColumnType(s.type, { table: 't', column: s.name }) })),
  )
  if (c.existing !== undefined) {
    const before = planDimensionLayout(c.table, BATCH, c.existing, undefined)
    for (const s of renderMergeScript(bigQuery, mergeRequest(c.table, before, objects, stage)).ddl)
      await analyzer.analyze(s.label, s.sql)
  }
  const existing = c.existing === undefined ? undefined : layoutColumns(c.table, c.existing)
  const layout = planDimensionLayout(c.table, BATCH, STAGED, existing)
  const keyBuckets = keyBucketsFor(LARGE_BATCH_ROWS, bigQuery.capabilities.rowsPerKeyBucket)
  const script = renderMergeScript(bigQuery, { ...mergeRequest(c.table, layout, objects, stage), keyBuckets })
  const dimension = objects.dimension.name
  const validTo = c.table.columns.validTo
  const found: string[] = []
  const serial: string[] = []
  const captures: string[] = []
  const readFromTheBatch: string[] = []
  const log = { table: objects.captures?.name ?? '', column: 'captured_at' }
  const check = async (label: string, sql: string) => {
    const verdict = await analyzer.analyze(label, sql)
    if (!verdict.ok) throw new Error(`${label}: ${verdict.error}`)
    const scans = tableScans(verdict.resolved, { table: dimension, column: validTo }, log)
    for (const scan of scans.filter((s) => s.table === dimension && !s.pruned)) {
      const fromTheBatch = scan.readFrom
        ? READ_FROM_THE_BATCH.find(([known]) => label.startsWith(known))
        : undefined
      if (fromTheBatch !== undefined) readFromTheBatch.push(fromTheBatch[0])
      else found.push(`${label}: scan of ${dimension} (as ${scan.alias}) without a filter on ${validTo}`)
    }
    for (const scan of scans)
      if (scan.table === log.table && !scan.readFrom)
        captures.push(
          `${label}: scan of ${log.table} (as ${scan.alias}) not bounded by the earliest event time`,
        )
    // A batch's surrogate keys are not numbered by one worker.
    if (serialRowNumbers(verdict.resolved) > 0) serial.push(label)
  }
  const all: readonly CompiledStatement[] = [...script.ddl, ...script.merge, ...script.after]
  for (const s of all) {
    if (s.onlyIf !== undefined) await check(`${s.label} (its guard)`, `SELECT ${s.onlyIf}`)
    // A guarded statement is still analyzed (it creates temporary tables later statements read).
    if (s.onlyIf === undefined) await check(s.label, s.sql)
    else await analyzer.analyze(s.label, s.sql)
  }
  return { found, serial, captures, readFromTheBatch }
}

describe('every statement of a BigQuery merge reads only the open partition of the dimension (ZetaSQL tree)', () => {
  const all = mergeConfigMatrix()
  const listed = new Set<string>()

  it.each(all.map((c) => [c.title, c] as const))('%s', async (_title, c) => {
    const unexpected = []
    const { found, serial, captures, readFromTheBatch } = await unprunedReads(c)
    for (const label of readFromTheBatch) listed.add(label)
    expect(serial.filter((label) => !SERIAL_YET.includes(label))).toEqual([])
    for (const label of serial) listed.add(label)
    for (const read of captures) {
      const known = CAPTURES_UNBOUNDED_YET.find(([label]) => read.startsWith(label))
      if (known === undefined) unexpected.push(read)
      else listed.add(known[0])
    }
    for (const read of found) {
      const known = NOT_PRUNED_YET.find(([label]) => read.startsWith(label))
      if (known === undefined) unexpected.push(read)
      else listed.add(known[0])
    }
    expect(unexpected).toEqual([])
  })

  it('every read listed as not pruned yet is still rendered (remove the ones that are pruned now)', () => {
    expect(NOT_PRUNED_YET.map(([label]) => label).filter((label) => !listed.has(label))).toEqual([])
    expect(SERIAL_YET.filter((label) => !listed.has(label))).toEqual([])
    expect(CAPTURES_UNBOUNDED_YET.map(([label]) => label).filter((label) => !listed.has(label))).toEqual([])
    expect(READ_FROM_THE_BATCH.map(([label]) => label).filter((label) => !listed.has(label))).toEqual([])
  })
})

describe('the walk finds what BigQuery could not prune', () => {
  const table = tableSpec({ deletes: 'invalidate' })
  const dim = `\`${PROJECT}\`.\`${DATASET}\`.\`${table.target}\``
  const validTo = table.columns.validTo

  async function scansOf(sql: string): Promise<string[]> {
    analyzer.reset()
    analyzer.addTable(`${PROJECT}.${DATASET}.${table.target}`, [
      { name: 'customer_id', type: 'INT64' },
      { name: 'name', type: 'STRING' },
      { name: validTo, type: 'TIMESTAMP' },
    ])
    analyzer.addTable(`${PROJECT}.${DATASET}.stage`, [{ name: 'customer_id', type: 'INT64' }])
    const verdict = await analyzer.analyze('probe', sql)
    expect(verdict.error).toBeUndefined()
    return unprunedScans(verdict.resolved, table.target, validTo)
  }

  it('a filter on the open end prunes; none, a disjunction or a comparison with a column does not', async () => {
    expect(await scansOf(`SELECT name FROM ${dim} WHERE ${validTo} IS NULL AND customer_id = 1`)).toEqual([])
    expect(
      await scansOf(`SELECT name FROM ${dim} WHERE ${validTo} = TIMESTAMP '9999-12-31 23:59:59+00'`),
    ).toEqual([])
    expect(await scansOf(`SELECT name FROM ${dim}`)).toHaveLength(1)
    expect(await scansOf(`SELECT name FROM ${dim} WHERE ${validTo} IS NULL OR customer_id = 1`)).toHaveLength(
      1,
    )
    expect(
      await scansOf(
        `SELECT d.name FROM ${dim} d JOIN \`${PROJECT}\`.\`${DATASET}\`.\`stage\` s ON d.customer_id = s.customer_id`,
      ),
    ).toHaveLength(1)
  })

  it('a scan inside a subquery or an UPDATE without the filter is found; with it, not', async () => {
    expect(await scansOf(`SELECT (SELECT MAX(customer_id) FROM ${dim})`)).toHaveLength(1)
    expect(await scansOf(`UPDATE ${dim} SET name = 'x' WHERE customer_id = 1`)).toHaveLength(1)
    expect(
      await scansOf(`UPDATE ${dim} SET name = 'x' WHERE customer_id = 1 AND ${validTo} IS NULL`),
    ).toEqual([])
    expect(
      await scansOf(
        `DELETE FROM ${dim} WHERE customer_id IN (SELECT customer_id FROM ${dim} WHERE ${validTo} IS NULL)`,
      ),
    ).toHaveLength(1)
  })

  it('a lower bound on a script variable or a literal bounds a read of the capture log; a subquery does not', async () => {
    const log = { table: 'log', column: 'captured_at' }
    const bounded = async (sql: string) => {
      analyzer.reset()
      analyzer.addTable(`${PROJECT}.${DATASET}.log`, [
        { name: 'customer_id', type: 'INT64' },
        { name: 'captured_at', type: 'TIMESTAMP' },
      ])
      analyzer.addTable(`${PROJECT}.${DATASET}.events`, [{ name: 't', type: 'TIMESTAMP' }])
      await analyzer.analyze('set', `SET events_from = (SELECT MIN(t) FROM ${PROJECT}.${DATASET}.events)`)
      const verdict = await analyzer.analyze('probe', sql)
      expect(verdict.error).toBeUndefined()
      return tableScans(verdict.resolved, { table: table.target, column: validTo }, log)
        .filter((scan) => scan.table === 'log')
        .map((scan) => scan.readFrom)
    }
    const from = `${PROJECT}.${DATASET}.log c`
    expect(await bounded(`SELECT customer_id FROM ${from} WHERE c.captured_at >= events_from`)).toEqual([
      true,
    ])
    expect(await bounded(`SELECT customer_id FROM ${from} WHERE events_from < c.captured_at`)).toEqual([true])
    expect(
      await bounded(
        `SELECT customer_id FROM ${from} WHERE c.captured_at > TIMESTAMP '2030-01-01 00:00:00+00'`,
      ),
    ).toEqual([true])
    // BigQuery scans every partition for a filter on a subquery ("dynamic expressions").
    expect(
      await bounded(
        `SELECT customer_id FROM ${from} WHERE c.captured_at >= (SELECT MIN(t) FROM ${PROJECT}.${DATASET}.events)`,
      ),
    ).toEqual([false])
    expect(await bounded(`SELECT customer_id FROM ${from} WHERE c.captured_at <= events_from`)).toEqual([
      false,
    ])
    expect(
      await bounded(`SELECT customer_id FROM ${from} WHERE c.captured_at >= events_from OR customer_id = 1`),
    ).toEqual([false])
  })

  it("the versions a fact load reads are the open partition and the months from the batch's earliest event time", async () => {
    const scans = async (dimension: TableSpec, sql: (from: string) => string) => {
      analyzer.reset()
      const n = dimension.columns
      analyzer.addTable(`${PROJECT}.${DATASET}.${dimension.target}`, [
        { name: 'customer_id', type: 'INT64' },
        { name: 'name', type: 'STRING' },
        { name: n.surrogateKey, type: 'INT64' },
        { name: n.validFrom, type: 'TIMESTAMP' },
        { name: n.validTo, type: 'TIMESTAMP' },
        { name: n.isDeleted, type: 'BOOL' },
      ])
      analyzer.addTable(`${PROJECT}.${DATASET}.events`, [{ name: 't', type: 'TIMESTAMP' }])
      await analyzer.analyze('set', `SET events_from = (SELECT MIN(t) FROM ${PROJECT}.${DATASET}.events)`)
      const ref = dimensionObjects(dimension, DATASET).dimension
      const verdict = await analyzer.analyze(
        'probe',
        sql(versionsNotEndedBy(bigQuery, dimension, ref, 'events_from')),
      )
      expect(verdict.error).toBeUndefined()
      const partition = { table: dimension.target, column: dimension.columns.validTo }
      return tableScans(verdict.resolved, partition).map((s) => ({ pruned: s.pruned, readFrom: s.readFrom }))
    }
    const select = (from: string) => `SELECT v.customer_id FROM ${from} v`
    // A NULL open end: the open partition, and the closed months from the bound on.
    expect(await scans(table, select)).toEqual([
      { pruned: true, readFrom: false },
      { pruned: false, readFrom: true },
    ])
    // A sentinel open end is later than the bound: one read, from the bound's month to the sentinel's.
    expect(await scans({ ...table, openEnd: '9999-12-31T23:59:59Z' }, select)).toEqual([
      { pruned: false, readFrom: true },
    ])
    // Fivetran's ends a millisecond early: the bound is a function of the variable, a constant still.
    expect(await scans(tableSpec({ ...presetTableFields('fivetran') }), select)).toEqual([
      { pruned: false, readFrom: true },
    ])
    // Not bounded: the dimension itself, or a bound that depends on a row.
    expect(
      await scans(table, () => `SELECT customer_id FROM \`${PROJECT}\`.\`${DATASET}\`.\`${table.target}\``),
    ).toEqual([{ pruned: false, readFrom: false }])
    expect(
      await scans(
        table,
        () =>
          `SELECT customer_id FROM \`${PROJECT}\`.\`${DATASET}\`.\`${table.target}\` v WHERE v.${validTo} > TIMESTAMP_ADD(v.${table.columns.validFrom}, INTERVAL 1 DAY)`,
      ),
    ).toEqual([{ pruned: false, readFrom: false }])
  })

  it('a ROW_NUMBER() over every row is found as serial; one partitioned by a bucket is not', async () => {
    const serial = async (sql: string) => {
      analyzer.reset()
      analyzer.addTable(`${PROJECT}.${DATASET}.stage`, [{ name: 'customer_id', type: 'INT64' }])
      const verdict = await analyzer.analyze('probe', sql)
      expect(verdict.error).toBeUndefined()
      return serialRowNumbers(verdict.resolved)
    }
    const stage = `\`${PROJECT}\`.\`${DATASET}\`.\`stage\``
    expect(await serial(`SELECT 7 + ROW_NUMBER() OVER (ORDER BY customer_id) FROM ${stage}`)).toBe(1)
    expect(
      await serial(
        `SELECT 7 + (ROW_NUMBER() OVER (PARTITION BY MOD(customer_id, 4) ORDER BY customer_id) - 1) * 4 FROM ${stage}`,
      ),
    ).toBe(0)
  })
})
