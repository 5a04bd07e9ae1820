import type { DeleteLiteral } from '../core/table-spec.ts'
import type { SqlDialect } from './dialect.ts'

/**
 * `deletes: { when: "<column> = <value>" }` as SQL: a text compares with the column's text (any type, exactly), a
 * number and a boolean with its value. The literal is rendered from its parsed parts (delete-condition.ts).
 */
export function softDeleteComparison(d: SqlDialect, column: string, equals: DeleteLiteral): string {
  switch (equals.kind) {
    case 'text':
      return `${d.castToString(column)} = ${d.stringLiteral(equals.value)}`
    case 'boolean':
      return `${column} = ${equals.value ? 'TRUE' : 'FALSE'}`
    case 'number':
      if (!/^-?[0-9]+(\.[0-9]+)?$/.test(equals.value)) throw new Error(`not a number: ${equals.value}`)
      return `${column} = ${equals.value}`
  }
}
