/**
 * The table the TLS tests read (postgres-tls.test.ts, mysql-tls.test.ts): 4,000 rows of about 500 bytes, more than
 * one TLS record and socket read, with text beyond ASCII. Each test fills it in its server's SQL; these are the rows
 * the staged Parquet must hold, as the harness reads them back.
 */
export const TLS_TABLE_ROWS = 4000

/** Row i: the i-th capital letter (cycling) 500 times and ' ünïcode'; 2024-01-01 00:00:00 UTC plus i seconds. */
export function tlsTableRows(timestampSuffix: '' | '+00'): Record<string, string>[] {
  return Array.from({ length: TLS_TABLE_ROWS }, (_, n) => {
    const i = n + 1
    const at = new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString()
    return {
      id: String(i),
      note: `${String.fromCharCode(65 + (i % 26)).repeat(500)} ünïcode`,
      at: `${at.slice(0, 10)} ${at.slice(11, 19)}${timestampSuffix}`,
    }
  })
}
