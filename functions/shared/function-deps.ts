import type { AwsDeps } from '../../lib/runtime/aws-deps.ts'
import type { StagingStore } from '../../lib/ports/staging-store.ts'
import type { StateStore } from '../../lib/ports/state-store.ts'
import type { RunEventListener } from '../../lib/use-cases/run-event.ts'
import type { PipelineDeps } from '../../lib/use-cases/run-table.ts'

/** What the two functions need from their container (`AwsDeps` fits; tests may wrap a store). */
export interface FunctionDeps extends Pick<
  AwsDeps,
  | 'project'
  | 'settings'
  | 'clock'
  | 'table'
  | 'prepareSources'
  | 'openSource'
  | 'checkSourceColumns'
  | 'warehouse'
  | 'refreshSecret'
> {
  readonly staging: StagingStore
  readonly state: StateStore
}

/** The container's adapters as the use cases take them, reporting to `onEvent` (this invocation's telemetry). */
export function pipelineDepsOf(deps: FunctionDeps, onEvent: RunEventListener): PipelineDeps {
  return {
    staging: deps.staging,
    state: deps.state,
    clock: deps.clock,
    schema: deps.project.warehouse.schema,
    openSource: (table) => deps.openSource(table),
    checkSourceColumns: (table, columns) => deps.checkSourceColumns(table, columns),
    prepareSources: () => deps.prepareSources(),
    openWarehouse: () => deps.warehouse(),
    onEvent,
  }
}
