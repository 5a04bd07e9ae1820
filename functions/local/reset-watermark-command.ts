import { describePosition } from '../../lib/core/watermark-ledger.ts'
import type { StoreOverrides } from '../../lib/runtime/store-overrides.ts'
import { resetWatermark } from '../../lib/use-cases/reset-watermark.ts'
import { selectTables, withProject } from './commands.ts'

/** `dimsync reset-watermark`: the table's watermark set to the last batch of the warehouse's ledger. */
export async function resetWatermarkCommand(
  opts: { config: string; table: string } & StoreOverrides,
): Promise<void> {
  await withProject(
    opts.config,
    async (project, deps, reporter) => {
      const [table] = selectTables(project, opts.table)
      const result = await resetWatermark(deps, table!)
      const before = result.before === undefined ? 'none' : describePosition(result.before)
      reporter.summary(
        result.after === undefined
          ? `${table!.name}: watermark ${before} removed: ${table!.target}'s ledger holds no batch with a watermark, ` +
              'so the next run reads every row again'
          : `${table!.name}: watermark ${before} set to ${describePosition(result.after)}, recorded by batch ` +
              `${result.batchId} (the last batch of ${table!.target} in the warehouse); the next run reads the rows after it`,
      )
    },
    opts,
  )
}
