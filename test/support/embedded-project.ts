import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { parseProject } from '../../lib/config/index.ts'
import type { ProjectSpec } from '../../lib/core/table-spec.ts'
import { buildLocalDeps, type LocalDeps } from '../../lib/runtime/local-deps.ts'
import type { RunEvent } from '../../lib/use-cases/run-event.ts'

/** A dimsync project in a temporary folder, with the CLI's adapters (local staging and state, DuckDB). */
export interface EmbeddedProject {
  readonly dir: string
  readonly project: ProjectSpec
  readonly deps: LocalDeps
  /** Every event the use cases reported, in order. */
  readonly events: RunEvent[]
  /** Writes `name` in the project folder: a header line, then one line per row. */
  writeCsv(name: string, header: string, rows: readonly string[]): void
  dispose(): Promise<void>
}

/** Creates the folder, writes `yaml` as its dimsync.yaml and builds the adapters. */
export async function makeEmbeddedProject(
  yaml: string,
  prefix = 'dimsync-project-',
): Promise<EmbeddedProject> {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  const configPath = join(dir, 'dimsync.yaml')
  writeFileSync(configPath, yaml)
  const project = parseProject(yaml, configPath)
  const events: RunEvent[] = []
  const deps = await buildLocalDeps(project, (event) => events.push(event))
  return {
    dir,
    project,
    deps,
    events,
    writeCsv: (name, header, rows) => writeFileSync(join(dir, name), [header, ...rows].join('\n') + '\n'),
    dispose: async () => {
      await deps.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** dimsync.yaml with one table, `customers`, read from customers.csv and keyed on customer_id, plus `options`. */
export function customersYaml(...options: string[]): string {
  return [
    'version: 1',
    'tables:',
    '  - name: customers',
    '    source: { type: file, path: customers.csv }',
    '    key: customer_id',
    ...options.map((option) => `    ${option}`),
    '',
  ].join('\n')
}
