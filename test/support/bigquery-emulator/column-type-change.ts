import { typeText, type FieldSchema } from './field-types.ts'
import { isNull, scalarText, valueFromText, type Value } from './values.ts'
import type { Proto } from './zetasql-service.ts'

/**
 * BigQuery's `ALTER COLUMN … SET DATA TYPE` (https://cloud.google.com/bigquery/docs/reference/standard-sql/data-definition-language#alter_column_set_data_type_statement):
 * a column may only become less restrictive. INT64 → NUMERIC, BIGNUMERIC, FLOAT64; NUMERIC → BIGNUMERIC, FLOAT64;
 * and a parameterized type may widen (STRING(10) → STRING(20) or STRING, NUMERIC(10, 2) → NUMERIC(18, 2)).
 * ZetaSQL's analyzer accepts more (any implicit coercion, e.g. DATE → DATETIME; any parameters), so the emulator
 * checks BigQuery's list itself.
 */
const WIDER_KINDS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  TYPE_INT64: ['TYPE_NUMERIC', 'TYPE_BIGNUMERIC', 'TYPE_DOUBLE'],
  TYPE_NUMERIC: ['TYPE_BIGNUMERIC', 'TYPE_DOUBLE'],
})

const DECIMAL_KINDS = new Set(['TYPE_NUMERIC', 'TYPE_BIGNUMERIC'])
const LENGTH_KINDS = new Set(['TYPE_STRING', 'TYPE_BYTES'])

/** BigQuery's message when a column's type may not change to another, or undefined when it may. */
export function setDataTypeRefusal(
  from: FieldSchema,
  fromType: Proto,
  to: FieldSchema,
  toType: Proto,
): string | undefined {
  const sameKind = typeText(fromType) === typeText(toType)
  const allowed =
    (sameKind || (WIDER_KINDS[fromType.typeKind] ?? []).includes(toType.typeKind)) &&
    parametersWiden(from, fromType, to, toType)
  if (allowed) return undefined
  return (
    'ALTER TABLE ALTER COLUMN SET DATA TYPE requires that the existing column type ' +
    `(${parameterizedText(from, fromType)}) is assignable to the new type (${parameterizedText(to, toType)})`
  )
}

/** A stored value in the new type: the same number or text, read again (NULL stays NULL). */
export function convertValue(fromType: Proto, toType: Proto, value: Value): Value {
  if (isNull(value) || typeText(fromType) === typeText(toType)) return value
  return valueFromText(toType, scalarText(fromType, value))
}

function parametersWiden(from: FieldSchema, fromType: Proto, to: FieldSchema, toType: Proto): boolean {
  if (LENGTH_KINDS.has(toType.typeKind)) {
    if (to.maxLength === undefined) return true
    return from.maxLength !== undefined && Number(to.maxLength) >= Number(from.maxLength)
  }
  if (DECIMAL_KINDS.has(toType.typeKind)) {
    if (to.precision === undefined) return true
    // An INT64 or an unbounded decimal fits no declared precision; a bounded one fits when neither its integer
    // digits nor its fraction digits shrink.
    if (!DECIMAL_KINDS.has(fromType.typeKind) || from.precision === undefined) return false
    const fromScale = Number(from.scale ?? 0)
    const toScale = Number(to.scale ?? 0)
    return toScale >= fromScale && Number(to.precision) - toScale >= Number(from.precision) - fromScale
  }
  return true
}

/** `NUMERIC(10, 2)`, `STRING(20)`, `INT64`: the type as DDL writes it, for messages. */
function parameterizedText(field: FieldSchema, type: Proto): string {
  const name = typeText(type)
  if (field.precision !== undefined)
    return `${name}(${field.precision}${field.scale === undefined ? '' : `, ${field.scale}`})`
  if (field.maxLength !== undefined) return `${name}(${field.maxLength})`
  return name
}
