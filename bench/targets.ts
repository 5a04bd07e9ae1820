/**
 * The figures dimsync is held to, under stable keys in bench/results/latest.json (`targets`): each with its latest
 * value, the baseline it was measured against in the same run, the target and the command that measures it.
 * docs/benchmarks.md is the table of them. Pure: reading and writing the file is bench/support.ts's.
 */

/** The benchmarks of `npm run bench` (BENCH_ONLY names) that measure a target. */
export type BenchName = 'firstLoad' | 'merge' | 'sources' | 'runMemory' | 'cli'

export type TargetKey =
  | 'firstLoad.ratioToCtas'
  | 'firstLoad10M.ratioToCtas'
  | 'firstLoad10M.peakRssMb'
  | 'postgres.extractShareOfPsql'
  | 'postgres.firstRunRatioToPsql'
  | 'mysql.extractShareOfClient'
  | 'mysql.firstRunRatioToClient'
  | 'merge.ratioToHandWritten'
  | 'merge.depthRatio'
  | 'cli.versionRatioToNode'
  | 'cli.validateRatioToWork'

/** A measurement: dimsync's or its baseline's. */
export interface Measurement {
  readonly what: string
  readonly seconds?: number
  readonly peakRssMb?: number
}

export interface TargetFigure {
  /** dimsync's figure: a ratio of times or rates, or a peak in MB. */
  readonly value: number
  readonly target: { readonly atMost: number } | { readonly atLeast: number }
  readonly dimsync: Measurement
  /** What the figure is relative to, measured in the same run (none for a peak held to a fixed bound). */
  readonly baseline?: Measurement
  readonly command: string
}

/** What the run that measured a figure was: when, on which Node, and how busy the machine was. */
export interface RunContext {
  readonly at: string
  readonly node: string
  readonly loadAverage: readonly number[]
}

type Reader = (result: Record<string, unknown>) => Omit<TargetFigure, 'target' | 'command'> | undefined

interface TargetDefinition {
  readonly bench: BenchName
  readonly target: TargetFigure['target']
  readonly command: string
  readonly read: Reader
}

const number = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined
const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined

/** A first load of `keys` against the faster of the two hand-written CTAS (bench/first-load.ts). */
function firstLoadAgainstCtas(keys: number): Reader {
  return (result) => {
    const runs = Array.isArray(result.runs) ? result.runs.map(record) : []
    const run = runs.find((r) => r?.keys === keys)
    const dimsync = number(run?.dimsyncSeconds)
    const window = number(run?.handWrittenSeconds)
    const apart = number(run?.handWrittenKeysApartSeconds)
    if (dimsync === undefined || window === undefined || apart === undefined) return undefined
    const baseline =
      apart <= window
        ? { what: 'hand-written CTAS numbering the keys apart, to close', seconds: apart }
        : { what: 'hand-written CTAS, row_number() over the keys, to close', seconds: window }
    return {
      value: dimsync / baseline.seconds,
      dimsync: { what: `first load of ${keys / 1_000_000}M keys, to close`, seconds: dimsync },
      baseline,
    }
  }
}

/** A source's extract (as a share of the client's rate) or first run (as a multiple of its time), bench/sources.ts. */
function againstClient(server: 'postgres' | 'mysql', figure: 'extract' | 'firstRun'): Reader {
  return (result) => {
    const summary = record(result[server])
    const client = record(summary?.clientDump)
    const clientSeconds = number(client?.seconds)
    if (clientSeconds === undefined || clientSeconds === 0) return undefined
    const baseline = { what: String(client?.command), seconds: clientSeconds }
    if (figure === 'extract') {
      const share = number(summary?.extractShareOfClientDump)
      const seconds = number(record(summary?.extract)?.seconds)
      if (share === undefined) return undefined
      return { value: share, dimsync: { what: 'extract of 1M rows', seconds }, baseline }
    }
    const run = record(summary?.dimsyncRun)
    const seconds = number(run?.seconds)
    if (seconds === undefined) return undefined
    return {
      value: seconds / clientSeconds,
      dimsync: { what: 'dimsync run, first run of 1M rows', seconds, peakRssMb: number(run?.maxRssMb) },
      baseline,
    }
  }
}

const SOURCES_COMMAND = 'BENCH_ONLY=sources npm run bench'

export const TARGETS: Readonly<Record<TargetKey, TargetDefinition>> = {
  'firstLoad.ratioToCtas': {
    bench: 'firstLoad',
    target: { atMost: 1.0 },
    command: 'BENCH_ONLY=firstLoad npm run bench',
    read: firstLoadAgainstCtas(1_000_000),
  },
  'firstLoad10M.ratioToCtas': {
    bench: 'firstLoad',
    target: { atMost: 1.0 },
    command: 'BENCH_ONLY=firstLoad npm run bench',
    read: firstLoadAgainstCtas(10_000_000),
  },
  'firstLoad10M.peakRssMb': {
    bench: 'runMemory',
    target: { atMost: 300 },
    command: 'BENCH_MEMORY_ROWS=10000000 BENCH_ONLY=runMemory npm run bench',
    read: (result) => {
      if (result.rows !== 10_000_000) return undefined
      const summary = record(result.summary)
      const peaks = ['file first defaults', 'postgres first defaults'].flatMap((name) => {
        const peak = number(record(summary?.[name])?.peakMb)
        return peak === undefined ? [] : [{ name, peak }]
      })
      if (peaks.length === 0) return undefined
      const highest = peaks.reduce((a, b) => (b.peak > a.peak ? b : a))
      return {
        value: highest.peak,
        dimsync: {
          what: `dimsync run, first load of 10M rows (${highest.name.split(' ')[0]} source)`,
          peakRssMb: highest.peak,
        },
      }
    },
  },
  'postgres.extractShareOfPsql': {
    bench: 'sources',
    target: { atLeast: 0.9 },
    command: SOURCES_COMMAND,
    read: againstClient('postgres', 'extract'),
  },
  'postgres.firstRunRatioToPsql': {
    bench: 'sources',
    target: { atMost: 2.0 },
    command: SOURCES_COMMAND,
    read: againstClient('postgres', 'firstRun'),
  },
  'mysql.extractShareOfClient': {
    bench: 'sources',
    target: { atLeast: 0.8 },
    command: SOURCES_COMMAND,
    read: againstClient('mysql', 'extract'),
  },
  'mysql.firstRunRatioToClient': {
    bench: 'sources',
    target: { atMost: 2.0 },
    command: SOURCES_COMMAND,
    read: againstClient('mysql', 'firstRun'),
  },
  'merge.ratioToHandWritten': {
    bench: 'merge',
    target: { atMost: 0.8 },
    command: 'BENCH_ONLY=merge npm run bench',
    read: (result) => {
      const dimsync = number(result.dimsyncSeconds)
      const hand = number(result.handWrittenSeconds)
      if (dimsync === undefined || hand === undefined) return undefined
      return {
        value: dimsync / hand,
        dimsync: { what: 'merge of a 1M-key snapshot, 5% changed, to close', seconds: dimsync },
        baseline: { what: 'hand-written UPDATE + INSERT, to close', seconds: hand },
      }
    },
  },
  'merge.depthRatio': {
    bench: 'merge',
    target: { atMost: 1.05 },
    command: 'BENCH_ONLY=merge npm run bench',
    read: (result) => {
      // Its statements: closing the file copies it whole, a cost of the file's size (docs/benchmarks.md).
      const deep = number(result.dimsyncDepth10StatementsSeconds)
      const shallow = number(result.dimsyncStatementsSeconds)
      if (deep === undefined || shallow === undefined) return undefined
      return {
        value: deep / shallow,
        dimsync: { what: 'the same merge at 10 versions per key, its statements', seconds: deep },
        baseline: { what: 'the same merge at 1 version per key, its statements', seconds: shallow },
      }
    },
  },
  'cli.versionRatioToNode': {
    bench: 'cli',
    target: { atMost: 1.5 },
    command: 'BENCH_ONLY=cli npm run bench',
    read: (result) => {
      const version = number(result.versionSeconds)
      const node = number(result.nodeSeconds)
      if (version === undefined || node === undefined) return undefined
      return {
        value: version / node,
        dimsync: { what: 'dimsync --version', seconds: version },
        baseline: { what: 'node -e 0', seconds: node },
      }
    },
  },
  'cli.validateRatioToWork': {
    bench: 'cli',
    target: { atMost: 1.5 },
    command: 'BENCH_ONLY=cli npm run bench',
    read: (result) => {
      const validate = number(result.validateSeconds)
      const work = number(result.validateWorkSeconds)
      if (validate === undefined || work === undefined) return undefined
      return {
        value: validate / work,
        dimsync: { what: 'dimsync validate on the quickstart', seconds: validate },
        baseline: { what: "validate's work alone in a bare Node process", seconds: work },
      }
    },
  },
}

/** Whether `figure` meets its target. */
export function meetsTarget(figure: Pick<TargetFigure, 'value' | 'target'>): boolean {
  return 'atMost' in figure.target
    ? figure.value <= figure.target.atMost
    : figure.value >= figure.target.atLeast
}

/**
 * latest.json after a run of `bench`: its section replaced by `result`, and the targets it measures updated
 * (each with the run's context); every other section and target kept as it was. A target the result does not hold
 * (a benchmark scaled down, a server that did not answer) keeps its previous figure.
 */
export function mergeLatest(
  previous: unknown,
  bench: string,
  result: unknown,
  context: RunContext,
): Record<string, unknown> {
  const latest: Record<string, unknown> = { ...(record(previous) ?? {}) }
  latest[bench] = result
  const targets: Record<string, unknown> = { ...(record(latest.targets) ?? {}) }
  const measured = record(result)
  if (measured !== undefined) {
    for (const [key, definition] of Object.entries(TARGETS)) {
      if (definition.bench !== bench) continue
      const figure = definition.read(measured)
      if (figure === undefined) continue
      targets[key] = {
        ...figure,
        target: definition.target,
        meetsTarget: meetsTarget({ value: figure.value, target: definition.target }),
        command: definition.command,
        measured: context,
      }
    }
  }
  latest.targets = Object.fromEntries(Object.entries(targets).sort(([a], [b]) => a.localeCompare(b)))
  latest.machine = { node: context.node, at: context.at }
  return latest
}

const TABLE_START =
  '<!-- targets: bench/targets-table.ts writes this table from bench/results/latest.json -->'
const TABLE_END = '<!-- /targets -->'

const seconds = (value: number | undefined) =>
  value === undefined ? '' : value < 1 ? `${Math.round(value * 1000)} ms` : `${value.toFixed(2)} s`

/** One measurement as a table cell: what was measured and its time or peak. */
function describeMeasurement(measurement: Measurement | undefined): string {
  if (measurement === undefined) return '(a fixed bound)'
  const parts = [seconds(measurement.seconds)]
  if (measurement.peakRssMb !== undefined) parts.push(`peak ${Math.round(measurement.peakRssMb)} MB`)
  return `${measurement.what.replaceAll('|', '\\|')}: ${parts.filter((part) => part !== '').join(', ')}`
}

const describeTarget = (target: TargetFigure['target'], unit: string) =>
  'atMost' in target ? `≤ ${target.atMost}${unit}` : `≥ ${target.atLeast}${unit}`

/** Rows of a Markdown table, padded as Prettier pads them. */
function markdownTable(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, column) => Math.max(3, ...rows.map((row) => row[column]!.length)))
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`
  return [line(rows[0]!), line(widths.map((width) => '-'.repeat(width))), ...rows.slice(1).map(line)].join(
    '\n',
  )
}

/**
 * The table of the latest figures in docs/benchmarks.md, between its markers: one row per target of `latest`
 * (latest.json's `targets`), in key order.
 */
export function renderTargetsTable(targets: Readonly<Record<string, unknown>>): string {
  const rows = Object.keys(TARGETS)
    .sort()
    .flatMap((key) => {
      const figure = record(targets[key]) as
        (TargetFigure & { meetsTarget: boolean; measured: RunContext }) | undefined
      if (figure === undefined) return []
      const unit = key.endsWith('peakRssMb') ? ' MB' : 'x'
      const value = unit === 'x' ? figure.value.toFixed(2) : String(Math.round(figure.value))
      const load = figure.measured.loadAverage.length ? `, load ${figure.measured.loadAverage[0]}` : ''
      return [
        [
          `\`${key}\``,
          `${value}${unit}${figure.meetsTarget ? '' : ' (not met)'}`,
          describeTarget(figure.target, unit),
          describeMeasurement(figure.dimsync),
          describeMeasurement(figure.baseline),
          `\`${figure.command}\``,
          `${figure.measured.at.slice(0, 10)}${load}`,
        ],
      ]
    })
  const table = markdownTable([
    ['key', 'latest', 'target', 'dimsync', 'baseline (same run)', 'command', 'measured'],
    ...rows,
  ])
  return `${TABLE_START}\n\n${table}\n\n${TABLE_END}`
}

/** `document` with the table between its markers replaced by `table`; undefined when it has no markers. */
export function replaceTargetsTable(document: string, table: string): string | undefined {
  const start = document.indexOf(TABLE_START)
  const end = document.indexOf(TABLE_END)
  if (start < 0 || end < start) return undefined
  return document.slice(0, start) + table + document.slice(end + TABLE_END.length)
}
