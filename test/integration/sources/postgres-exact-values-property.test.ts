import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { PostgresSource } from '../../../lib/adapters/source/postgres-source.ts'
import { canonicalJson } from '../../../lib/core/canonical-json.ts'
import { SourceError } from '../../../lib/core/errors.ts'
import { exactNumber } from '../../support/exact-number.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ExtractHarness } from './support/extract-harness.ts'
import { PG_URL, PgScratch, postgresReachable } from './support/db-services.ts'

const available = await postgresReachable()

/**
 * What the source said is what is staged, as a property: random rows of a PostgreSQL table of many types are
 * extracted into Parquet, and each value's text (as PostgreSQL prints it, and as DuckDB prints the staged one) must
 * mean the same: the same digits, the same day, the same microsecond, the same bytes, the same JSON document (as
 * its canonical text) — or the extract is refused naming the column.
 */
interface Column {
  readonly name: string
  readonly type: string
  readonly values: fc.Arbitrary<string | null>
  /** PostgreSQL's text of the column, and DuckDB's text of the staged one, before `same` compares them. */
  readonly pg: (c: string) => string
  readonly duck: (c: string) => string
  readonly same?: (pg: string, duck: string) => boolean
}

/**
 * A double's (or a real's) value from its text: JavaScript reads NaN, Infinity and -0 as PostgreSQL and DuckDB
 * print them. Two printers may spell one double differently (where its shortest digits lie halfway to the next
 * double, PostgreSQL prints 17 digits and DuckDB the shortest), so values are compared, not texts.
 */
function floatValue(text: string, round: (x: number) => number): number {
  const t = text.trim().toLowerCase()
  if (t === 'nan') return NaN
  if (/^[+-]?inf(inity)?$/.test(t)) return t.startsWith('-') ? -Infinity : Infinity
  return round(Number(t))
}
/** The same float, its two zeros one value (docs/limits.md: DuckDB keeps no sign of zero apart from the other). */
const sameFloat = (a: number, b: number) => a === b || (Number.isNaN(a) && Number.isNaN(b))
const sameDouble = (pg: string, duck: string) => sameFloat(floatValue(pg, Number), floatValue(duck, Number))
const sameReal = (pg: string, duck: string) =>
  sameFloat(floatValue(pg, Math.fround), floatValue(duck, Math.fround))
const sameNumber = (pg: string, duck: string) =>
  exactNumber(pg) !== undefined && exactNumber(pg) === exactNumber(duck)
const nullable = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { freq: 8, nil: null })
const text = (c: string) => `CAST(${c} AS VARCHAR)`
const pgText = (c: string) => `${c}::text`
const specialFloats = fc.constantFrom('NaN', 'Infinity', '-Infinity', '-0')
// Days and microseconds from 2000-01-01 where the value is finite, its text where it is not (infinity).
const pgDays = (c: string) =>
  `CASE WHEN isfinite(${c}) THEN (${c} - DATE '2000-01-01')::text ELSE ${c}::text END`
const duckDays = (c: string) =>
  `CASE WHEN isfinite(${c}) THEN CAST(${c} - DATE '2000-01-01' AS VARCHAR) ELSE CAST(${c} AS VARCHAR) END`
const pgMicros = (c: string) =>
  `CASE WHEN isfinite(${c}) THEN (extract(epoch FROM ${c}) * 1000000)::numeric(30,0)::text ELSE ${c}::text END`
const duckMicros = (c: string) =>
  `CASE WHEN isfinite(${c}) THEN CAST(epoch_us(${c}) AS VARCHAR) ELSE CAST(${c} AS VARCHAR) END`
const dayArb = fc.integer({ min: -2_400_000, max: 2_900_000 })
const instantArb = fc.bigInt({ min: -(2n ** 56n), max: 2n ** 56n })

const COLUMNS: readonly Column[] = [
  {
    name: 'f8',
    type: 'float8',
    values: nullable(
      fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }).map(String), specialFloats),
    ),
    pg: pgText,
    duck: text,
    same: sameDouble,
  },
  {
    name: 'f4',
    type: 'float4',
    values: nullable(fc.oneof(fc.float({ noNaN: true, noDefaultInfinity: true }).map(String), specialFloats)),
    pg: pgText,
    duck: text,
    same: sameReal,
  },
  {
    name: 'n',
    type: 'numeric(30,6)',
    values: nullable(
      fc
        .tuple(fc.bigInt({ min: -(10n ** 24n) + 1n, max: 10n ** 24n - 1n }), fc.integer({ min: 0, max: 9 }))
        .map(([units, scale]) => (scale === 0 ? String(units) : `${units}e-${scale}`)),
    ),
    pg: pgText,
    duck: text,
    same: sameNumber,
  },
  {
    name: 'nf',
    type: 'numeric',
    values: nullable(
      fc.oneof(
        fc
          .tuple(fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }), fc.integer({ min: -30, max: 30 }))
          .map(([units, exponent]) => `${units}e${exponent}`),
        fc.constant('NaN'),
      ),
    ),
    pg: pgText,
    duck: text,
  },
  {
    name: 't',
    type: 'text',
    values: nullable(fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => s.replaceAll('\0', ''))),
    pg: pgText,
    duck: text,
  },
  {
    name: 'b',
    type: 'bytea',
    values: nullable(fc.uint8Array({ maxLength: 12 }).map((a) => `\\x${Buffer.from(a).toString('hex')}`)),
    pg: (c) => `encode(${c}, 'hex')`,
    duck: (c) => `lower(hex(${c}))`,
  },
  {
    name: 'd',
    type: 'date',
    values: nullable(
      fc.oneof(
        { weight: 9, arbitrary: dayArb.map((n) => `${n}`) },
        { weight: 1, arbitrary: fc.constantFrom('infinity', '-infinity') },
      ),
    ),
    pg: pgDays,
    duck: duckDays,
  },
  {
    name: 'ts',
    type: 'timestamp(6)',
    values: nullable(instantArb.map(String)),
    pg: pgMicros,
    duck: duckMicros,
  },
  {
    name: 'tz',
    type: 'timestamptz(6)',
    values: nullable(
      fc.oneof(
        { weight: 9, arbitrary: instantArb.map(String) },
        { weight: 1, arbitrary: fc.constantFrom('infinity', '-infinity') },
      ),
    ),
    pg: pgMicros,
    duck: duckMicros,
  },
  {
    name: 'j',
    type: 'jsonb',
    values: nullable(fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v))),
    pg: pgText,
    duck: text,
    same: (pg, duck) => canonicalJson(pg) === duck,
  },
  {
    name: 'u',
    type: 'uuid',
    values: nullable(fc.uuid()),
    pg: pgText,
    duck: text,
  },
]

/** How a generated value is written into its column: days and microseconds from 2000-01-01 become a date and an instant. */
function literal(column: Column, value: string): string {
  const v = `'${value.replaceAll("'", "''")}'`
  if (value.endsWith('infinity')) return `${v}::${column.type}`
  if (column.type === 'date') return `(DATE '2000-01-01' + ${value})`
  if (column.type.startsWith('timestamp')) {
    const at = `(TIMESTAMPTZ '2000-01-01 00:00:00+00' + ${value} * INTERVAL '1 microsecond')`
    return column.type.startsWith('timestamptz') ? at : `(${at} AT TIME ZONE 'UTC')`
  }
  return `${v}::${column.type}`
}

describe.skipIf(!available)(
  'PostgreSQL values are staged as the source holds them (property, real PostgreSQL)',
  () => {
    let db: PgScratch
    let harness: ExtractHarness
    const source = new PostgresSource({ env: { PG_URL } })

    beforeAll(async () => {
      db = await PgScratch.create()
      harness = await ExtractHarness.create()
      await db.sql(
        `CREATE TABLE ${db.schema}.values_of_every_type (id int PRIMARY KEY, ${COLUMNS.map((c) => `${c.name} ${c.type}`).join(', ')})`,
      )
    })
    afterAll(async () => {
      await db?.drop()
      await harness?.close()
    })

    it('any rows: every staged value means what PostgreSQL holds, or the extract is refused naming the column', async () => {
      const table = tableSpec({
        name: 'values_of_every_type',
        key: ['id'],
        source: { type: 'postgres', urlEnv: 'PG_URL', table: `${db.schema}.values_of_every_type` },
      })
      const rowArb = fc.tuple(...COLUMNS.map((c) => c.values))
      let refused = 0
      await fc.assert(
        fc.asyncProperty(fc.array(rowArb, { minLength: 1, maxLength: 8 }), async (rows) => {
          const target = `${db.schema}.values_of_every_type`
          await db.sql(`TRUNCATE ${target}`)
          // A value PostgreSQL itself refuses (a day past its calendar) is left out of the row: NULL.
          for (const [i, row] of rows.entries()) {
            await db.sql(`INSERT INTO ${target} (id) VALUES (${i + 1})`)
            for (const [j, value] of row.entries()) {
              if (value === null) continue
              const column = COLUMNS[j]!
              await db
                .sql(`UPDATE ${target} SET ${column.name} = ${literal(column, value)} WHERE id = ${i + 1}`)
                .catch(() => undefined)
            }
          }
          const held = (
            await db.sql(
              `SELECT id, ${COLUMNS.map((c) => `${c.pg(c.name)} AS ${c.name}`).join(', ')} FROM ${target} ORDER BY id`,
            )
          ).rows as Record<string, string | null>[]
          const staged = await harness
            .extract(source, table, {
              select: `id, ${COLUMNS.map((c) => `${c.duck(`"${c.name}"`)} AS "${c.name}"`).join(', ')}`,
            })
            .catch((e: unknown) => e)
          if (staged instanceof Error) {
            refused++
            expect(staged).toBeInstanceOf(SourceError)
            expect(
              COLUMNS.some((c) => staged.message.includes(c.name)),
              staged.message,
            ).toBe(true)
            return
          }
          const { rows: back } = staged as { rows: Record<string, unknown>[] }
          expect(back.map((r) => Number(r.id))).toEqual(held.map((r) => Number(r.id)))
          for (const [i, row] of held.entries()) {
            for (const c of COLUMNS) {
              const [pg, duck] = [row[c.name] ?? null, (back[i]![c.name] as string | null) ?? null]
              const where = `row ${row.id}, column ${c.name} (${c.type}): PostgreSQL ${pg}, staged ${duck}`
              if (pg === null || duck === null) expect(duck, where).toBe(pg)
              else expect((c.same ?? ((a, b) => a === b))(pg, duck), where).toBe(true)
            }
          }
        }),
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 15) },
      )
      expect(refused).toBeLessThan(Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 15))
    }, 600_000)
  },
)
