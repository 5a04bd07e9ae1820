import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Row } from '../../lib/ports/warehouse.ts'
import { buildDateDimension } from '../../lib/use-cases/build-date-dimension.ts'
import { ZetaSqlService } from '../support/bigquery-emulator/zetasql-service.ts'
import { FactHarness } from '../support/fact-harness.ts'

let zeta: ZetaSqlService
beforeAll(async () => {
  zeta = await ZetaSqlService.start()
})
afterAll(async () => {
  await zeta?.stop()
})

async function build(h: FactHarness): Promise<Row[][]> {
  const q = (name: string) => h.warehouse.dialect.quoteIdentifier(name)
  const read = () =>
    h.query(
      `SELECT ${q('date_key')}, ${h.warehouse.dialect.castToString(q('date'))} AS day, iso_year, iso_week, day_of_week, is_weekend, holiday FROM ${h.t('dim_date')} ORDER BY ${q('date_key')}`,
    )
  const deps = { warehouse: h.warehouse }
  await buildDateDimension(deps, { schema: h.schema, from: '2020-12-30', to: '2021-01-02' })
  const first = await read()
  // Extended at both ends, holidays named; running the same again changes nothing.
  const holidays = new Map([['2021-01-01', "New Year's Day"]])
  await buildDateDimension(deps, { schema: h.schema, from: '2020-12-29', to: '2021-01-04', holidays })
  await buildDateDimension(deps, { schema: h.schema, from: '2021-01-01', to: '2021-01-01', holidays })
  return [first, await read()]
}

describe('dimsync dates on DuckDB and on the BigQuery emulator', () => {
  it('creates dim_date, extends it, names holidays, the same on both', async () => {
    const duck = await FactHarness.duckdb([])
    const bq = await FactHarness.bigquery(zeta, [])
    try {
      const [first, extended] = await build(duck)
      expect(first!.map((r) => r.date_key)).toEqual([20201230, 20201231, 20210101, 20210102])
      expect(extended).toEqual([
        {
          date_key: 20201229,
          day: '2020-12-29',
          iso_year: 2020,
          iso_week: 53,
          day_of_week: 2,
          is_weekend: false,
          holiday: null,
        },
        {
          date_key: 20201230,
          day: '2020-12-30',
          iso_year: 2020,
          iso_week: 53,
          day_of_week: 3,
          is_weekend: false,
          holiday: null,
        },
        {
          date_key: 20201231,
          day: '2020-12-31',
          iso_year: 2020,
          iso_week: 53,
          day_of_week: 4,
          is_weekend: false,
          holiday: null,
        },
        {
          date_key: 20210101,
          day: '2021-01-01',
          iso_year: 2020,
          iso_week: 53,
          day_of_week: 5,
          is_weekend: false,
          holiday: "New Year's Day",
        },
        {
          date_key: 20210102,
          day: '2021-01-02',
          iso_year: 2020,
          iso_week: 53,
          day_of_week: 6,
          is_weekend: true,
          holiday: null,
        },
        {
          date_key: 20210103,
          day: '2021-01-03',
          iso_year: 2020,
          iso_week: 53,
          day_of_week: 7,
          is_weekend: true,
          holiday: null,
        },
        {
          date_key: 20210104,
          day: '2021-01-04',
          iso_year: 2021,
          iso_week: 1,
          day_of_week: 1,
          is_weekend: false,
          holiday: null,
        },
      ])
      expect(await build(bq)).toEqual([first, extended])
    } finally {
      await duck.dispose()
      await bq.dispose()
    }
  })
})
