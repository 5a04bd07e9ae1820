import { LocalStagingStore } from '../adapters/staging/local-staging-store.ts'
import { LocalStateStore } from '../adapters/state/local-state-store.ts'
import { DuckDbWarehouse } from '../adapters/warehouse/duckdb-warehouse.ts'
import { assertTableMatchesSource } from '../config/index.ts'
import type { ProjectSpec } from '../core/table-spec.ts'
import { openSource } from './open-source.ts'
import type { PipelineDeps, RunEvent } from '../use-cases/run-table.ts'

export interface LocalDeps extends PipelineDeps {
  readonly warehouse: DuckDbWarehouse
  close(): Promise<void>
}

/** Composition root of embedded mode: local folders for staging and state, DuckDB as the warehouse. */
export async function buildLocalDeps(
  project: ProjectSpec,
  onEvent?: (event: RunEvent) => void,
): Promise<LocalDeps> {
  const warehouse = await DuckDbWarehouse.open({
    path: project.warehouse.path,
    memoryLimit: process.env.DIMSYNC_DUCKDB_MEMORY_LIMIT ?? '256MB',
  })
  return {
    staging: new LocalStagingStore({ root: project.staging.path }),
    state: new LocalStateStore({ root: project.state.path }),
    warehouse,
    schema: project.warehouse.schema,
    openSource: (table) => openSource(table, { baseDir: project.baseDir, env: process.env }),
    clock: () => new Date(),
    onEvent,
    checkSourceColumns: (table, columns) =>
      assertTableMatchesSource(
        project,
        project.tables.findIndex((t) => t.name === table.name),
        columns,
      ),
    close: () => warehouse.close(),
  }
}
