import { dateRows } from '../core/date-dimension.ts'
import type { Warehouse } from '../ports/warehouse.ts'
import type { SqlDialect } from '../sql/dialect.ts'
import { renderDateDimension } from '../sql/render-date-dimension.ts'

export interface DateDimensionRequest {
  readonly schema: string
  /** `YYYY-MM-DD`, both included. */
  readonly from: string
  readonly to: string
  /** Holiday names by `YYYY-MM-DD` date. */
  readonly holidays?: ReadonlyMap<string, string>
  /** Default `dim_date`. */
  readonly table?: string
}

/**
 * `dimsync dates`: creates `dim_date` or extends it to cover [from, to]; the days of that range are written
 * again in one transaction (holiday names refreshed), the others kept. Returns the number of days written.
 */
export async function buildDateDimension(
  deps: { readonly warehouse: Warehouse<SqlDialect> },
  request: DateDimensionRequest,
): Promise<number> {
  const { warehouse } = deps
  const rows = dateRows(request.from, request.to, request.holidays)
  const ref = { schema: request.schema, name: request.table ?? 'dim_date' }
  const { ddl, load } = renderDateDimension(warehouse.dialect, ref, rows)
  await warehouse.whileWriting([ref], async () => {
    await warehouse.runAlone(ddl)
    await warehouse.transaction(
      async (tx) => {
        for (const s of load) await tx.execute(s)
      },
      { commit: true },
    )
  })
  return rows.length
}
