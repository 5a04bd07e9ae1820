import { describe, expect, it } from 'vitest'

import {
  describeColumnType,
  parseSourceTypes,
  readType,
  sameSourceTypes,
  takesFormat,
} from '../../../lib/core/source-types.ts'

describe('readType', () => {
  it('spells the types a CSV column may be read as the way DuckDB does, aliases included', () => {
    expect(readType('decimal(38, 0)')).toBe('DECIMAL(38,0)')
    expect(readType('NUMERIC(10)')).toBe('DECIMAL(10,0)')
    expect(readType(' text ')).toBe('VARCHAR')
    expect(readType('int')).toBe('INTEGER')
    expect(readType('timestamp with time zone')).toBe('TIMESTAMPTZ')
    expect(readType('Date')).toBe('DATE')
  })

  it('refuses types a CSV value cannot be read as exactly, and decimals beyond 38 digits', () => {
    for (const type of [
      'DECIMAL(39,0)',
      'DECIMAL(5,6)',
      'DECIMAL(0,0)',
      'JSON',
      'BLOB',
      'INTEGER[]',
      'UUID',
      '',
    ])
      expect(readType(type)).toBeUndefined()
  })
})

describe('the record of a table source types', () => {
  const record = {
    version: 1 as const,
    columns: [
      { name: 'acct', type: 'DECIMAL(38,0)' },
      { name: 'd', type: 'DATE', format: '%d/%m/%Y' },
    ],
  }

  it('reads back what was written, and nothing else', () => {
    expect(parseSourceTypes(JSON.parse(JSON.stringify(record)))).toEqual(record)
    for (const bad of [
      null,
      'x',
      { version: 2, columns: [] },
      { version: 1 },
      { version: 1, columns: [{ name: 'a' }] },
      { version: 1, columns: [{ name: 'a', type: 'decimal(38,0)' }] },
      { version: 1, columns: [{ name: 'a', type: 'BIGINT', format: '%Y' }] },
    ])
      expect(parseSourceTypes(bad)).toBeUndefined()
  })

  it('compares columns by name, type and format, in any order', () => {
    const reordered = { version: 1 as const, columns: [...record.columns].reverse() }
    expect(sameSourceTypes(record, reordered)).toBe(true)
    expect(sameSourceTypes(record, undefined)).toBe(false)
    expect(sameSourceTypes(undefined, undefined)).toBe(true)
    const otherFormat = {
      version: 1 as const,
      columns: [record.columns[0]!, { name: 'd', type: 'DATE', format: '%m/%d/%Y' }],
    }
    expect(sameSourceTypes(record, otherFormat)).toBe(false)
    expect(sameSourceTypes(record, { version: 1, columns: [record.columns[0]!] })).toBe(false)
  })

  it('describes a column as dimsync.yaml declares it', () => {
    expect(describeColumnType({ name: 'acct', type: 'DECIMAL(38,0)' })).toBe('DECIMAL(38,0)')
    expect(describeColumnType({ name: 'd', type: 'DATE', format: "%d/%m/%Y 'x'" })).toBe(
      "{ type: DATE, format: '%d/%m/%Y ''x''' }",
    )
    expect(takesFormat('TIMESTAMP')).toBe(true)
    expect(takesFormat('BIGINT')).toBe(false)
  })
})
