/**
 * Classification of staged column types (DuckDB type names, as written in batch manifests and DimensionColumn)
 * into the families whose canonical text the row hash defines. Both dialects render the same text per family:
 *
 * | family    | canonical text                                      | example                       |
 * | --------- | --------------------------------------------------- | ----------------------------- |
 * | string    | the value                                           | `Ana`                         |
 * | integer   | decimal digits, `-` for negatives                   | `-42`                         |
 * | bool      | `true` / `false`                                    | `true`                        |
 * | date      | `YYYY-MM-DD`                                        | `2024-03-10`                  |
 * | time      | `HH:MM:SS.ffffff`                                   | `14:30:00.000000`             |
 * | instant   | `YYYY-MM-DD HH:MM:SS.ffffff` in UTC                 | `2024-03-10 14:30:00.120000`  |
 * | datetime  | `YYYY-MM-DD HH:MM:SS.ffffff` (no zone)              | `2024-03-10 14:30:00.000000`  |
 * | decimal   | fixed point with exactly `scale` digits             | `1.50` for DECIMAL(10,2)      |
 * | float     | C `%.17g` (round-trips every double)                | `0.10000000000000001`         |
 * | bytes     | lowercase hex                                       | `00ff`                        |
 * | other     | DuckDB's CAST to VARCHAR (DuckDB only; BigQuery refuses these types) |              |
 *
 * Lives in lib/sql because it is shared by the dialects; pure, no I/O.
 */
export type TypeFamily =
  | {
      readonly kind:
        'string' | 'integer' | 'bool' | 'date' | 'time' | 'instant' | 'datetime' | 'float' | 'bytes'
    }
  | { readonly kind: 'decimal'; readonly precision: number; readonly scale: number }
  | { readonly kind: 'other' }

const INTEGERS = new Set([
  'TINYINT',
  'SMALLINT',
  'INTEGER',
  'BIGINT',
  'UTINYINT',
  'USMALLINT',
  'UINTEGER',
  'INT1',
  'INT2',
  'INT4',
  'INT8',
  'INT',
  'LONG',
  'SHORT',
])

/** The family of a staged type; unknown or nested types are `other`. */
export function typeFamily(stagedType: string): TypeFamily {
  const t = stagedType.trim().toUpperCase()
  if (t === 'VARCHAR' || t === 'TEXT' || t === 'STRING' || t.startsWith('VARCHAR(')) return { kind: 'string' }
  if (INTEGERS.has(t)) return { kind: 'integer' }
  if (t === 'BOOLEAN' || t === 'BOOL') return { kind: 'bool' }
  if (t === 'DATE') return { kind: 'date' }
  if (t === 'TIME') return { kind: 'time' }
  if (t === 'TIMESTAMP WITH TIME ZONE' || t === 'TIMESTAMPTZ') return { kind: 'instant' }
  if (
    t === 'TIMESTAMP' ||
    t === 'DATETIME' ||
    t === 'TIMESTAMP_MS' ||
    t === 'TIMESTAMP_S' ||
    t === 'TIMESTAMP_US'
  )
    return { kind: 'datetime' }
  if (t === 'DOUBLE' || t === 'FLOAT' || t === 'REAL' || t === 'FLOAT8' || t === 'FLOAT4')
    return { kind: 'float' }
  if (t === 'BLOB' || t === 'BYTEA' || t === 'BINARY' || t === 'VARBINARY') return { kind: 'bytes' }
  const decimal = /^(?:DECIMAL|NUMERIC)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$/.exec(t)
  if (decimal) return { kind: 'decimal', precision: Number(decimal[1]), scale: Number(decimal[2]) }
  // DuckDB's default DECIMAL is DECIMAL(18,3).
  if (t === 'DECIMAL' || t === 'NUMERIC') return { kind: 'decimal', precision: 18, scale: 3 }
  return { kind: 'other' }
}
