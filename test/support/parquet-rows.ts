import { DuckDBInstance } from '@duckdb/node-api'
import type { StagedColumn } from '../../lib/core/batch.ts'

/** Rows too many to write one by one: a DuckDB SELECT of the columns in order, and how many rows it gives. */
export interface GeneratedRows {
  readonly select: string
  readonly length: number
}

/** A staged value; an array is a DuckDB list (cast to the column's list type). */
export type Value = string | number | boolean | null | bigint | readonly Value[]

/**
 * Writes `rows` with explicit DuckDB column types as a Parquet file at `path`, by an in-memory DuckDB (the test
 * batches' part writer, TestBatches and MemoryBatches).
 */
export async function writeParquetPart(
  path: string,
  columns: readonly StagedColumn[],
  rows: readonly Record<string, Value>[] | GeneratedRows,
): Promise<void> {
  const c = await (await parquetWriter()).connect()
  try {
    await c.run(`SET TimeZone='UTC'`)
    // A temporary table is the connection's own: batches staged at once do not meet.
    await c.run(`CREATE TEMP TABLE t (${columns.map((col) => `${quote(col.name)} ${col.type}`).join(', ')})`)
    if ('select' in rows) await c.run(`INSERT INTO t ${rows.select}`)
    else
      for (let i = 0; i < rows.length; i += 500) {
        const chunk = rows.slice(i, i + 500)
        const values = chunk
          .map((r) => `(${columns.map((col) => `CAST(${literal(r[col.name])} AS ${col.type})`).join(', ')})`)
          .join(',\n')
        await c.run(`INSERT INTO t VALUES ${values}`)
      }
    await c.run(`COPY t TO ${literal(path)} (FORMAT parquet)`)
  } finally {
    c.closeSync()
  }
}

/**
 * The DuckDB that writes the staged Parquet, one per test process: starting an instance per batch cost more than
 * writing the batch. One thread: a test's batch is one row group, and a second thread only adds overhead.
 */
let writer: Promise<DuckDBInstance> | undefined
function parquetWriter(): Promise<DuckDBInstance> {
  writer ??= DuckDBInstance.create(':memory:', { threads: '1' })
  return writer
}

function literal(v: Value | undefined): string {
  if (v === null || v === undefined) return 'NULL'
  if (typeof v === 'string') return `'${v.replaceAll("'", "''")}'`
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE'
  if (Array.isArray(v)) return `[${v.map(literal).join(', ')}]`
  // NaN and the infinities have no bare literal; DuckDB casts their text ('NaN', 'Infinity', '-Infinity').
  if (typeof v === 'number' && !Number.isFinite(v)) return `'${String(v)}'`
  // String(-0) is '0': the sign would be lost.
  if (Object.is(v, -0)) return `'-0.0'`
  return String(v)
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}
