import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { PostgresSource } from '../../../lib/adapters/source/postgres-source.ts'
import { canonicalJson } from '../../../lib/core/canonical-json.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'
import { ExtractHarness } from './support/extract-harness.ts'
import { PG_URL, PgScratch, postgresReachable } from './support/db-services.ts'
import {
  expectStagedAsHeld,
  insertRows,
  nullable,
  rowsOf,
  sameDigits,
  sameDouble,
  sameReal,
  stagedSelect,
  type ExactColumn,
} from './support/exact-values.ts'

const available = await postgresReachable()

/*
 * What the source said is what is staged, as a property: random rows of a PostgreSQL table of many types are
 * extracted into Parquet, and each value's text (as PostgreSQL prints it, and as DuckDB prints the staged one) must
 * mean the same: the same digits, the same day, the same microsecond, the same bytes, the same JSON document (as
 * its canonical text) — or the extract is refused naming the column.
 */
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

const COLUMNS: readonly ExactColumn[] = [
  {
    name: 'f8',
    type: 'float8',
    values: nullable(
      fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }).map(String), specialFloats),
    ),
    held: pgText,
    staged: text,
    same: sameDouble,
  },
  {
    name: 'f4',
    type: 'float4',
    values: nullable(fc.oneof(fc.float({ noNaN: true, noDefaultInfinity: true }).map(String), specialFloats)),
    held: pgText,
    staged: text,
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
    held: pgText,
    staged: text,
    same: sameDigits,
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
    held: pgText,
    staged: text,
  },
  {
    name: 't',
    type: 'text',
    values: nullable(fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => s.replaceAll('\0', ''))),
    held: pgText,
    staged: text,
  },
  {
    name: 'b',
    type: 'bytea',
    values: nullable(fc.uint8Array({ maxLength: 12 }).map((a) => `\\x${Buffer.from(a).toString('hex')}`)),
    held: (c) => `encode(${c}, 'hex')`,
    staged: (c) => `lower(hex(${c}))`,
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
    held: pgDays,
    staged: duckDays,
  },
  {
    name: 'ts',
    type: 'timestamp(6)',
    values: nullable(instantArb.map(String)),
    held: pgMicros,
    staged: duckMicros,
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
    held: pgMicros,
    staged: duckMicros,
  },
  {
    name: 'j',
    type: 'jsonb',
    values: nullable(fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v))),
    held: pgText,
    staged: text,
    same: (pg, duck) => canonicalJson(String(pg)) === duck,
  },
  {
    name: 'u',
    type: 'uuid',
    values: nullable(fc.uuid()),
    held: pgText,
    staged: text,
  },
]

/** How a generated value is written into its column: days and microseconds from 2000-01-01 become a date and an instant. */
function literal(column: ExactColumn, value: string): string {
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
      let refused = 0
      await fc.assert(
        fc.asyncProperty(rowsOf(COLUMNS), async (rows) => {
          const target = `${db.schema}.values_of_every_type`
          await db.sql(`TRUNCATE ${target}`)
          await insertRows((text) => db.sql(text), target, COLUMNS, rows, literal)
          const held = (
            await db.sql(
              `SELECT id, ${COLUMNS.map((c) => `${c.held(c.name)} AS ${c.name}`).join(', ')} FROM ${target} ORDER BY id`,
            )
          ).rows as Record<string, unknown>[]
          const staged = await harness
            .extract(source, table, { select: stagedSelect(COLUMNS) })
            .catch((e: unknown) => e)
          if (expectStagedAsHeld(COLUMNS, held, staged) === 'refused') refused++
        }),
        { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 15) },
      )
      expect(refused).toBeLessThan(Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 15))
    }, 600_000)
  },
)
