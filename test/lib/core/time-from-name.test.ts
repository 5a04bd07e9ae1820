import { describe, expect, it } from 'vitest'
import { compileTimePattern } from '../../../lib/core/time-from-name.ts'

describe('compileTimePattern', () => {
  it('reads dates and times from file names as UTC', () => {
    const at = compileTimePattern('customers_%Y-%m-%dT%H%M.csv')
    expect(at('customers_2024-03-10T1430.csv')?.toISOString()).toBe('2024-03-10T14:30:00.000Z')
    expect(at('customers_2024-03-10.csv')).toBeUndefined()
  })
  it('supports * and escapes regex characters', () => {
    const at = compileTimePattern('*export.%Y%m%d.csv')
    expect(at('crm-export.20240101.csv')?.toISOString()).toBe('2024-01-01T00:00:00.000Z')
    expect(at('crm-exportX20240101.csv')).toBeUndefined()
  })
  it('rejects impossible dates and patterns without a year', () => {
    expect(compileTimePattern('c_%Y-%m-%d.csv')('c_2024-02-31.csv')).toBeUndefined()
    expect(() => compileTimePattern('c_%m.csv')).toThrow('must contain %Y')
  })
})
