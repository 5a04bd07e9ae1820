import type { TableRef } from '../../core/table-ref.ts'
import { DEFAULT_CAPABILITIES, type DialectCapabilities } from '../capabilities.ts'
import { listElementType, typeFamily } from '../../core/staged-types.ts'
import { SqlDialectBase } from '../dialect-base.ts'
import type { LogicalType, RowHashPiece, TableFunctionParameter } from '../dialect.ts'
import { assertSafeTypeText } from '../safe-type.ts'

const TYPES = Object.freeze({
  string: 'VARCHAR',
  int64: 'BIGINT',
  bool: 'BOOLEAN',
  // Instants: with the session zone pinned to UTC (see DuckDbWarehouse) TIMESTAMPTZ compares and prints in UTC.
  timestamp: 'TIMESTAMPTZ',
} as const) satisfies Record<LogicalType, string>

const TIMESTAMP_FORMAT = "'%Y-%m-%d %H:%M:%S.%f'"

/**
 * Values whose canonical text has a known length: `YYYY-MM-DD` and `YYYY-MM-DD HH:MM:SS.ffffff` for years 1 to
 * 9999 (outside it the year takes other widths, `(BC)` or `infinity`), the type to compare in and the length.
 */
const FIXED_WIDTH = Object.freeze({
  date: { type: 'DATE', from: '0001-01-01', to: '9999-12-31', length: 10 },
  datetime: { type: 'TIMESTAMP', from: '0001-01-01 00:00:00', to: '9999-12-31 23:59:59.999999', length: 26 },
  instant: {
    type: 'TIMESTAMPTZ',
    from: '0001-01-01 00:00:00+00',
    to: '9999-12-31 23:59:59.999999+00',
    length: 26,
  },
})

/** Families whose canonical text is ASCII: its length in characters is its length in bytes (`strlen`). */
const ASCII_TEXT: ReadonlySet<string> = new Set([
  'integer',
  'decimal',
  'float',
  'bytes',
  'time',
  'date',
  'datetime',
  'instant',
])

/**
 * DuckDB SQL: standard quoting and literals (https://duckdb.org/docs/sql/dialect/keywords_and_identifiers;
 * no backslash escapes in plain literals), `||` concatenation and `md5()` hex from the base.
 */
class DuckDbDialect extends SqlDialectBase {
  readonly name = 'duckdb'
  override readonly capabilities: DialectCapabilities = Object.freeze({
    ...DEFAULT_CAPABILITIES,
    transactionalDdl: true,
  })

  type(logical: LogicalType): string {
    return TYPES[logical]
  }

  /** dbt-duckdb types a snapshot's time as `now()::timestamp`: the wall time in UTC (the session zone), no offset. */
  override dbtSnapshotTimeText(expression: string): string {
    return this.castToString(`CAST(${this.castToTimestamp(expression)} AS TIMESTAMP)`)
  }

  /** Canonical text per type family (see lib/core/staged-types.ts); the session zone is UTC (DuckDbWarehouse). */
  canonicalText(expression: string, columnType?: string): string {
    if (columnType === undefined) return this.castToString(expression)
    const element = listElementType(columnType)
    // Each zero of a list of floats reads 0 too (abs keeps the element's type, so its other values keep their text).
    if (element !== undefined && typeFamily(element).kind === 'float')
      return `CAST(list_transform(${expression}, lambda v: CASE WHEN v = 0 THEN abs(v) ELSE v END) AS VARCHAR)`
    const family = typeFamily(columnType)
    switch (family.kind) {
      // The wall time in UTC, as CAST(… AS TIMESTAMP) gives it in the pinned session zone, without that cast's ICU
      // calendar per value (most of the text's cost); infinite instants have no epoch and take the cast.
      case 'instant':
        return `strftime(coalesce(make_timestamp(epoch_us(${expression})), CAST(${expression} AS TIMESTAMP)), ${TIMESTAMP_FORMAT})`
      case 'datetime':
        return `strftime(CAST(${expression} AS TIMESTAMP), ${TIMESTAMP_FORMAT})`
      case 'time':
        return `strftime(DATE '2000-01-01' + ${expression}, '%H:%M:%S.%f')`
      // Both zeros are 0: DuckDB keeps no sign of zero apart from the other (lib/core/staged-types.ts).
      case 'float':
        return `CASE WHEN ${expression} = 0 THEN '0' ELSE printf('%.17g', CAST(${expression} AS DOUBLE)) END`
      case 'bytes':
        return `lower(hex(${expression}))`
      // string, integer, bool, date: DuckDB's cast is the canonical text; decimal keeps its scale in DuckDB.
      default:
        return this.castToString(expression)
    }
  }

  /**
   * The base's hash text (`tag || LENGTH(text) || ':' || text || ';'` of every non-NULL column) in less than half
   * the work. One variadic `concat`, which skips NULLs, instead of a CASE per column chained with `||`, and its
   * arguments are the parts themselves rather than strings concatenated first (a quarter less CPU than
   * concatenating each column's part first): the constant parts are guarded by
   * `CASE WHEN column IS NOT NULL`, and the length and the text are NULL exactly when the column is (each canonical
   * text is), so a NULL column still adds nothing. Out of CASE, DuckDB computes a canonical text used twice (its
   * length and its value) once. Lengths of texts known to be ASCII are `strlen` (bytes); a boolean's whole part is
   * a constant; a date's or timestamp's length is a constant in the years 1 to 9999.
   */
  override rowHashOf(pieces: readonly RowHashPiece[]): string {
    return `md5(${this.rowHashText(pieces)})`
  }

  override rowHashText(pieces: readonly RowHashPiece[]): string {
    return `concat(\n    ${pieces.flatMap((p) => this.#hashParts(p)).join(',\n    ')})`
  }

  #hashParts({ tag, column, text, type }: RowHashPiece): string[] {
    const family = type === undefined ? undefined : typeFamily(type).kind
    if (family === 'bool')
      return [`CASE WHEN ${column} THEN ${tag} || '4:true;' WHEN NOT ${column} THEN ${tag} || '5:false;' END`]
    const ifPresent = (literal: string) => `CASE WHEN ${column} IS NOT NULL THEN ${literal} END`
    const value = [text, ifPresent("';'")]
    const length = `CAST(${family !== undefined && ASCII_TEXT.has(family) ? 'strlen' : 'LENGTH'}(${text}) AS VARCHAR)`
    if (family === 'date' || family === 'datetime' || family === 'instant') {
      const w = FIXED_WIDTH[family]
      const compared = family === 'datetime' ? `CAST(${column} AS TIMESTAMP)` : column
      const inRange = `${compared} BETWEEN ${w.type} '${w.from}' AND ${w.type} '${w.to}'`
      return [
        `CASE WHEN ${inRange} THEN ${tag} || '${w.length}:' ELSE ${tag} || ${length} || ':' END`,
        ...value,
      ]
    }
    return [ifPresent(tag), length, ifPresent("':'"), ...value]
  }

  raiseError(messageExpression: string): string {
    return `error(${messageExpression})`
  }

  isNan(expression: string): string {
    return `isnan(${expression})`
  }

  // Staged types are DuckDB's own names: stored as they are, once checked to be plain type text.
  columnType(stagedType: string, where: { readonly table: string; readonly column: string }): string {
    assertSafeTypeText(where.table, where.column, stagedType)
    return stagedType
  }

  /**
   * A table macro (https://duckdb.org/docs/sql/statements/create_macro#table-macros). Macro parameters are
   * untyped, so the body reads each one through a cast to its type.
   */
  createTableFunction(
    ref: TableRef,
    parameters: readonly TableFunctionParameter[],
    body: (args: readonly string[]) => string,
  ): string {
    const names = parameters.map((p) => this.quoteIdentifier(p.name))
    const args = parameters.map((p, i) => `CAST(${names[i]} AS ${this.type(p.type)})`)
    const declared = parameters.map((p, i) => (p.optional ? `${names[i]} := NULL` : names[i]))
    return `CREATE OR REPLACE MACRO ${this.table(ref)}(${declared.join(', ')}) AS TABLE\n${body(args)}`
  }
}

export const duckDbDialect = Object.freeze(new DuckDbDialect())
