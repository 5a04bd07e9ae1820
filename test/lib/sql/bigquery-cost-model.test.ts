import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import { planDimensionLayout, systemTimeColumnList } from '../../../lib/core/dimension-layout.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import type { FactReference, FactSpec } from '../../../lib/core/fact-spec.ts'
import { planFactLayout } from '../../../lib/core/fact-layout.ts'
import { inferredColumnName } from '../../../lib/core/inferred-member.ts'
import { metadataColumnList } from '../../../lib/core/metadata-columns.ts'
import { bigQueryColumnType } from '../../../lib/sql/bigquery/bigquery-types.ts'
import type { CompiledStatement } from '../../../lib/sql/dialect.ts'
import { dimensionObjects, renderDimensionDdl } from '../../../lib/sql/render-ddl.ts'
import { factObjects } from '../../../lib/sql/render-fact-ddl.ts'
import { renderFactScript } from '../../../lib/sql/render-fact-script.ts'
import { renderInferredFlagColumn } from '../../../lib/sql/render-inferred-member.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
import { customerReference, ordersFact } from '../../support/fact-specs.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import {
  BATCH,
  DATASET,
  PROJECT,
  bigQuery,
  layoutColumns,
  mergeRequest,
} from '../../support/zetasql/merge-config-matrix.ts'
import { tableScans, type TableScan } from '../../support/zetasql/partition-pruning.ts'
import { ZetaSqlAnalyzer, type CatalogColumn } from '../../support/zetasql/zetasql-analyzer.ts'

/*
 * What a merge costs on BigQuery (on-demand pricing bills bytes processed), computed from the
 * statements dimsync renders, not billed. Each statement of a later batch's script is resolved by ZetaSQL (with
 * unused columns pruned, as BigQuery reads only referenced columns); every table scan costs the rows of the
 * partitions it reads times the sizes of the columns it references, at BigQuery's documented data type sizes; an
 * UPDATE or DELETE also costs every column of the partitions it rewrites (BigQuery's DML pricing for partitioned
 * tables), and at least BigQuery's minimum of 10 MB per table a statement references. The dimension holds KEYS keys with VERSIONS versions each: a scan pinned to the open partition reads
 * KEYS rows, any other reads KEYS × VERSIONS. The capture log (partitioned by month of captured_at) holds
 * KEYS × VERSIONS captures, one month of KEYS captures per version, and a batch's events fall in the last month:
 * a scan bounded below by a script variable (the batch's earliest event time) reads the partitions from that
 * month on, KEYS rows; any other reads them all. A fact load (factCostOf) is costed the same way against that
 * dimension. Run with DIMSYNC_COST_TABLE=1 to print the per-statement table that docs/bigquery.md quotes.
 */

const KEYS = 1_000_000
const VERSIONS = 10
/** Rows a delta or a change feed stages per batch, and the share of a full extract's keys that changed. */
const DELTA_ROWS = 50_000
const CHANGED_SHARE = 0.05
/** Rows of the batch ledger (all tables' batches: hourly merges of ten tables for a year, rounded). */
const LEDGER_ROWS = 100_000
/** Average UTF-8 length of the source's text values. */
const TEXT_LENGTH = 20
/** BigQuery's on-demand minimum: 10 MB per table referenced, per query (each statement of a script is one). */
const MIN_BYTES_PER_TABLE = 10 * 1024 * 1024

/** The source: a key and 20 attributes (8 texts, 4 integers, 3 decimals, 2 timestamps, 2 dates, 1 boolean). */
const ATTRIBUTES: StagedColumn[] = [
  ...Array.from({ length: 8 }, (_, i) => ({ name: `text_${i + 1}`, type: 'VARCHAR' })),
  ...Array.from({ length: 4 }, (_, i) => ({ name: `count_${i + 1}`, type: 'BIGINT' })),
  ...Array.from({ length: 3 }, (_, i) => ({ name: `amount_${i + 1}`, type: 'DECIMAL(12,2)' })),
  { name: 'updated_at', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'changed_at', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'born', type: 'DATE' },
  { name: 'joined', type: 'DATE' },
  { name: 'active', type: 'BOOLEAN' },
]
const SOURCE: StagedColumn[] = [{ name: 'customer_id', type: 'BIGINT' }, ...ATTRIBUTES]
const FEED: StagedColumn[] = [
  ...SOURCE,
  { name: 'Op', type: 'VARCHAR' },
  { name: 'change_seq', type: 'BIGINT' },
]
const DMS = { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] }
const DELTA = { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 } as const

interface Shape {
  readonly title: string
  readonly table: TableSpec
  readonly staged: StagedColumn[]
  /** Staged rows per batch, and versions the batch changes. */
  readonly rows: number
  readonly changes: number
  /** A mirror holds one row per key: no history to grow with (its "versions" are always 1). */
  readonly noHistory?: boolean
}

const SHAPES: Shape[] = [
  {
    title: 'snapshot, `deletes: invalidate`, all columns tracked',
    table: tableSpec({ deletes: 'invalidate' }),
    staged: SOURCE,
    rows: KEYS,
    changes: KEYS * CHANGED_SHARE,
  },
  {
    title: 'snapshot, `deletes: invalidate`, 2 type 1 columns',
    table: tableSpec({
      deletes: 'invalidate',
      tracked: { kind: 'all_except', columns: ['text_7', 'text_8'] },
    }),
    staged: SOURCE,
    rows: KEYS,
    changes: KEYS * CHANGED_SHARE,
  },
  {
    title: 'snapshot, types 0, 3 and 6',
    table: tableSpec({
      deletes: 'invalidate',
      policies: { keepFirst: ['born'], previousValue: ['text_1'], currentValue: ['text_1'] },
    }),
    staged: SOURCE,
    rows: KEYS,
    changes: KEYS * CHANGED_SHARE,
  },
  {
    title: 'change times (late events), delta, `invalidate`, type 1 columns (2 and the cursor)',
    table: tableSpec({
      deletes: 'invalidate',
      validFrom: { kind: 'column', column: 'changed_at' },
      extract: DELTA,
      tracked: { kind: 'all_except', columns: ['text_7', 'text_8'] },
    }),
    staged: SOURCE,
    rows: DELTA_ROWS,
    changes: DELTA_ROWS,
  },
  {
    title: 'change times, full extract, `invalidate`, 2 type 1 columns',
    table: tableSpec({
      deletes: 'invalidate',
      validFrom: { kind: 'column', column: 'changed_at' },
      tracked: { kind: 'all_except', columns: ['text_7', 'text_8'] },
    }),
    staged: SOURCE,
    rows: KEYS,
    changes: KEYS * CHANGED_SHARE,
  },
  {
    title: 'mirror, snapshot, `deletes: invalidate`',
    table: tableSpec({ mode: 'mirror', deletes: 'invalidate' }),
    staged: SOURCE,
    rows: KEYS,
    changes: KEYS * CHANGED_SHARE,
    noHistory: true,
  },
  {
    title: 'append, snapshot',
    table: tableSpec({ mode: 'append' }),
    staged: SOURCE,
    rows: KEYS,
    changes: KEYS,
  },
  {
    title: 'bitemporal, change times, delta, `invalidate`',
    table: tableSpec({
      deletes: 'invalidate',
      validFrom: { kind: 'column', column: 'changed_at' },
      extract: DELTA,
      systemTime: { systemFrom: 'system_from', systemTo: 'system_to' },
    }),
    staged: SOURCE,
    rows: DELTA_ROWS,
    changes: DELTA_ROWS,
  },
  {
    title: 'sequenced change feed, `deletes: new_record` (the cursor is type 1)',
    table: tableSpec({
      deletes: 'new_record',
      validFrom: { kind: 'column', column: 'changed_at' },
      extract: DELTA,
      changes: { operation: DMS, sequence: 'change_seq' },
    }),
    staged: FEED,
    rows: DELTA_ROWS,
    changes: DELTA_ROWS,
  },
]

/** Facts a batch of a fact table stages, and facts the table holds (200 such batches). */
const FACT_ROWS = 50_000
const STORED_FACTS = 10_000_000
/** The customer dimension the facts reference (the first shape's table). */
const CUSTOMERS = tableSpec({ deletes: 'invalidate' })
const ORDER: StagedColumn[] = [
  { name: 'order_id', type: 'BIGINT' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'ordered_at', type: 'TIMESTAMP WITH TIME ZONE' },
  { name: 'amount', type: 'DECIMAL(12,2)' },
  { name: 'quantity', type: 'BIGINT' },
]

interface FactShape {
  readonly title: string
  /** The dimension the one reference resolves against (its open end, its name). */
  readonly dimension: TableSpec
  readonly fact: FactSpec
  readonly staged: StagedColumn[]
}

const orders = (overrides: Partial<FactSpec> = {}, reference: Partial<FactReference> = {}) =>
  ordersFact({ measures: ['amount', 'quantity'], references: [customerReference(reference)], ...overrides })

const FACT_SHAPES: FactShape[] = [
  {
    title: 'facts, incremental, one reference (open end NULL)',
    dimension: CUSTOMERS,
    fact: orders(),
    staged: ORDER,
  },
  {
    title: 'facts, incremental, one reference (open end 9999-12-31)',
    dimension: { ...CUSTOMERS, openEnd: '9999-12-31T23:59:59Z' },
    fact: orders(),
    staged: ORDER,
  },
  {
    title: 'facts, sequenced change feed (its change log), one reference',
    dimension: CUSTOMERS,
    fact: orders({ changes: { operation: DMS, sequence: 'change_seq' } }),
    staged: [...ORDER, { name: 'Op', type: 'VARCHAR' }, { name: 'change_seq', type: 'BIGINT' }],
  },
  {
    title: 'facts, incremental, one reference inferring members',
    dimension: CUSTOMERS,
    fact: orders({}, { inferred: true }),
    staged: ORDER,
  },
]

/** ZetaSQL's TypeKind numbers (zetasql/public/type.proto), as the resolved tree gives them. */
const TYPE_KIND_NAMES: Readonly<Record<string, string>> = {
  2: 'INT64',
  5: 'BOOL',
  7: 'DOUBLE',
  8: 'STRING',
  9: 'BYTES',
  10: 'DATE',
  19: 'TIMESTAMP',
  20: 'TIME',
  21: 'DATETIME',
  23: 'NUMERIC',
  24: 'BIGNUMERIC',
  27: 'INTERVAL',
}

/** BigQuery's logical data type sizes (what on-demand pricing bills per value). */
function valueBytes(typeKind: string, column: string): number {
  switch (TYPE_KIND_NAMES[typeKind] ?? typeKind.replace(/^TYPE_/, '')) {
    case 'BOOL':
      return 1
    case 'INT64':
    case 'DOUBLE':
    case 'DATE':
    case 'DATETIME':
    case 'TIME':
    case 'TIMESTAMP':
      return 8
    case 'NUMERIC':
    case 'INTERVAL':
      return 16
    case 'BIGNUMERIC':
      return 32
    case 'STRING':
    case 'BYTES':
      return 2 + textLength(column)
    default:
      throw new Error(`no size for ${typeKind} (${column})`)
  }
}

/** Average length of a text column: hashes are 32 hex digits, batch ids 27 characters, operations one. */
function textLength(column: string): number {
  if (/hash|state/i.test(column)) return 32
  if (/batch|retired_by/i.test(column)) return BATCH.length
  if (column === 'Op') return 1
  return TEXT_LENGTH
}

interface Costed {
  readonly label: string
  readonly phase: 'ddl' | 'merge' | 'after'
  readonly guarded: boolean
  readonly bytes: number
  /** Bytes by what was read: the open partition, the whole dimension, the staging table, the capture log, … */
  readonly by: Readonly<Record<string, number>>
}

let analyzer: ZetaSqlAnalyzer

beforeAll(async () => {
  analyzer = await ZetaSqlAnalyzer.start()
})
afterAll(async () => {
  await analyzer?.stop()
})

/** What a script's tables hold: the rows a scan of each reads, and which tables partition pruning applies to. */
interface Costing {
  /** The dimension, whose partitions (by valid_to) a filter can pin to the open one or bound below. */
  readonly dimension: { readonly table: string; readonly column: string }
  /** Another table whose scans a lower bound on its partition column prunes (a capture log). */
  readonly readFrom?: { readonly table: string; readonly column: string }
  rowsOf(scan: TableScan): [what: string, rows: number]
}

/**
 * The cost of each statement of a script (its phases in order; the tables it reads are in the analyzer's catalog,
 * its DDL already analyzed): each statement resolved with unused columns pruned, every scan costing the rows
 * `costing` gives times the sizes of the columns it reads (and of every column where it rewrites), at least the
 * 10 MB minimum per table; a guard costed once per run of the statements it guards, as a statement that always
 * runs.
 */
async function costStatements(
  phases: readonly (readonly [Costed['phase'], readonly CompiledStatement[]])[],
  costing: Costing,
): Promise<Costed[]> {
  const widthOf = (scan: TableScan): number => {
    const name = [...[`${PROJECT}.${DATASET}.${scan.table}`, scan.table]].find((n) => analyzer.columnsOf(n))
    const columns: readonly CatalogColumn[] = name === undefined ? [] : analyzer.columnsOf(name)!
    return columns.reduce((sum, c) => sum + valueBytes(typeKindOf(c.type), c.name), 0)
  }
  const out: Costed[] = []
  for (const [phase, statements] of phases) {
    let lastGuard: string | undefined
    for (const s of statements) {
      const by: Record<string, number> = {}
      const add = (what: string, bytes: number) => (by[what] = (by[what] ?? 0) + bytes)
      const read = async (sql: string) => {
        const verdict = await analyzer.analyze(s.label, sql, { pruneUnusedColumns: true })
        if (!verdict.ok) throw new Error(`${s.label}: ${verdict.error}`)
        // Per table, its bytes by what its scans read (the open partition and the recent months of one table).
        const perTable = new Map<string, Map<string, number>>()
        for (const scan of tableScans(verdict.resolved, costing.dimension, costing.readFrom)) {
          const [what, rows] = costing.rowsOf(scan)
          let bytes = rows * scan.columns.reduce((sum, c) => sum + valueBytes(c.typeKind, c.name), 0)
          // UPDATE and DELETE also bill every column of the partitions they rewrite.
          if (scan.rewritten) bytes += rows * widthOf(scan)
          const reads = perTable.get(scan.table) ?? new Map<string, number>()
          reads.set(what, (reads.get(what) ?? 0) + bytes)
          perTable.set(scan.table, reads)
        }
        // On-demand pricing bills at least 10 MB per table a query references.
        for (const reads of perTable.values()) {
          const short = MIN_BYTES_PER_TABLE - [...reads.values()].reduce((a, b) => a + b, 0)
          for (const [what, bytes] of reads) add(what, bytes)
          if (short > 0) add([...reads.keys()][0]!, short)
        }
      }
      // A guard is evaluated (once per run of statements it guards) whether or not they run: always run.
      if (s.onlyIf !== undefined && s.onlyIf !== lastGuard) {
        const guard: Record<string, number> = {}
        const before = { ...by }
        await read(`SELECT ${s.onlyIf}`)
        for (const [k, v] of Object.entries(by)) guard[k] = v - (before[k] ?? 0)
        out.push({
          label: `${s.label} (its guard)`,
          phase,
          guarded: false,
          bytes: sum(guard),
          by: guard,
        })
        for (const k of Object.keys(by)) delete by[k]
      }
      lastGuard = s.onlyIf
      await read(s.sql)
      out.push({ label: s.label, phase, guarded: s.onlyIf !== undefined, bytes: sum(by), by })
    }
  }
  return out
}

async function costOf(shape: Shape, depth: number): Promise<Costed[]> {
  const versions = shape.noHistory ? 1 : depth
  analyzer.reset()
  const table = shape.table
  const objects = dimensionObjects(table, DATASET)
  const stage = { schema: DATASET, name: stagingTableName(table.target, BATCH) }
  analyzer.addTable(
    `${PROJECT}.${DATASET}.${stage.name}`,
    shape.staged.map((s) => ({
      name: s.name,
      type: bigQueryColumnType(s.type, { table: 't', column: s.name }),
    })),
  )
  const first = planDimensionLayout(table, BATCH, shape.staged, undefined)
  for (const s of renderMergeScript(bigQuery, mergeRequest(table, first, objects, stage)).ddl)
    await analyzer.analyze(s.label, s.sql)
  const existing = [
    ...layoutColumns(table, shape.staged),
    ...first.derived.map((c) => ({ name: c.name, type: c.type })),
    ...systemTimeColumnList(table),
  ]
  const layout = planDimensionLayout(table, BATCH, shape.staged, existing)
  const script = renderMergeScript(bigQuery, mergeRequest(table, layout, objects, stage))
  return costStatements(
    [
      ['ddl', script.ddl],
      ['merge', script.merge],
      ['after', script.after],
    ],
    {
      dimension: { table: objects.dimension.name, column: table.columns.validTo },
      readFrom: { table: objects.captures?.name ?? '', column: 'captured_at' },
      rowsOf: (scan) => {
        if (scan.table === objects.dimension.name) {
          if (scan.pruned) return ['open partition', KEYS]
          // The partitions from the batch's earliest change on (and the sentinel's, where the open end is one):
          // as for fact loads, a month of closed versions is taken to be about one per key.
          if (scan.readFrom) return ['dimension, recent months', table.openEnd === null ? KEYS : 2 * KEYS]
          return ['whole dimension', KEYS * versions]
        }
        if (scan.table === stage.name) return ['staging table', shape.rows]
        if (scan.table === objects.captures?.name)
          return scan.readFrom ? ['capture log, recent months', KEYS] : ['capture log', KEYS * versions]
        if (scan.table === objects.batches.name) return ['ledger', LEDGER_ROWS]
        if (scan.table === objects.retired?.name) return ['retired versions', 0]
        // One row per table: the highest surrogate key given out (surrogate-keys.ts).
        if (scan.table === objects.keys.name) return ['key record', 1]
        // Temporary tables of the batch: its events, its changes, one row of counts, no late keys.
        if (/stats/.test(scan.table)) return ['batch tables', 1]
        if (/late/.test(scan.table)) return ['batch tables', 0]
        if (/events|type1_before|policy_keys|folded/.test(scan.table)) return ['batch tables', shape.rows]
        return ['batch tables', shape.changes]
      },
    },
  )
}

/**
 * What a fact load costs: the customer dimension (KEYS keys, `depth` versions each) as a merge leaves it, the
 * facts the table holds (STORED_FACTS, and as many in a change feed's log), a batch of FACT_ROWS. A scan of the
 * dimension pinned to the open partition reads KEYS rows; one bounded below by the batch's earliest event time
 * reads the partitions of versions closed from that month on: the batch's facts fall in the last month, in which
 * every key closed one version (as the capture log above), KEYS rows, plus the open partition where the open end
 * is a sentinel (a NULL open end is another partition, read by its own branch); any other reads every version.
 */
async function factCostOf(shape: FactShape, depth: number): Promise<Costed[]> {
  analyzer.reset()
  const dimension = shape.dimension
  const dimensionObjectsOf = dimensionObjects(dimension, DATASET)
  const first = planDimensionLayout(dimension, BATCH, SOURCE, undefined)
  for (const s of renderDimensionDdl(bigQuery, dimension, first, dimensionObjectsOf))
    await analyzer.analyze(s.label, s.sql)
  const flag = inferredColumnName(dimension.columns)
  const inferring = shape.fact.references.some((r) => r.inferred)
  if (inferring) {
    const { ddl } = renderInferredFlagColumn(bigQuery, dimension, dimensionObjectsOf.dimension, flag)
    await analyzer.analyze(ddl.label, ddl.sql)
  }
  const columns = [
    ...first.stored,
    ...metadataColumnList(dimension.columns),
    ...(inferring ? [{ name: flag, type: 'BOOLEAN' }] : []),
  ]
  const stage = { schema: DATASET, name: stagingTableName(shape.fact.target, BATCH) }
  analyzer.addTable(
    `${PROJECT}.${DATASET}.${stage.name}`,
    shape.staged.map((s) => ({
      name: s.name,
      type: bigQueryColumnType(s.type, { table: 't', column: s.name }),
    })),
  )
  const objects = factObjects(shape.fact, DATASET)
  const layout = planFactLayout(shape.fact, BATCH, shape.staged, [{ table: dimension, columns }], undefined)
  const script = renderFactScript(bigQuery, {
    fact: shape.fact,
    layout,
    objects,
    schema: DATASET,
    batchId: BATCH,
    extractedAt: '2024-03-10T14:30:00.000Z',
    appliedAt: '2024-03-10T14:31:02.123456Z',
    mode: 'incremental',
    stage,
  })
  const recentVersions = dimension.openEnd === null ? KEYS : 2 * KEYS
  return costStatements(
    [
      ['ddl', script.ddl],
      ['merge', script.merge],
      ['after', script.after],
    ],
    {
      dimension: { table: dimensionObjectsOf.dimension.name, column: dimension.columns.validTo },
      rowsOf: (scan) => {
        if (scan.table === dimensionObjectsOf.dimension.name) {
          if (scan.pruned) return ['open partition', KEYS]
          if (scan.readFrom) return ['dimension, recent months', recentVersions]
          return ['whole dimension', KEYS * depth]
        }
        if (scan.table === stage.name) return ['staging table', FACT_ROWS]
        if (scan.table === objects.table.name) return ['fact table', STORED_FACTS]
        if (scan.table === objects.changes.name) return ['change log', STORED_FACTS]
        if (scan.table === objects.batches.name) return ['ledger', LEDGER_ROWS]
        if (scan.table === dimensionObjectsOf.keys.name) return ['key record', 1]
        // Temporary tables of the batch: its changes to apply, the keys it infers members of (at most its facts).
        return ['batch tables', FACT_ROWS]
      },
    },
  )
}

const sum = (by: Readonly<Record<string, number>>) => Object.values(by).reduce((a, b) => a + b, 0)

function typeKindOf(type: CatalogColumn['type']): string {
  if (typeof type === 'object') return String((type as { typeKind?: unknown }).typeKind)
  return `TYPE_${type.replace(/\s*\(.*\)\s*$/, '').toUpperCase()}`
}

const GB = 1e9
const gb = (bytes: number) => `${(bytes / GB).toFixed(bytes < GB ? 3 : 2)} GB`

/**
 * Statements that always run and whose cost grows with the depth of history (VERSIONS), by label, each with why.
 * The list only shrinks: a statement not listed fails the test, a listed one no shape renders any more too.
 */
const GROWS_WITH_HISTORY: readonly (readonly [label: string, why: string])[] = [
  [
    'system time: rows known now of the keys the batch can touch',
    'bitemporal: the rows known now of every key the batch touches are kept to compare after the merge (all their versions)',
  ],
  ['system time: close superseded rows', 'bitemporal: compares those rows with the versions after the merge'],
  [
    'system time: check one current version per key',
    'bitemporal: counts the current versions of the touched keys among the rows known now (every version of every key)',
  ],
  [
    'keys of customers to infer members of',
    'facts inferring members: a key that ever had a version (all of them closed long ago) gets no placeholder, so the key of every version is read',
  ],
  [
    'report counts',
    'facts inferring members: the placeholders the batch created are counted by batch id in every version (the report also answers a retry after COMMIT, when they may have been closed)',
  ],
]

/**
 * Checks what a script costs at VERSIONS and at 10 × VERSIONS versions per key: what always runs costs the same
 * (except the statements listed in GROWS_WITH_HISTORY, noted in `seen`); prints the summary and every statement
 * with DIMSYNC_COST_TABLE=1. Returns the statements that always run.
 */
function checkAndReport(title: string, costs: Costed[], deeper: Costed[], seen: Set<string>): Costed[] {
  const always = costs.filter((c) => !c.guarded)
  const guarded = costs.filter((c) => c.guarded)
  const count = (phase: Costed['phase']) =>
    costs.filter((c) => c.phase === phase && !c.label.endsWith('(its guard)')).length
  const totals = (list: readonly Costed[]) => {
    const by: Record<string, number> = {}
    for (const c of list) for (const [k, v] of Object.entries(c.by)) by[k] = (by[k] ?? 0) + v
    return Object.entries(by)
      .filter(([, v]) => v >= GB / 2000)
      .map(([k, v]) => `${k} ${gb(v)}`)
      .join(', ')
  }
  const total = (list: readonly Costed[]) => gb(list.reduce((a, c) => a + c.bytes, 0))
  const summary =
    `${title}: statements ${count('ddl')} / ${count('merge')} / ${count('after')}; ` +
    `always run ${total(always)} (${totals(always)}); ` +
    `at ${VERSIONS * 10} versions per key ${total(deeper.filter((c) => !c.guarded))}; ` +
    `guarded ${guarded.length} statements, ${total(guarded)} if they run (${totals(guarded)})`
  if (process.env.DIMSYNC_COST_TABLE) {
    console.log(summary)
    for (const c of costs)
      if (c.bytes > 0)
        console.log(
          `  ${c.phase.padEnd(5)} ${c.guarded ? 'guarded' : 'always '} ${gb(c.bytes).padStart(10)}  ${c.label}`,
        )
  }
  // The cost of what always runs does not grow with history, except the statements listed.
  const grows = costs.filter((c, i) => !c.guarded && deeper[i]!.bytes !== c.bytes).map((c) => c.label)
  for (const label of grows) seen.add(label)
  expect(grows.filter((label) => !GROWS_WITH_HISTORY.some(([l]) => l === label))).toEqual([])
  return always
}

describe('what a merge reads on BigQuery, computed from the resolved statements (1M keys)', () => {
  const seen = new Set<string>()

  it.each(SHAPES.map((s) => [s.title, s] as const))('%s', async (_title, shape) => {
    const always = checkAndReport(
      shape.title,
      await costOf(shape, VERSIONS),
      await costOf(shape, VERSIONS * 10),
      seen,
    )
    // The open partition is what a merge reads, whatever the depth of history: the whole dimension is read only
    // by the statements listed above and by guarded ones.
    // (A bitemporal table is partitioned by system time: it reads the rows known now, of every version.)
    if (shape.table.systemTime === undefined)
      expect(always.some((c) => (c.by['open partition'] ?? 0) > 0)).toBe(true)
  })

  it.each(FACT_SHAPES.map((s) => [s.title, s] as const))('%s', async (_title, shape) => {
    const always = checkAndReport(
      shape.title,
      await factCostOf(shape, VERSIONS),
      await factCostOf(shape, VERSIONS * 10),
      seen,
    )
    // The facts are joined to the versions not ended by the batch's earliest event, not to the whole history.
    const join = always.find(
      (c) => c.label === 'insert facts keyed to the versions true at their event time',
    )!
    expect(join.by['whole dimension']).toBeUndefined()
    expect((join.by['open partition'] ?? 0) + (join.by['dimension, recent months'] ?? 0)).toBeGreaterThan(0)
  })

  it('every statement listed as growing with history still does (remove the ones that do not)', () => {
    expect(GROWS_WITH_HISTORY.map(([label]) => label).filter((label) => !seen.has(label))).toEqual([])
  })
})
