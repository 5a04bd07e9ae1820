// Types come from DuckDB's description of staged Parquet; anything outside this shape is refused, never pasted.
const SAFE_TYPE = /^[A-Za-z][A-Za-z0-9_ ,()[\]]*$/

/** Throws naming the table and column when a staged type is not plain type text. */
export function assertSafeTypeText(table: string, column: string, type: string): void {
  if (!SAFE_TYPE.test(type))
    throw new Error(`table ${table}: column "${column}" has an unsupported type ${JSON.stringify(type)}`)
}
