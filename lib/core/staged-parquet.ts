/**
 * The Parquet format version staged parts are written in, chosen by who reads them; each warehouse's bundle
 * (lib/runtime/warehouse-registry.ts) states its own. Pure, no I/O.
 *
 * V1 writes only Parquet 1.0's encodings (PLAIN, dictionary, RLE), which every Parquet reader decodes, BigQuery's
 * load jobs among them. V2 adds DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY and BYTE_STREAM_SPLIT, which
 * mainstream readers still refuse (DuckDB's own writer defaults to V1 for that reason) and which BigQuery's reader
 * cannot be checked for here. For a 1M-row, 10-column PostgreSQL table V2 parts were 43% the size of V1 parts and
 * converted with 10% less CPU (bench/results/log.md), so parts only DuckDB reads are written in V2.
 */
import type { WarehouseSpec } from './table-spec.ts'

export type StagedParquetVersion = 'V1' | 'V2'

/** Parts only the embedded DuckDB reads (its warehouse, or the load of a warehouse it streams them into). */
export const PARQUET_READ_BY_DUCKDB: StagedParquetVersion = 'V2'
/** Parts another engine's reader loads (BigQuery's load jobs). */
export const PARQUET_READ_BY_ANY_READER: StagedParquetVersion = 'V1'

/** The version of the warehouses the benchmarks stage for (bench/); the runs read their bundle's. */
export function stagedParquetVersion(warehouse: WarehouseSpec['type']): StagedParquetVersion {
  return warehouse === 'bigquery' ? PARQUET_READ_BY_ANY_READER : PARQUET_READ_BY_DUCKDB
}
