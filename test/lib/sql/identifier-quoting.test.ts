import { describe, expect, it } from 'vitest'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import { ScdHarness } from '../../support/scd-harness.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

const bigQuery = createBigQueryDialect({ project: 'p' })

describe('identifiers and literals are quoted, never pasted', () => {
  it.each([
    ['a"b', '"a""b"', '`a"b`'],
    ['a`b', '"a`b"', '`a\\`b`'],
    ['x; DROP TABLE t; --', '"x; DROP TABLE t; --"', '`x; DROP TABLE t; --`'],
  ])('identifier %s', (name, duck, bq) => {
    expect(duckDbDialect.quoteIdentifier(name)).toBe(duck)
    expect(bigQuery.quoteIdentifier(name)).toBe(bq)
  })

  it.each([
    ["it's", "'it''s'", "'it\\'s'"],
    ['back\\slash', "'back\\slash'", "'back\\\\slash'"],
    ["'); DROP TABLE t; --", "'''); DROP TABLE t; --'", "'\\'); DROP TABLE t; --'"],
  ])('string %s', (value, duck, bq) => {
    expect(duckDbDialect.stringLiteral(value)).toBe(duck)
    expect(bigQuery.stringLiteral(value)).toBe(bq)
  })

  it('a merge on real DuckDB works with hostile column names and values, and changes nothing else', async () => {
    const key = 'cust"id'
    const attribute = "re'gion`; DROP TABLE dim_customer; --"
    // The table's own name is not hostile: config holds only [a-z][a-z0-9_]* there and staging refuses others.
    const h = await ScdHarness.create(tableSpec({ key: [key], name: 'o_brien', target: 'dim "x"' }), [
      { name: key, type: 'BIGINT' },
      { name: attribute, type: 'VARCHAR' },
    ])
    try {
      await h.load([{ [key]: 1, [attribute]: "'); DELETE FROM dim; --" }], {
        extractedAt: '2024-01-01T00:00:00Z',
      })
      await h.load([{ [key]: 1, [attribute]: 'North' }], { extractedAt: '2024-02-01T00:00:00Z' })
      const rows = await h.query(
        `SELECT "cust""id" AS k, "${attribute.replaceAll('"', '""')}" AS v, is_current FROM "dim ""x""" ORDER BY valid_from`,
      )
      expect(rows).toEqual([
        { k: 1, v: "'); DELETE FROM dim; --", is_current: false },
        { k: 1, v: 'North', is_current: true },
      ])
    } finally {
      await h.dispose()
    }
  })
})
