import type { CompiledScript } from '../../core/compiled-sql.ts'
import type { ProjectSpec, TableSpec } from '../../core/table-spec.ts'
import { renderOfflineBigQueryPlan } from '../../sql/bigquery/offline-plan.ts'
import { openSource } from '../open-source.ts'

/**
 * `plan --dialect bigquery --sql`: the BigQuery script of a first batch of `table`, from the config and the source's
 * columns only (no extract, no staging, no credentials, no BigQuery call). Without a BigQuery warehouse in the
 * config, the script names a placeholder project and dataset.
 */
export async function offlineBigQueryPlan(
  project: ProjectSpec,
  table: TableSpec,
  env: Readonly<Record<string, string | undefined>>,
  now: string,
): Promise<CompiledScript> {
  const source = openSource(table, { baseDir: project.baseDir, env })
  let columns
  try {
    columns = await source.describe(table)
  } finally {
    await source.close()
  }
  const bigquery = project.warehouse.type === 'bigquery' ? project.warehouse : undefined
  return renderOfflineBigQueryPlan({
    table,
    columns,
    project: bigquery?.project ?? 'your-project',
    dataset: bigquery?.dataset ?? 'your_dataset',
    now,
  })
}
