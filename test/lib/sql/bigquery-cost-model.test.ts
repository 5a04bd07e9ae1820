import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import { planDimensionLayout, systemTimeColumnList } from '../../../lib/core/dimension-layout.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { bigQueryColumnType } from '../../../lib/sql/bigquery/bigquery-types.ts'
import type { CompiledStatement } from '../../../lib/sql/dialect.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import { renderMergeScript, stagingTableName } from '../../../lib/sql/render-merge-script.ts'
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
 * month on, KEYS rows; any other reads them all. Run with DIMSYNC_COST_TABLE=1 to print the per-statement table
 * that docs/bigquery.md quotes.
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
  const validTo = table.columns.validTo
  const rowsOf = (scan: TableScan): [what: string, rows: number] => {
    if (scan.table === objects.dimension.name)
      return scan.pruned ? ['open partition', KEYS] : ['whole dimension', KEYS * versions]
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
  }
  const widthOf = (scan: TableScan): number => {
    const name = [...[`${PROJECT}.${DATASET}.${scan.table}`, scan.table]].find((n) => analyzer.columnsOf(n))
    const columns: readonly CatalogColumn[] = name === undefined ? [] : analyzer.columnsOf(name)!
    return columns.reduce((sum, c) => sum + valueBytes(typeKindOf(c.type), c.name), 0)
  }
  const out: Costed[] = []
  const phases = [
    ['ddl', script.ddl],
    ['merge', script.merge],
    ['after', script.after],
  ] as const
  for (const [phase, statements] of phases) {
    let lastGuard: string | undefined
    for (const s of statements as readonly CompiledStatement[]) {
      const by: Record<string, number> = {}
      const add = (what: string, bytes: number) => (by[what] = (by[what] ?? 0) + bytes)
      const read = async (sql: string) => {
        const verdict = await analyzer.analyze(s.label, sql, { pruneUnusedColumns: true })
        if (!verdict.ok) throw new Error(`${s.label}: ${verdict.error}`)
        const dimension = { table: objects.dimension.name, column: validTo }
        const captures = { table: objects.captures?.name ?? '', column: 'captured_at' }
        const perTable = new Map<string, { what: string; bytes: number }>()
        for (const scan of tableScans(verdict.resolved, dimension, captures)) {
          const [what, rows] = rowsOf(scan)
          let bytes = rows * scan.columns.reduce((sum, c) => sum + valueBytes(c.typeKind, c.name), 0)
          // UPDATE and DELETE also bill every column of the partitions they rewrite.
          if (scan.rewritten) bytes += rows * widthOf(scan)
          const seen = perTable.get(scan.table)
          perTable.set(scan.table, { what, bytes: (seen?.bytes ?? 0) + bytes })
        }
        // On-demand pricing bills at least 10 MB per table a query references.
        for (const { what, bytes } of perTable.values()) add(what, Math.max(bytes, MIN_BYTES_PER_TABLE))
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
]

describe('what a merge reads on BigQuery, computed from the resolved statements (1M keys)', () => {
  const seen = new Set<string>()

  it.each(SHAPES.map((s) => [s.title, s] as const))('%s', async (_title, shape) => {
    const costs = await costOf(shape, VERSIONS)
    const deeper = await costOf(shape, VERSIONS * 10)
    // The cost of what always runs does not grow with history, except the statements listed.
    const grows = costs.filter((c, i) => !c.guarded && deeper[i]!.bytes !== c.bytes).map((c) => c.label)
    for (const label of grows) seen.add(label)
    expect(grows.filter((label) => !GROWS_WITH_HISTORY.some(([l]) => l === label))).toEqual([])

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
    const summary =
      `${shape.title}: statements ${count('ddl')} / ${count('merge')} / ${count('after')}; ` +
      `always run ${gb(sum(Object.fromEntries(always.map((c, i) => [i, c.bytes]))))} (${totals(always)}); ` +
      `at ${VERSIONS * 10} versions per key ${gb(sum(Object.fromEntries(deeper.filter((c) => !c.guarded).map((c, i) => [i, c.bytes]))))}; ` +
      `guarded ${guarded.length} statements, ${gb(sum(Object.fromEntries(guarded.map((c, i) => [i, c.bytes]))))} if they run (${totals(guarded)})`
    if (process.env.DIMSYNC_COST_TABLE) {
      console.log(summary)
      for (const c of costs)
        if (c.bytes > 0)
          console.log(
            `  ${c.phase.padEnd(5)} ${c.guarded ? 'guarded' : 'always '} ${gb(c.bytes).padStart(10)}  ${c.label}`,
          )
    }
    // The open partition is what a merge reads, whatever the depth of history: the whole dimension is read only
    // by the statements listed above and by guarded ones.
    // (A bitemporal table is partitioned by system time: it reads the rows known now, of every version.)
    if (shape.table.systemTime === undefined)
      expect(always.some((c) => (c.by['open partition'] ?? 0) > 0)).toBe(true)
  })

  it('every statement listed as growing with history still does (remove the ones that do not)', () => {
    expect(GROWS_WITH_HISTORY.map(([label]) => label).filter((label) => !seen.has(label))).toEqual([])
  })
})
