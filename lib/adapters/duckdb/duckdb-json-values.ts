/**
 * The values of a DuckDB result as JSON, FLOAT (REAL) values as the number of their shortest text. The client turns
 * a FLOAT into the double of the same bits, which prints as another number than the source and DuckDB wrote
 * (0.10000000149011612 for a PostgreSQL real 0.1): history and report would show values nobody stored.
 */
import {
  DuckDBTypeId,
  JsonDuckDBValueConverter,
  type DuckDBValueConverter,
  type Json,
} from '@duckdb/node-api'

/** The JSON converter of @duckdb/node-api, with FLOAT values shortened; nested values go through it too. */
export const duckDbJsonValues: DuckDBValueConverter<Json> = (value, type, converter) =>
  type.typeId === DuckDBTypeId.FLOAT && typeof value === 'number' && Number.isFinite(value)
    ? shortestFloat32(value)
    : JsonDuckDBValueConverter(value, type, converter)

/**
 * The number with the fewest significant digits that is the same 32-bit float as `value` (a float widened to a
 * double): what PostgreSQL and MySQL print for a real / FLOAT (DuckDB prints the same digits or, for some values,
 * more: 681984768 for 681984800). Nine digits always suffice for a float. Pure.
 */
export function shortestFloat32(value: number): number {
  for (let digits = 1; digits <= 9; digits++) {
    const shorter = Number(value.toPrecision(digits))
    if (Math.fround(shorter) === value) return shorter
  }
  return value
}
