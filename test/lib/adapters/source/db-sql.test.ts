import { DuckDBInstance } from '@duckdb/node-api'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import {
  chunkBoundsSql,
  freshAliases,
  chunkPredicates,
  deltaPredicate,
  normalizeQuery,
  quoteIdent,
  relationSql,
  tupleAfter,
  whereClause,
  type SqlValue,
} from '../../../../lib/adapters/source/db-sql.ts'

const lit = (v: SqlValue) => `'${String(v).replaceAll("'", "''")}'`

describe('quoteIdent and relationSql', () => {
  it('quotes every part and doubles the quote character', () => {
    expect(quoteIdent('postgres', 'we"ird')).toBe('"we""ird"')
    expect(quoteIdent('mysql', 'we`ird')).toBe('`we``ird`')
    expect(relationSql('postgres', { type: 'postgres', urlEnv: 'U', table: 'sales.Customers' })).toBe(
      '"sales"."Customers"',
    )
    expect(relationSql('mysql', { type: 'mysql', urlEnv: 'U', table: 'customers' })).toBe('`customers`')
  })

  it('wraps a query as a derived table and drops trailing semicolons', () => {
    expect(relationSql('postgres', { type: 'postgres', urlEnv: 'U', query: 'SELECT 1 AS id;  \n' })).toBe(
      '(SELECT 1 AS id) AS "dimsync_source"',
    )
    expect(normalizeQuery("SELECT ';' AS x ;;")).toBe("SELECT ';' AS x")
  })
})

describe('tupleAfter', () => {
  it('spells a lexicographic tuple comparison with the last operator given', () => {
    expect(tupleAfter(['a'], [1], '>', lit)).toBe("(a > '1')")
    expect(tupleAfter(['c', 'k1', 'k2'], ['t', 1, 'x'], '>', lit)).toBe(
      "(c > 't' OR (c = 't' AND (k1 > '1' OR (k1 = '1' AND (k2 > 'x')))))",
    )
    expect(tupleAfter(['k'], ["o'hara"], '>=', lit)).toBe("(k >= 'o''hara')")
  })

  it('refuses a value count that differs from the columns', () => {
    expect(() => tupleAfter(['a', 'b'], [1], '>', lit)).toThrow('2 columns but 1 values')
  })
})

describe('deltaPredicate', () => {
  const base = {
    flavor: 'postgres' as const,
    cursor: '"u"',
    key: ['"id"'],
    lookbackMinutes: 0,
    cursorCastType: 'timestamp without time zone',
    literal: lit,
  }

  it('reads everything on the first run', () => {
    expect(deltaPredicate(base)).toBeUndefined()
  })

  it('reads every row at or after the watermark cursor: rows sharing it are read again, never skipped', () => {
    expect(deltaPredicate({ ...base, watermark: { cursor: '2024-01-01T00:00:00', key: [7] } })).toBe(
      `"u" >= '2024-01-01T00:00:00'`,
    )
  })

  it('with a look-back, re-reads every row within N minutes of the watermark cursor', () => {
    const watermark = { cursor: '2024-01-01T00:00:00', key: [7] }
    expect(deltaPredicate({ ...base, watermark, lookbackMinutes: 15 })).toBe(
      `"u" >= CAST('2024-01-01T00:00:00' AS timestamp without time zone) - INTERVAL '15 minutes'`,
    )
    expect(
      deltaPredicate({
        ...base,
        flavor: 'mysql',
        cursor: '`u`',
        cursorCastType: 'DATETIME(6)',
        watermark,
        lookbackMinutes: 15,
      }),
    ).toBe("`u` >= CAST('2024-01-01T00:00:00' AS DATETIME(6)) - INTERVAL 15 MINUTE")
  })

  it('refuses a watermark whose key has another width', () => {
    expect(() => deltaPredicate({ ...base, watermark: { cursor: 1, key: [1, 2] } })).toThrow('2 key values')
  })
})

describe('chunkPredicates', () => {
  it('one chunk reads everything', () => {
    expect(chunkPredicates(['id'], [], lit)).toEqual(['TRUE'])
    expect(whereClause([undefined, 'TRUE'])).toBe('')
  })

  it('splits at the bounds as key ranges an index can serve; the first chunk also takes NULL keys', () => {
    expect(chunkPredicates(['id'], [[10], [20]], lit)).toEqual([
      "(id < '10') OR id IS NULL",
      "id IS NOT NULL AND (id >= '10') AND (id < '20')",
      "id IS NOT NULL AND (id >= '20')",
    ])
    expect(chunkPredicates(['a', 'b'], [[1, 'x']], lit)).toEqual([
      "(a < '1' OR (a = '1' AND (b < 'x'))) OR a IS NULL OR b IS NULL",
      "a IS NOT NULL AND b IS NOT NULL AND (a > '1' OR (a = '1' AND (b >= 'x')))",
    ])
  })

  it('every row, NULL key parts included, lands in exactly one chunk (any bounds; evaluated by DuckDB)', async () => {
    const instance = await DuckDBInstance.create(':memory:')
    const connection = await instance.connect()
    try {
      const part = fc.option(fc.integer({ min: 0, max: 4 }), { nil: null })
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(part, part), { minLength: 1, maxLength: 30 }),
          fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 4 })), {
            minLength: 1,
            maxLength: 5,
            selector: ([a, b]) => `${a},${b}`,
          }),
          async (rows, unsorted) => {
            const bounds = [...unsorted].sort(([a1, b1], [a2, b2]) => a1 - a2 || b1 - b2)
            const predicates = chunkPredicates(['a', 'b'], bounds, (v) => String(v))
            const values = rows.map(([a, b]) => `(${a ?? 'NULL'}, ${b ?? 'NULL'})`).join(', ')
            const hits = predicates.map((p) => `CASE WHEN ${p} THEN 1 ELSE 0 END`).join(' + ')
            const result = await connection.runAndReadAll(
              `SELECT CAST(${hits} AS INTEGER) AS hits FROM (VALUES ${values}) AS t(a, b)`,
            )
            expect(result.getRowObjectsJson().map((r) => r.hits)).toEqual(rows.map(() => 1))
          },
        ),
        { numRuns: 200 },
      )
    } finally {
      connection.closeSync()
      instance.closeSync()
    }
  })

  it('bounds come from every step-th key of the snapshot in key order', () => {
    expect(chunkBoundsSql('"t"', ['to_json("id") #>> \'{}\''], ['"id"'], '', 250, ['id', 'name'])).toBe(
      `SELECT dimsync_k0 FROM (SELECT to_json("id") #>> '{}' AS dimsync_k0, ROW_NUMBER() OVER (ORDER BY "id") AS dimsync_k1 FROM "t") dimsync_keys WHERE dimsync_k1 > 1 AND MOD(dimsync_k1 - 1, 250) = 0 ORDER BY dimsync_k1`,
    )
  })
})

describe('freshAliases', () => {
  it('never names a column of the relation, whatever its case', () => {
    expect(freshAliases('w', 2, ['id'])).toEqual(['w0', 'w1'])
    expect(freshAliases('w', 2, ['W1', 'id'])).toEqual(['w_0', 'w_1'])
    expect(freshAliases('w', 2, ['w1', 'w_0'])).toEqual(['w__0', 'w__1'])
  })
})
