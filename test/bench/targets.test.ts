import { readFileSync } from 'node:fs'
import { join } from 'node:path'

import { describe, expect, it } from 'vitest'

import {
  mergeLatest,
  meetsTarget,
  renderTargetsTable,
  replaceTargetsTable,
  TARGETS,
  type RunContext,
} from '../../bench/targets.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const RESULTS = join(ROOT, 'bench', 'results')
const context: RunContext = { at: '2026-12-04T21:00:00.000Z', node: 'v22.23.3', loadAverage: [3.5, 4, 4.2] }
const later: RunContext = { ...context, at: '2026-12-04T22:00:00.000Z' }

const cli = { nodeSeconds: 0.02, versionSeconds: 0.025, validateSeconds: 0.33, validateWorkSeconds: 0.3 }
const merge = {
  dimsyncSeconds: 1.1,
  handWrittenSeconds: 1.5,
  dimsyncStatementsSeconds: 0.9,
  dimsyncDepth10StatementsSeconds: 0.93,
}
const firstLoad = (sizes: readonly number[]) => ({
  runs: sizes.map((keys) => ({
    keys,
    dimsyncSeconds: keys / 500_000,
    handWrittenSeconds: keys / 400_000,
    handWrittenKeysApartSeconds: keys / 450_000,
  })),
})
const client = (command: string) => ({
  clientDump: { command, seconds: 1.2 },
  extractShareOfClientDump: 0.75,
  extract: { seconds: 1.6 },
  dimsyncRun: { seconds: 4.8, maxRssMb: 260 },
})
const sources = { postgres: client('psql'), mysql: client('mariadb --quick') }

describe('the targets of latest.json', () => {
  it("are the issue's stable keys, each measured by a benchmark of npm run bench", () => {
    expect(Object.keys(TARGETS).sort()).toEqual([
      'cli.validateRatioToWork',
      'cli.versionRatioToNode',
      'firstLoad.ratioToCtas',
      'firstLoad10M.peakRssMb',
      'firstLoad10M.ratioToCtas',
      'merge.depthRatio',
      'merge.ratioToHandWritten',
      'mysql.extractShareOfClient',
      'mysql.firstRunRatioToClient',
      'postgres.extractShareOfPsql',
      'postgres.firstRunRatioToPsql',
    ])
    for (const definition of Object.values(TARGETS))
      expect(definition.command).toBe(
        definition.command.startsWith('BENCH_MEMORY_ROWS=')
          ? `BENCH_MEMORY_ROWS=10000000 BENCH_ONLY=${definition.bench} npm run bench`
          : `BENCH_ONLY=${definition.bench} npm run bench`,
      )
  })

  it('a run writes its figures with their baselines, target and run; the ratio is of the figures written', () => {
    const latest = mergeLatest({}, 'cli', cli, context)
    expect(latest.cli).toEqual(cli)
    expect(latest.targets).toEqual({
      'cli.validateRatioToWork': {
        value: 0.33 / 0.3,
        dimsync: { what: 'dimsync validate on the quickstart', seconds: 0.33 },
        baseline: { what: "validate's work alone in a bare Node process", seconds: 0.3 },
        target: { atMost: 1.5 },
        meetsTarget: true,
        command: 'BENCH_ONLY=cli npm run bench',
        measured: context,
      },
      'cli.versionRatioToNode': {
        value: 0.025 / 0.02,
        dimsync: { what: 'dimsync --version', seconds: 0.025 },
        baseline: { what: 'node -e 0', seconds: 0.02 },
        target: { atMost: 1.5 },
        meetsTarget: true,
        command: 'BENCH_ONLY=cli npm run bench',
        measured: context,
      },
    })
  })

  it('one benchmark (BENCH_ONLY) replaces its own section and targets only', () => {
    let latest = mergeLatest({ notes: 'kept' }, 'cli', cli, context)
    latest = mergeLatest(latest, 'firstLoad', firstLoad([1_000_000, 10_000_000]), context)
    latest = mergeLatest(latest, 'sources', sources, context)
    const before = latest.targets as Record<string, { measured: RunContext; value: number }>
    const slower = { ...merge, dimsyncSeconds: 1.6 }
    const after = mergeLatest(latest, 'merge', slower, later)
    const targets = after.targets as Record<string, { measured: RunContext; value: number }>
    expect(Object.keys(targets).sort()).toEqual(
      Object.keys(TARGETS)
        .filter((key) => key !== 'firstLoad10M.peakRssMb')
        .sort(),
    )
    for (const [key, figure] of Object.entries(targets)) {
      if (key.startsWith('merge.')) expect(figure.measured).toEqual(later)
      else expect(figure).toEqual(before[key])
    }
    expect(targets['merge.ratioToHandWritten']!.value).toBe(1.6 / 1.5)
    expect(after).toMatchObject({ notes: 'kept', cli, sources, merge: slower })
  })

  it('a target the run did not measure keeps its previous figure', () => {
    const both = mergeLatest({}, 'firstLoad', firstLoad([1_000_000, 10_000_000]), context)
    const scaledDown = mergeLatest(both, 'firstLoad', firstLoad([1_000_000]), later)
    const targets = scaledDown.targets as Record<string, { measured: RunContext }>
    expect(targets['firstLoad10M.ratioToCtas']).toEqual(
      (both.targets as Record<string, unknown>)['firstLoad10M.ratioToCtas'],
    )
    expect(targets['firstLoad.ratioToCtas']!.measured).toEqual(later)

    // A server that did not answer: its figures stay.
    const withoutMysql = mergeLatest(
      mergeLatest({}, 'sources', sources, context),
      'sources',
      { postgres: sources.postgres },
      later,
    )
    const sourceTargets = withoutMysql.targets as Record<string, { measured: RunContext }>
    expect(sourceTargets['mysql.extractShareOfClient']!.measured).toEqual(context)
    expect(sourceTargets['postgres.extractShareOfPsql']!.measured).toEqual(later)
  })

  it('a first load is held to the faster of the two hand-written CTAS; a 10M peak only from a 10M run', () => {
    const latest = mergeLatest({}, 'firstLoad', firstLoad([1_000_000]), context)
    const figure = (latest.targets as Record<string, { value: number; baseline: { seconds: number } }>)[
      'firstLoad.ratioToCtas'
    ]!
    expect(figure.baseline.seconds).toBe(1_000_000 / 450_000)
    expect(figure.value).toBeCloseTo(450_000 / 500_000, 12)

    const oneMillion = { rows: 1_000_000, summary: { 'file first defaults': { peakMb: 250 } } }
    expect(mergeLatest({}, 'runMemory', oneMillion, context).targets).toEqual({})
    const tenMillion = {
      rows: 10_000_000,
      summary: { 'file first defaults': { peakMb: 277 }, 'postgres first defaults': { peakMb: 293 } },
    }
    const peak = (mergeLatest({}, 'runMemory', tenMillion, context).targets as Record<string, unknown>)[
      'firstLoad10M.peakRssMb'
    ]
    expect(peak).toMatchObject({ value: 293, meetsTarget: true, target: { atMost: 300 } })
  })

  it('a damaged file starts over; a target is met at its bound and not past it', () => {
    expect(mergeLatest('not an object', 'merge', merge, context)).toMatchObject({ merge })
    expect(meetsTarget({ value: 1.5, target: { atMost: 1.5 } })).toBe(true)
    expect(meetsTarget({ value: 1.51, target: { atMost: 1.5 } })).toBe(false)
    expect(meetsTarget({ value: 0.9, target: { atLeast: 0.9 } })).toBe(true)
    expect(meetsTarget({ value: 0.89, target: { atLeast: 0.9 } })).toBe(false)
  })

  it("reads its targets from each benchmark's result as the benchmark writes it (bench/results)", () => {
    const latest = JSON.parse(readFileSync(join(RESULTS, 'latest.json'), 'utf8')) as Record<string, unknown>
    const tenMillion = JSON.parse(readFileSync(join(RESULTS, 'run-memory-10000000.json'), 'utf8')) as unknown
    const results: Record<string, unknown> = { ...latest, runMemory: tenMillion }
    const targets = latest.targets as Record<string, { value: number }>
    // A benchmark run scaled down (BENCH_FIRST_LOAD_KEYS=1000000) holds some of its targets only: each result
    // gives at least one, and every target has a figure.
    for (const bench of new Set(Object.values(TARGETS).map((definition) => definition.bench))) {
      const read = Object.entries(TARGETS).filter(
        ([, definition]) =>
          definition.bench === bench &&
          definition.read(results[bench] as Record<string, unknown>) !== undefined,
      )
      expect(read.length, bench).toBeGreaterThan(0)
    }
    for (const key of Object.keys(TARGETS)) expect(typeof targets[key]?.value, key).toBe('number')
  })

  it('docs/benchmarks.md shows the figures latest.json holds (bench/targets-table.ts writes them)', () => {
    const latest = JSON.parse(readFileSync(join(RESULTS, 'latest.json'), 'utf8')) as {
      targets: Record<string, unknown>
    }
    const docs = readFileSync(join(ROOT, 'docs', 'benchmarks.md'), 'utf8')
    const table = renderTargetsTable(latest.targets)
    expect(docs).toContain(table)
    for (const key of Object.keys(TARGETS)) expect(table).toContain(`| \`${key}\``)
    // A run that changed a figure changes the table.
    const changed = structuredClone(latest.targets) as Record<string, { value: number }>
    changed['cli.versionRatioToNode']!.value += 1
    expect(replaceTargetsTable(docs, renderTargetsTable(changed))).not.toBe(docs)
  })
})
