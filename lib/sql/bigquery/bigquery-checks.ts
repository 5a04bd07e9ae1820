/**
 * What `dimsync validate` checks for a BigQuery warehouse: the staged types it cannot store (bigQueryStorableType),
 * keys and compared columns it cannot compare (JSON, arrays), and the length of the table's merge script.
 */
import type { StagedColumn } from '../../core/batch.ts'
import type { BigQueryWarehouseSpec, TableSpec } from '../../core/table-spec.ts'
import type { WarehouseChecks } from '../../core/warehouse-checks.ts'
import { bigQueryUncomparableColumns } from './bigquery-compared-columns.ts'
import { bigQueryKeyProblem, bigQueryStorableType } from './bigquery-types.ts'
import { renderOfflineBigQueryPlan } from './offline-plan.ts'
import { scriptLengthProblem, scriptQueries } from './script-length.ts'

export function bigQueryChecks(warehouse: BigQueryWarehouseSpec): WarehouseChecks {
  return {
    name: 'BigQuery',
    unstorableColumns: (columns) => columns.filter((c) => bigQueryStorableType(c.type) === undefined),
    uncomparableColumns(table, columns) {
      const keys = columns.flatMap((c) => {
        const problem = table.key.includes(c.name) ? bigQueryKeyProblem(c.type) : undefined
        return problem === undefined ? [] : [`key column "${c.name}" ${problem}`]
      })
      return [...keys, ...bigQueryUncomparableColumns(table, 'validate', columns)]
    },
    mergeReport: (table, columns) => mergeScriptReport(warehouse, table, columns),
  }
}

/**
 * The length and statement count of the table's merge script, for a first load and for later batches (rendered
 * offline, as a run would render them), how many queries of one session it runs as when it is over BigQuery's
 * query length, and the problem when even those cannot hold one of its statements (a run refuses it before
 * submitting anything).
 */
function mergeScriptReport(
  warehouse: BigQueryWarehouseSpec,
  table: TableSpec,
  columns: readonly StagedColumn[],
): { line?: string; problem?: string } {
  const render = (later: boolean) =>
    renderOfflineBigQueryPlan({
      table,
      columns,
      project: warehouse.project,
      dataset: warehouse.dataset,
      now: new Date(0).toISOString(),
      later,
    })
  const [first, later] = [render(false), render(true)]
  const size = (script: typeof first) => {
    const queries = scriptQueries(script)
    const session = queries.length === 1 ? '' : `, as ${queries.length} queries of one session transaction`
    return (
      `${Math.ceil(script.text.length / 1000).toLocaleString('en-US')}K characters in ` +
      `${script.ddl.length + script.merge.length + script.after.length} statements${session}`
    )
  }
  const problems = [first, later].map((script) => scriptLengthProblem(table.name, script, columns.length))
  const problem = problems[1] ?? problems[0]
  return {
    line: `; BigQuery merge script: first load ${size(first)}, later batches ${size(later)}`,
    ...(problem === undefined
      ? {}
      : {
          problem: problem
            .replace(`table ${table.name}: `, '')
            .replace('nothing was merged', 'a run refuses it'),
        }),
  }
}
