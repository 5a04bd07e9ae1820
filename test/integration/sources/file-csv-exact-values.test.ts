import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'

import { BatchRejectedError, SourceError } from '../../../lib/core/errors.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'
import { exactNumber } from '../../support/exact-number.ts'

/*
 * "Exactly or not at all" (docs/sources.md, CSV column types), as a property: a CSV column of random values, one
 * file and then another (the second read with the types the first recorded), through the embedded pipeline. After
 * each run either every value stored means what its cell says (the same text in a VARCHAR column, the same number
 * in a numeric one, the same day in one date format for every value the column ever stored), or the run was refused
 * naming the column and the dimension is as it was.
 */

let embedded: EmbeddedProject | undefined
afterEach(async () => {
  await embedded?.dispose()
  embedded = undefined
})

type Kind = 'integer' | 'wide' | 'decimal' | 'double' | 'date' | 'timestamp' | 'boolean' | 'text' | 'zeros'
const KINDS: readonly Kind[] = [
  'integer',
  'wide',
  'decimal',
  'double',
  'date',
  'timestamp',
  'boolean',
  'text',
  'zeros',
]

const pad = (n: number, width = 2) => String(n).padStart(width, '0')
const dayArb = fc.record({
  y: fc.integer({ min: 1990, max: 2040 }),
  m: fc.integer({ min: 1, max: 12 }),
  d: fc.integer({ min: 1, max: 28 }),
})

function cellOf(kind: Kind): fc.Arbitrary<string> {
  switch (kind) {
    case 'integer':
      return fc.integer({ min: -1_000_000, max: 1_000_000 }).map(String)
    case 'wide':
      return fc.bigInt({ min: -(10n ** 24n), max: 10n ** 24n }).map(String)
    case 'decimal':
      return fc
        .tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 1, max: 4 }))
        .map(([units, scale]) => {
          const digits = (units < 0n ? -units : units).toString().padStart(scale + 1, '0')
          return `${units < 0n ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`
        })
    case 'double':
      return fc
        .double({ noNaN: true, noDefaultInfinity: true, min: -1e30, max: 1e30 })
        .chain((x) => fc.constantFrom(String(x), x.toExponential(), x.toPrecision(17)))
    case 'date':
      return dayArb.chain(({ y, m, d }) =>
        fc.constantFrom(`${y}-${pad(m)}-${pad(d)}`, `${pad(d)}/${pad(m)}/${y}`, `${pad(m)}/${pad(d)}/${y}`),
      )
    case 'timestamp':
      return fc
        .tuple(dayArb, fc.integer({ min: 0, max: 86_399 }))
        .map(
          ([{ y, m, d }, s]) =>
            `${y}-${pad(m)}-${pad(d)} ${pad(Math.floor(s / 3600))}:${pad(Math.floor(s / 60) % 60)}:${pad(s % 60)}`,
        )
    case 'boolean':
      return fc.constantFrom('true', 'false', 'TRUE', 'False')
    case 'text':
      return fc.constantFrom('abc', 'N/A', 'x y', '-', '1.2.3', '12a')
    case 'zeros':
      return fc.constantFrom('007', '02134', '-01.5', '0042')
  }
}

/**
 * A column: mostly values of one kind, now and then another (numbers with leading zeros more often: they read as
 * numbers in a column recorded as one) or an empty field (NULL). The second file strays more than the first.
 */
const columnArb = (kind: Kind, strays: number) =>
  fc.array(
    fc.oneof(
      { weight: 12, arbitrary: cellOf(kind) },
      { weight: strays, arbitrary: fc.constantFrom(...KINDS).chain(cellOf) },
      { weight: strays, arbitrary: cellOf('zeros') },
      { weight: 1, arbitrary: fc.constant('') },
    ),
    { minLength: 1, maxLength: 6 },
  )

const scenarioArb = fc
  .tuple(fc.constantFrom(...KINDS), fc.constantFrom(...KINDS), fc.boolean())
  .chain(([first, other, same]) => fc.tuple(columnArb(first, 1), columnArb(same ? first : other, 4)))

/** The formats a stored DATE's text can be read from, each with the cell it would print. */
const DATE_FORMATS: Record<string, (y: string, m: string, d: string) => string> = {
  iso: (y, m, d) => `${y}-${m}-${d}`,
  dayFirst: (y, m, d) => `${d}/${m}/${y}`,
  monthFirst: (y, m, d) => `${m}/${d}/${y}`,
}

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UBIGINT|DECIMAL|DOUBLE|FLOAT|REAL)/

/**
 * Whether the stored text means the cell, for a column of `type`; `formats` narrows to the date formats every
 * stored date so far was read with.
 */
function means(cell: string, stored: string | null, type: string, formats: Set<string>): string | undefined {
  if (cell === '') return stored === null ? undefined : `an empty field stored as ${stored}`
  if (stored === null) return `${cell} stored as NULL`
  if (type === 'VARCHAR') return stored === cell ? undefined : `${cell} stored as ${stored}`
  if (NUMERIC.test(type)) {
    if (/^[+-]?0\d/.test(cell)) return `${cell}, written with a leading zero, stored in ${type} as ${stored}`
    const [a, b] = [exactNumber(cell), exactNumber(stored)]
    return a !== undefined && a === b ? undefined : `${cell} stored in ${type} as ${stored}`
  }
  if (type === 'DATE') {
    const [y, m, d] = stored.split('-') as [string, string, string]
    for (const f of [...formats]) if (DATE_FORMATS[f]!(y, m, d) !== cell) formats.delete(f)
    return formats.size > 0 ? undefined : `${cell} stored as DATE ${stored} (no one format reads every date)`
  }
  if (type === 'TIMESTAMP')
    return stored === cell || stored === `${cell} 00:00:00` ? undefined : `${cell} stored as ${stored}`
  if (type === 'BOOLEAN') return stored === cell.toLowerCase() ? undefined : `${cell} stored as ${stored}`
  return `${cell} stored as ${type} ${stored}: a type this test does not know`
}

describe('a CSV column stores what each cell says, or the run is refused naming it (property, embedded pipeline)', () => {
  it('any values, in a first file and then in another read with the recorded types', async () => {
    let stored = 0
    let refused = 0
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (files) => {
        await embedded?.dispose()
        const p = (embedded = await makeEmbeddedProject(customersYaml(), 'dimsync-csv-exact-'))
        const table = p.project.tables[0]!
        const dimension = async () => {
          const warehouse = await p.deps.openWarehouse()
          const columns = await warehouse.describeTable({ schema: 'main', name: 'dim_customers' })
          if (columns === undefined) return { type: undefined, rows: [] }
          const rows = (await warehouse.query(
            `SELECT customer_id, CAST(v AS VARCHAR) AS v, CAST(valid_from AS VARCHAR) AS valid_from, is_current
             FROM main.dim_customers ORDER BY customer_id, valid_from`,
          )) as { customer_id: unknown; v: string | null; is_current: boolean }[]
          return { type: columns.find((c) => c.name === 'v')?.type, rows }
        }
        const formats = new Set(Object.keys(DATE_FORMATS))
        for (const [i, cells] of files.entries()) {
          const before = await dimension()
          p.writeCsv(
            'customers.csv',
            'customer_id,v',
            cells.map((cell, row) => `${row + 1},${cell}`),
          )
          const error = await runTable(p.deps, table, {
            extractedAt: new Date(Date.UTC(2024, i, 1)),
          }).then(
            () => undefined,
            (e: unknown) => e,
          )
          const after = await dimension()
          if (error !== undefined) {
            refused++
            expect(error, String(error)).toSatisfy(
              (e) => e instanceof SourceError || e instanceof BatchRejectedError,
            )
            expect((error as Error).message).toMatch(/column "?v"?\b/)
            expect(after, 'a refused run leaves the dimension as it was').toEqual(before)
            continue
          }
          stored++
          const current = new Map(
            after.rows.filter((r) => r.is_current).map((r) => [Number(r.customer_id), r.v]),
          )
          for (const [row, cell] of cells.entries()) {
            const wrong = means(cell, current.get(row + 1) ?? null, after.type!, formats)
            expect(wrong, `file ${i + 1}, line ${row + 2}: ${cells.join(' | ')}`).toBeUndefined()
          }
        }
      }),
      { numRuns: Number(process.env.DIMSYNC_PROPERTY_RUNS ?? 25) },
    )
    expect(stored).toBeGreaterThan(0)
    expect(refused).toBeGreaterThan(0)
  }, 600_000)
})
