/**
 * The Parquet format version staged parts are written in, chosen by who reads them. Pure, no I/O.
 *
 * V1 writes only Parquet 1.0's encodings (PLAIN, dictionary, RLE), which every Parquet reader decodes, BigQuery's
 * load jobs among them. V2 adds DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY and BYTE_STREAM_SPLIT, which
 * mainstream readers still refuse (DuckDB's own writer defaults to V1 for that reason) and which BigQuery's reader
 * cannot be checked for here. For a 1M-row, 10-column PostgreSQL table V2 parts were 43% the size of V1 parts and
 * converted with 10% less CPU (bench/results/log.md), so parts only DuckDB reads are written in V2.
 */
import type { WarehouseSpec } from './table-spec.ts'

export type StagedParquetVersion = 'V1' | 'V2'

/** V2 where the embedded DuckDB is the only reader of the parts (its warehouse, or the postgres warehouse's load); V1 for BigQuery. */
export function stagedParquetVersion(warehouse: WarehouseSpec['type']): StagedParquetVersion {
  return warehouse === 'bigquery' ? 'V1' : 'V2'
}
