import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { canonicalJson } from '../../../lib/core/canonical-json.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { BigQueryEmulator } from '../../support/bigquery-emulator/bigquery-emulator.ts'

/**
 * canonicalJson is BigQuery's text of a JSON value: ZetaSQL's reference implementation (BigQuery's JSON type and
 * TO_JSON_STRING) gives back exactly the canonical text of every document it accepts, so DuckDB stores and hashes
 * what BigQuery stores and hashes. Documents are generated, then re-spaced and re-ordered as sources print them.
 */
const PROJECT = 'acme-dw'
const bq = createBigQueryDialect({ project: PROJECT })

/** The same document as another writer might print it: keys reversed, spaces after `:` and `,`. */
function reprinted(value: unknown): string {
  if (Array.isArray(value)) return `[ ${value.map(reprinted).join(' , ')} ]`
  if (value !== null && typeof value === 'object')
    return `{ ${Object.entries(value)
      .reverse()
      .map(([k, v]) => `${JSON.stringify(k)} : ${reprinted(v)}`)
      .join(', ')} }`
  return JSON.stringify(value)
}

const TRICKY = [
  '{"b": 1,  "a": {"d": [1, {"z": 0, "y": 1}], "c": 2}}',
  '{"bb": 1, "a": 2, "B": 3, "é": 4, "\uffff": 5, "😀": 6, "": 7}',
  '[1, -0, 2.50, 1e2, 1.0, -0.0, 0.1, 1e-7, 1e15, 1e16, 123456.789e3, 0.0001, 0.00001, 5e-324, 1.7976931348623157e308]',
  '[18446744073709551615, -9223372036854775808, 9223372036854775807, 1.0000000000000002, 3e-05, 1e21]',
  // Whole numbers past 64 bits whose digits are a double's shortest: BigQuery reads and prints the double.
  '[-9223372036854776000, 100000000000000000000, 18446744073709552000, 1000000000000000000000000]',
  // Doubles whose shortest digits (JavaScript's) lie halfway to a neighbour: BigQuery prints 17 digits.
  '[21817874710200752.000, 2.1817874710200752e16, -31042952451206888.0]',
  '"\\u0041\\/\\b\\f\\n\\r\\t\\u0001\\u001F\\u007f é 😀 \\ud83d\\ude00 <>&\'\\"\\\\ \\u2028"',
  '{"a":1,"a":2}',
  '[true, false, null, {}, [], ""]',
]

describe('canonicalJson is what BigQuery makes of a JSON document (ZetaSQL executes PARSE_JSON, TO_JSON_STRING)', () => {
  let emulator: BigQueryEmulator
  beforeAll(async () => {
    emulator = await BigQueryEmulator.start()
  })
  afterAll(async () => {
    await emulator?.stop()
  })

  /** BigQuery's text of each document and of its canonical text; undefined where BigQuery refuses the document. */
  async function bigQueryTexts(texts: readonly string[]): Promise<{ of: string; ofCanonical: string }[]> {
    const rows = texts.map(
      (t, i) => `STRUCT(${i} AS i, ${bq.stringLiteral(t)} AS t, ${bq.stringLiteral(canonicalJson(t))} AS c)`,
    )
    const result = await emulator.query(
      PROJECT,
      `SELECT i, TO_JSON_STRING(PARSE_JSON(t)) AS of_text, TO_JSON_STRING(PARSE_JSON(c)) AS of_canonical FROM UNNEST([${rows.join(',\n')}]) ORDER BY i`,
    )
    return result.map((r) => ({ of: String(r.of_text), ofCanonical: String(r.of_canonical) }))
  }

  it('documents with reordered keys, spacing, number spellings, escapes and duplicate keys', async () => {
    const answers = await bigQueryTexts(TRICKY)
    expect(answers.map((a) => a.of)).toEqual(TRICKY.map(canonicalJson))
    expect(answers.map((a) => a.ofCanonical)).toEqual(TRICKY.map(canonicalJson))
  }, 60_000)

  it('property: any document, as printed by JSON.stringify and re-printed with reversed keys and spaces', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.jsonValue({ maxDepth: 3 }), { minLength: 1, maxLength: 20 }),
        async (values) => {
          const texts = values.flatMap((v) => [JSON.stringify(v), reprinted(v)])
          const answers = await bigQueryTexts(texts)
          expect(answers.map((a) => a.of)).toEqual(texts.map(canonicalJson))
          for (let i = 0; i < texts.length; i += 2)
            expect(canonicalJson(texts[i + 1]!)).toBe(canonicalJson(texts[i]!))
        },
      ),
      { numRuns: 25 },
    )
  }, 300_000)

  it('property: any number, as sources spell it: BigQuery prints it as canonicalJson does, or refuses it and canonicalJson keeps it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(numberArb, { minLength: 1, maxLength: 40 }), async (numbers) => {
        const texts = [...new Set(numbers.flatMap(spellings))]
        // SAFE.PARSE_JSON answers NULL where PARSE_JSON refuses, so one query checks every spelling.
        const rows = texts.map((t, i) => `STRUCT(${i} AS i, ${bq.stringLiteral(t)} AS t)`)
        const answers = await emulator.query(
          PROJECT,
          `SELECT i, TO_JSON_STRING(SAFE.PARSE_JSON(t)) AS printed FROM UNNEST([${rows.join(',\n')}]) ORDER BY i`,
        )
        const expected = answers.map((a) => {
          const text = texts[Number(a.i)]!
          return a.printed === null || a.printed === 'null' ? text : String(a.printed)
        })
        expect(texts.map(canonicalJson)).toEqual(expected)
      }),
      { numRuns: 20 },
    )
  }, 300_000)
})

/**
 * Doubles of every range, whole numbers past 2^53 (where a double's shortest digits can lie halfway to its
 * neighbour) and past 64 bits, and the boundaries of BigQuery's notations.
 */
const numberArb = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer().map((n) => n / 1000),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(Number),
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 62n }).map(Number),
  fc.constantFrom(1e15, 1e16, 1e-4, 1e-5, 9.999999999999999e14, 0.00009999, 2 ** 53, 2 ** 64, -(2 ** 63)),
)

/** A number as JSON writers, databases and people print it (each a valid JSON number). */
function spellings(x: number): string[] {
  const texts = [
    JSON.stringify(x),
    `${String(x)}.0`,
    x.toExponential(),
    x.toExponential().toUpperCase(),
    x.toExponential(3),
    x.toExponential(16),
    x.toPrecision(15),
    x.toPrecision(17),
    x.toPrecision(20),
  ]
  if (Math.abs(x) < 1e21) texts.push(x.toFixed(0), x.toFixed(6), x.toFixed(20))
  return texts.filter((t) => /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/.test(t))
}
