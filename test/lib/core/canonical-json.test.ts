import { describe, expect, it } from 'vitest'
import { canonicalJson } from '../../../lib/core/canonical-json.ts'

describe('canonicalJson: the text BigQuery gives a JSON value', () => {
  it('drops insignificant white space and sorts object keys by code point, at every depth', () => {
    expect(canonicalJson('{"b": 1,  "a": {"d": [1, {"z": 0, "y": 1}], "c": 2}}')).toBe(
      '{"a":{"c":2,"d":[1,{"y":1,"z":0}]},"b":1}',
    )
    expect(canonicalJson('{"bb": 1, "a": 2, "B": 3, "é": 4, "\uffff": 5, "😀": 6}')).toBe(
      '{"B":3,"a":2,"bb":1,"é":4,"\uffff":5,"😀":6}',
    )
    // jsonb and MySQL sort by length first and print spaces; reordered keys are the same document.
    expect(canonicalJson('{"a": 1, "bb": 2}')).toBe(canonicalJson('{"bb":2,"a":1}'))
  })

  it('keeps the first of duplicate keys, as BigQuery does', () => {
    expect(canonicalJson('{"a":1,"a":2}')).toBe('{"a":1}')
  })

  it('prints numbers as BigQuery does where a 64-bit integer or a double holds them exactly', () => {
    expect(
      canonicalJson('[1, -0, 2.50, 1e2, 1.0, -0.0, 0.1, 1e-7, 1e15, 123456.789e3, 0.0001, 0.00001]'),
    ).toBe('[1,0,2.5,100.0,1.0,-0.0,0.1,1e-07,1e+15,123456789.0,0.0001,1e-05]')
    expect(
      canonicalJson('[18446744073709551615, -9223372036854775808, 5e-324, 1.7976931348623157e308]'),
    ).toBe('[18446744073709551615,-9223372036854775808,5e-324,1.7976931348623157e+308]')
  })

  it('prints a whole number past 64 bits as the double it is when its digits are the shortest of that double', () => {
    // JavaScript's JSON.stringify of -(2 ** 63) and of 1e20; BigQuery reads them as doubles and prints them so.
    expect(canonicalJson('[-9223372036854776000, 100000000000000000000, 18446744073709552000]')).toBe(
      '[-9.223372036854776e+18,1e+20,1.8446744073709552e+19]',
    )
  })

  it('prints the 17 digits BigQuery prints where the shortest digits lie halfway to the next double', () => {
    // 21817874710200752 is a double; JavaScript prints it 21817874710200750, which reads back as it only by
    // rounding a tie to even. BigQuery's writer keeps strictly inside the double's interval.
    expect(
      canonicalJson('[21817874710200752.000, 2.1817874710200752e16, -31042952451206888.0, 2.5e16]'),
    ).toBe('[2.1817874710200752e+16,2.1817874710200752e+16,-3.1042952451206888e+16,2.5e+16]')
  })

  it('keeps the text of a number no double or 64-bit integer holds as written (BigQuery refuses it)', () => {
    expect(canonicalJson('[0.10000000000000001, 18446744073709551616, 1e400]')).toBe(
      '[0.10000000000000001,18446744073709551616,1e400]',
    )
  })

  it('escapes quotes, backslashes and control characters only', () => {
    expect(
      canonicalJson('"\\u0041\\/\\b\\f\\n\\r\\t\\u0001\\u001F\\u007f é 😀 \\ud83d\\ude00 <>&\'\\"\\\\"'),
    ).toBe('"A/\\b\\f\\n\\r\\t\\u0001\\u001f\u007f é 😀 😀 <>&\'\\"\\\\"')
  })

  it('returns text that is not one JSON document, or holds a lone surrogate, unchanged', () => {
    for (const text of ['{"a":1', '[1,]', '{"a":1} x', "{'a':1}", '"\\ud800"', 'NaN', '01'])
      expect(canonicalJson(text)).toBe(text)
  })
})
