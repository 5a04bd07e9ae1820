import { describe, expect, it } from 'vitest'

import { caseOnlyCollision } from '../../../lib/core/column-name-case.ts'

describe('caseOnlyCollision', () => {
  it('finds the first two names that differ only in case', () => {
    expect(caseOnlyCollision(['id', 'Name', 'x', 'name', 'NAME'])).toEqual(['Name', 'name'])
    expect(caseOnlyCollision(['id', 'ÉTÉ', 'été'])).toEqual(['ÉTÉ', 'été'])
  })

  it('finds none among distinct names, and leaves a name given twice to the exact-duplicate check', () => {
    expect(caseOnlyCollision(['id', 'name', 'name_1', 'Name2'])).toBeUndefined()
    expect(caseOnlyCollision(['id', 'name', 'name'])).toBeUndefined()
    expect(caseOnlyCollision([])).toBeUndefined()
  })
})
