import type { TableRef } from '../../core/table-ref.ts'
import { DEFAULT_CAPABILITIES, type DialectCapabilities } from '../capabilities.ts'
import { typeFamily } from '../../core/staged-types.ts'
import { SqlDialectBase } from '../dialect-base.ts'
import type { LogicalType, TableFunctionParameter } from '../dialect.ts'
import { assertSafeTypeText } from '../safe-type.ts'

const TYPES = Object.freeze({
  string: 'VARCHAR',
  int64: 'BIGINT',
  bool: 'BOOLEAN',
  // Instants: with the session zone pinned to UTC (see DuckDbWarehouse) TIMESTAMPTZ compares and prints in UTC.
  timestamp: 'TIMESTAMPTZ',
} as const) satisfies Record<LogicalType, string>

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

  /** Canonical text per type family (see lib/core/staged-types.ts); the session zone is UTC (DuckDbWarehouse). */
  canonicalText(expression: string, columnType?: string): string {
    if (columnType === undefined) return this.castToString(expression)
    const family = typeFamily(columnType)
    switch (family.kind) {
      case 'instant':
      case 'datetime':
        return `strftime(CAST(${expression} AS TIMESTAMP), '%Y-%m-%d %H:%M:%S.%f')`
      case 'time':
        return `strftime(DATE '2000-01-01' + ${expression}, '%H:%M:%S.%f')`
      case 'float':
        return `printf('%.17g', CAST(${expression} AS DOUBLE))`
      case 'bytes':
        return `lower(hex(${expression}))`
      // string, integer, bool, date: DuckDB's cast is the canonical text; decimal keeps its scale in DuckDB.
      default:
        return this.castToString(expression)
    }
  }

  raiseError(messageExpression: string): string {
    return `error(${messageExpression})`
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
