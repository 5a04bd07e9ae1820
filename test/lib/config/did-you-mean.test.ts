import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { editDistance, suggest } from '../../../lib/config/did-you-mean.ts'

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions and adjacent transpositions as one edit', () => {
    expect(editDistance('tracked', 'trackd')).toBe(1)
    expect(editDistance('tracked', 'trakced')).toBe(1)
    expect(editDistance('kitten', 'sitting')).toBe(3)
    expect(editDistance('', 'abc')).toBe(3)
    expect(editDistance('abc', 'abc')).toBe(0)
  })

  it('is symmetric and zero only for equal strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), (a, b) => {
        expect(editDistance(a, b)).toBe(editDistance(b, a))
        expect(editDistance(a, b) === 0).toBe(a === b)
        expect(editDistance(a, b)).toBeLessThanOrEqual(Math.max(a.length, b.length))
      }),
    )
  })
})

describe('suggest', () => {
  it('finds close typos and prefers the closest candidate', () => {
    expect(suggest('trackd', ['tracked', 'target', 'key'])).toBe('tracked')
    expect(suggest('custmer_id', ['customer_name', 'customer_id'])).toBe('customer_id')
    expect(suggest('dbtt', ['dimsync', 'dbt', 'fivetran'])).toBe('dbt')
  })

  it('catches case differences before anything else', () => {
    expect(suggest('Customer_ID', ['customer_name', 'customer_id'])).toBe('customer_id')
    expect(suggest('x', ['X', 'y'])).toBe('X')
  })

  it('allows up to a third of the length on long words', () => {
    expect(suggest('lookback_mins', ['lookback_minutes'])).toBe('lookback_minutes')
    expect(suggest('abcd', ['wxyz'])).toBeUndefined()
  })

  it('does not suggest unrelated or identical names', () => {
    expect(suggest('delete', ['ignore', 'invalidate', 'new_record'])).toBeUndefined()
    expect(suggest('x', ['id', 'ab'])).toBeUndefined()
    expect(suggest('id', ['id'])).toBeUndefined()
    expect(suggest('anything', [])).toBeUndefined()
  })

  it('only ever returns one of the candidates', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 8 }),
        fc.array(fc.string({ maxLength: 8 }), { maxLength: 5 }),
        (w, cs) => {
          const hit = suggest(w, cs)
          if (hit !== undefined) {
            expect(cs).toContain(hit)
            expect(hit).not.toBe(w)
          }
        },
      ),
    )
  })
})
