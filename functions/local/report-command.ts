/**
 * `dimsync report` and `dimsync history --format html`: read the aggregates (lib/use-cases/read-report.ts), build
 * the page (report-page.ts) with the chart library read from its npm package, and write it.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { resolve } from 'node:path'

import { DimsyncError } from '../../lib/core/errors.ts'
import type { ProjectSpec, TableSpec } from '../../lib/core/table-spec.ts'
import type { StoreOverrides } from '../../lib/runtime/store-overrides.ts'
import { readKeyTimeline, readReport } from '../../lib/use-cases/read-report.ts'
import { withProject } from './commands.ts'
import { factHasNoHistory, factNamed } from './fact-runs.ts'
import { renderReportPage, type ChartAssets } from './report-page.ts'

/** The chart library the page inlines: uPlot's browser build and its stylesheet, from the installed package. */
export function chartAssets(): ChartAssets {
  const require = createRequire(import.meta.url)
  const read = (file: string) => readFileSync(require.resolve(`uplot/${file}`), 'utf8')
  const { version } = JSON.parse(read('package.json')) as { version: string }
  return {
    script: `/* uPlot ${version}, MIT License, Copyright (c) 2022 Leon Sorokin */\n${read('dist/uPlot.iife.min.js')}`,
    style: read('dist/uPlot.min.css'),
  }
}

/** `dimsync report`. */
export async function report(
  opts: { config: string; table?: string; key?: string; out: string } & StoreOverrides,
): Promise<void> {
  await withProject(
    opts.config,
    async (project, deps, reporter) => {
      const warehouse = await deps.openWarehouseForReading()
      const data = await readReport(
        { warehouse, state: deps.state },
        {
          project,
          schema: project.warehouse.schema,
          only: opts.table,
          key: opts.key,
          now: new Date(),
        },
      )
      const page = renderReportPage(data, chartAssets())
      const out = resolve(opts.out)
      try {
        writeFileSync(out, page)
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error)
        throw new DimsyncError(
          `report: cannot write ${out}: ${why}; nothing was written (--out names another file)`,
        )
      }
      const sections = [
        `${data.dimensions.length} table(s)`,
        `${data.facts.length} fact table(s)`,
        ...(data.timeline ? [`key ${data.timeline.key} of ${data.timeline.table}`] : []),
      ]
      reporter.summary(
        `report written to ${opts.out}: ${sections.join(', ')}, ${Math.ceil(page.length / 1024)} KB`,
      )
    },
    opts,
  )
}

/** `dimsync history <table> --key K --format html`: the key's timeline as a page on stdout. */
export async function historyHtml(
  name: string,
  opts: { config: string; key?: string; asOf?: Date; knownAt?: Date },
): Promise<void> {
  if (opts.key === undefined)
    throw new DimsyncError('history --format html draws one key: add --key (for example --key 101)')
  if (opts.asOf !== undefined || opts.knownAt !== undefined)
    throw new DimsyncError(
      'history --format html draws every version of the key on both time axes; --as-of and --known-at are for the table, csv and json formats',
    )
  await withProject(opts.config, async (project, deps) => {
    const table = dimensionNamed(project, name)
    const warehouse = await deps.openWarehouseForReading()
    const timeline = await readKeyTimeline(warehouse, {
      table,
      schema: project.warehouse.schema,
      key: opts.key!,
    })
    const page = renderReportPage(
      {
        config: project.configPath,
        warehouse: project.warehouse.type,
        generatedAt: new Date().toISOString(),
        dimensions: [],
        facts: [],
        timeline,
      },
      undefined,
    )
    process.stdout.write(page)
  })
}

function dimensionNamed(project: ProjectSpec, name: string): TableSpec {
  const fact = factNamed(project, name)
  if (fact !== undefined) throw new DimsyncError(factHasNoHistory(fact))
  const table = project.tables.find((t) => t.name === name)
  if (table === undefined)
    throw new DimsyncError(
      `table ${name} is not in ${project.configPath} (tables: ${project.tables.map((t) => t.name).join(', ')})`,
    )
  return table
}
