/**
 * A validator for the JSON Schema keywords our generated schema uses, so tests can check that the schema an
 * editor sees accepts and rejects what the loader does. Unknown keywords throw: a silent pass proves nothing.
 */
type Schema = Record<string, unknown>

const ANNOTATIONS = new Set(['$schema', 'title', 'description'])

function typeOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

export function validate(schema: Schema, value: unknown, path = '$'): string[] {
  const errors: string[] = []
  for (const [keyword, arg] of Object.entries(schema)) {
    if (ANNOTATIONS.has(keyword)) continue
    switch (keyword) {
      case 'type': {
        const actual = typeOf(value)
        const ok = actual === arg || (arg === 'number' && actual === 'integer')
        if (!ok) errors.push(`${path}: expected ${String(arg)}, got ${actual}`)
        break
      }
      case 'const':
        if (value !== arg) errors.push(`${path}: expected ${JSON.stringify(arg)}`)
        break
      case 'enum':
        if (!(arg as unknown[]).includes(value)) errors.push(`${path}: not in enum`)
        break
      case 'pattern':
        if (typeof value === 'string' && !new RegExp(arg as string, 'u').test(value)) {
          errors.push(`${path}: does not match ${String(arg)}`)
        }
        break
      case 'minLength':
        if (typeof value === 'string' && [...value].length < (arg as number))
          errors.push(`${path}: too short`)
        break
      case 'maxLength':
        if (typeof value === 'string' && [...value].length > (arg as number)) errors.push(`${path}: too long`)
        break
      case 'minimum':
        if (typeof value === 'number' && value < (arg as number)) errors.push(`${path}: below minimum`)
        break
      case 'maximum':
        if (typeof value === 'number' && value > (arg as number)) errors.push(`${path}: above maximum`)
        break
      case 'exclusiveMinimum':
        if (typeof value === 'number' && value <= (arg as number)) errors.push(`${path}: not above minimum`)
        break
      case 'minItems':
        if (Array.isArray(value) && value.length < (arg as number)) errors.push(`${path}: too few items`)
        break
      case 'items':
        if (Array.isArray(value))
          value.forEach((item, i) => errors.push(...validate(arg as Schema, item, `${path}[${i}]`)))
        break
      case 'properties':
        if (typeOf(value) === 'object') {
          for (const [name, sub] of Object.entries(arg as Record<string, Schema>)) {
            const child = (value as Record<string, unknown>)[name]
            if (child !== undefined) errors.push(...validate(sub, child, `${path}.${name}`))
          }
        }
        break
      case 'required':
        if (typeOf(value) === 'object') {
          for (const name of arg as string[]) {
            if (!(name in (value as object))) errors.push(`${path}: missing ${name}`)
          }
        }
        break
      case 'additionalProperties':
        if (arg !== false) throw new Error(`unsupported additionalProperties ${JSON.stringify(arg)}`)
        if (typeOf(value) === 'object') {
          const known = Object.keys((schema.properties ?? {}) as object)
          for (const name of Object.keys(value as object)) {
            if (!known.includes(name)) errors.push(`${path}: unknown property ${name}`)
          }
        }
        break
      case 'anyOf':
      case 'oneOf': {
        const passing = (arg as Schema[]).filter((sub) => validate(sub, value, path).length === 0).length
        if (keyword === 'anyOf' ? passing === 0 : passing !== 1) errors.push(`${path}: ${keyword} failed`)
        break
      }
      default:
        throw new Error(`mini validator does not know keyword ${keyword}`)
    }
  }
  return errors
}
