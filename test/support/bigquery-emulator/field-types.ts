import type { Proto } from './zetasql-service.ts'

/**
 * A column of an emulated table as the REST API shows it (`tables.get` → `schema.fields`): BigQuery answers the
 * legacy type names (INTEGER, FLOAT, BOOLEAN, RECORD) whatever the DDL said, and keeps parameters as strings.
 */
export interface FieldSchema {
  readonly name: string
  readonly type: string
  readonly mode?: 'NULLABLE' | 'REQUIRED' | 'REPEATED'
  readonly description?: string
  readonly fields?: readonly FieldSchema[]
  readonly precision?: string
  readonly scale?: string
  readonly maxLength?: string
}

const LEGACY_NAMES: Readonly<Record<string, string>> = Object.freeze({
  INT64: 'INTEGER',
  INTEGER: 'INTEGER',
  FLOAT64: 'FLOAT',
  FLOAT: 'FLOAT',
  BOOL: 'BOOLEAN',
  BOOLEAN: 'BOOLEAN',
  STRING: 'STRING',
  BYTES: 'BYTES',
  NUMERIC: 'NUMERIC',
  DECIMAL: 'NUMERIC',
  BIGNUMERIC: 'BIGNUMERIC',
  BIGDECIMAL: 'BIGNUMERIC',
  DATE: 'DATE',
  DATETIME: 'DATETIME',
  TIME: 'TIME',
  TIMESTAMP: 'TIMESTAMP',
  JSON: 'JSON',
  STRUCT: 'RECORD',
  RECORD: 'RECORD',
})

const KINDS: Readonly<Record<string, string>> = Object.freeze({
  INTEGER: 'TYPE_INT64',
  FLOAT: 'TYPE_DOUBLE',
  BOOLEAN: 'TYPE_BOOL',
  STRING: 'TYPE_STRING',
  BYTES: 'TYPE_BYTES',
  NUMERIC: 'TYPE_NUMERIC',
  BIGNUMERIC: 'TYPE_BIGNUMERIC',
  DATE: 'TYPE_DATE',
  DATETIME: 'TYPE_DATETIME',
  TIME: 'TYPE_TIME',
  TIMESTAMP: 'TYPE_TIMESTAMP',
  JSON: 'TYPE_JSON',
})

const NAMES_OF_KINDS: Readonly<Record<string, string>> = Object.freeze(
  Object.fromEntries(Object.entries(KINDS).map(([name, kind]) => [kind, name])),
)

/** The REST type name of a type name as a user or the API may write it (`INT64` → `INTEGER`), or undefined. */
export function legacyTypeName(name: string): string | undefined {
  return LEGACY_NAMES[name.trim().toUpperCase()]
}

/** The ZetaSQL type of a column (REPEATED → ARRAY, RECORD → STRUCT). Throws on a type the emulator lacks. */
export function zetaTypeOfField(field: FieldSchema): Proto {
  const type = legacyTypeName(field.type)
  let element: Proto
  if (type === 'RECORD') {
    element = {
      typeKind: 'TYPE_STRUCT',
      structType: {
        field: (field.fields ?? []).map((f) => ({ fieldName: f.name, fieldType: zetaTypeOfField(f) })),
      },
    }
  } else {
    const kind = type === undefined ? undefined : KINDS[type]
    if (kind === undefined)
      throw new Error(`the BigQuery emulator has no type ${field.type} (column ${field.name})`)
    element = { typeKind: kind }
  }
  return field.mode === 'REPEATED' ? { typeKind: 'TYPE_ARRAY', arrayType: { elementType: element } } : element
}

/**
 * The REST field of a ZetaSQL type (a query result column, a column DDL declared). `parameters` are the DDL's
 * type parameters (`NUMERIC(12, 2)`, `STRING(10)`), kept as BigQuery keeps them.
 */
export function fieldOfZetaType(
  name: string,
  type: Proto,
  options: { readonly required?: boolean; readonly description?: string; readonly parameters?: Proto } = {},
): FieldSchema {
  let mode: FieldSchema['mode'] = options.required ? 'REQUIRED' : 'NULLABLE'
  let element = type
  if (type.typeKind === 'TYPE_ARRAY') {
    mode = 'REPEATED'
    element = type.arrayType.elementType
  }
  const base: { -readonly [K in keyof FieldSchema]: FieldSchema[K] } = { name, type: '', mode }
  if (element.typeKind === 'TYPE_STRUCT') {
    base.type = 'RECORD'
    base.fields = (element.structType?.field ?? []).map((f: Proto) =>
      fieldOfZetaType(f.fieldName, f.fieldType),
    )
  } else {
    const typeName = NAMES_OF_KINDS[element.typeKind]
    if (typeName === undefined)
      throw new Error(`the BigQuery emulator cannot store ${element.typeKind} (${name})`)
    base.type = typeName
  }
  const numeric = options.parameters?.numericTypeParameters
  if (numeric) {
    if (numeric.precision !== undefined && numeric.precision !== null)
      base.precision = String(numeric.precision)
    if (numeric.scale !== undefined && numeric.scale !== null) base.scale = String(numeric.scale)
  }
  const text = options.parameters?.stringTypeParameters
  if (text?.maxLength !== undefined && text.maxLength !== null) base.maxLength = String(text.maxLength)
  if (options.description !== undefined) base.description = options.description
  return base
}

/** `INT64`, `ARRAY<STRING>`, `STRUCT<a INT64>`: a ZetaSQL type in GoogleSQL syntax, for messages. */
export function typeText(type: Proto): string {
  switch (type.typeKind) {
    case 'TYPE_ARRAY':
      return `ARRAY<${typeText(type.arrayType.elementType)}>`
    case 'TYPE_STRUCT':
      return `STRUCT<${(type.structType?.field ?? [])
        .map((f: Proto) => `${f.fieldName} ${typeText(f.fieldType)}`)
        .join(', ')}>`
    case 'TYPE_DOUBLE':
      return 'FLOAT64'
    default:
      return String(type.typeKind).replace(/^TYPE_/, '')
  }
}

/** The GoogleSQL name of a REST field's type (`INTEGER` → `INT64`), for messages. */
export function googleSqlTypeName(field: FieldSchema): string {
  return typeText(zetaTypeOfField(field))
}
