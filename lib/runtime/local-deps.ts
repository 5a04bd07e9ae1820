import { FileSource } from '../adapters/source/file-source.ts'
import { LocalStagingStore } from '../adapters/staging/local-staging-store.ts'
import { LocalStateStore } from '../adapters/state/local-state-store.ts'
import { DuckDbWarehouse } from '../adapters/warehouse/duckdb-warehouse.ts'
import { assertTableMatchesSource } from '../config/index.ts'
import { DimsyncError } from '../core/errors.ts'
import type { ProjectSpec, TableSpec } from '../core/table-spec.ts'
import type { Source } from '../ports/source.ts'
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
  const warehouse = await DuckDbWarehouse.open({ path: project.warehouse.path })
  return {
    staging: new LocalStagingStore({ root: project.staging.path }),
    state: new LocalStateStore({ root: project.state.path }),
    warehouse,
    schema: project.warehouse.schema,
    openSource: (table) => openLocalSource(project, table),
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

function openLocalSource(project: ProjectSpec, table: TableSpec): Source {
  if (table.source.type === 'file') return new FileSource({ baseDir: project.baseDir })
  throw new DimsyncError(
    `table ${table.name}: source type ${table.source.type} is not available in this build yet (file sources only)`,
  )
}
