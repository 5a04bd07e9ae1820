import type { Warehouse } from '../../lib/ports/warehouse.ts'

/** DuckDB's thread count outside any transaction. */
export async function threadsNow(warehouse: Warehouse): Promise<number> {
  return Number((await warehouse.query(`SELECT current_setting('threads') AS n`))[0]!.n)
}

/** DuckDB's thread count inside a transaction (rolled back) marked as a first load or not. */
export async function threadsInTransaction(warehouse: Warehouse, firstLoad?: boolean): Promise<number> {
  return await warehouse.transaction(
    async (tx) => Number((await tx.query(`SELECT current_setting('threads') AS n`))[0]!.n),
    { commit: false, ...(firstLoad === undefined ? {} : { firstLoad }) },
  )
}
