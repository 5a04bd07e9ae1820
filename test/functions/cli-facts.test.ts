import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { runDimsync } from '../support/cli-process.ts'

let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-facts-'))
  writeFileSync(
    join(work, 'dimsync.yaml'),
    `version: 1
tables:
  - name: customers
    source: { type: file, path: customers.csv }
    key: customer_id
facts:
  - name: orders
    source: { type: file, path: orders.csv }
    grain: order_id
    event_time: ordered_at
    measures: [amount]
    references:
      - { dimension: customers, key: customer_id, as: customer }
`,
  )
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsync(...args: string[]) {
  return runDimsync(work, args)
}
const write = (name: string, lines: string[]) => writeFileSync(join(work, name), `${lines.join('\n')}\n`)

describe('dimsync run with facts (real process)', () => {
  it('merges the dimensions, then loads the facts and says how many went to the unknown member', () => {
    write('customers.csv', ['customer_id,region', '101,South'])
    write('orders.csv', [
      'order_id,customer_id,ordered_at,amount',
      '1,101,2024-02-01T10:00:00Z,10',
      '2,999,2024-02-01T10:00:00Z,5',
    ])
    const first = dimsync('run', '--extracted-at', '2024-01-01T00:00:00Z')
    expect(first.code).toBe(0)
    expect(first.out).toMatch(/^customers → dim_customers: batch \S+, 1 rows; 1 versions inserted/m)
    expect(first.out).toMatch(
      /^orders → fact_orders: batch \S+, 2 rows; 2 facts loaded, 1 to the unknown member of customers \(customer_sk\)$/m,
    )
    // One fact table alone, by name; a name that is neither a table nor a fact is refused, listing both.
    expect(dimsync('run', '--table', 'orders').out).toMatch(/^orders → fact_orders: .* 2 facts loaded/m)
    const unknown = dimsync('run', '--table', 'order')
    expect(unknown.code).not.toBe(0)
    expect(unknown.err).toContain('table order is not in')
    expect(unknown.err).toContain('(tables and facts: customers, orders)')
    // Four CLI processes, each starting Node and DuckDB.
  }, 180_000)
})

describe('dimsync run with inferred members (real process)', () => {
  it('adds a placeholder for an order of a customer not extracted yet; the next run completes it in place', async () => {
    writeFileSync(
      join(work, 'dimsync.yaml'),
      `version: 1
tables:
  - name: customers
    source: { type: file, path: customers.csv }
    key: customer_id
facts:
  - name: orders
    source: { type: file, path: orders.csv }
    grain: order_id
    event_time: ordered_at
    measures: [amount]
    references:
      - { dimension: customers, key: customer_id, as: customer, inferred: true }
`,
    )
    write('customers.csv', ['customer_id,region', '101,South'])
    write('orders.csv', [
      'order_id,customer_id,ordered_at,amount',
      '1,101,2024-02-01T10:00:00Z,10',
      '2,999,2024-02-01T10:00:00Z,5',
    ])
    const first = dimsync('run', '--extracted-at', '2024-01-01T00:00:00Z')
    expect(first.code).toBe(0)
    expect(first.out).toMatch(
      /^orders → fact_orders: batch \S+, 2 rows; 2 facts loaded, 0 to the unknown member of customers \(customer_sk\), 1 inferred member\(s\) added to customers$/m,
    )
    write('customers.csv', ['customer_id,region', '101,South', '999,North'])
    expect(dimsync('run', '--table', 'customers', '--extracted-at', '2024-04-01T00:00:00Z').code).toBe(0)
    const warehouse = await DuckDbWarehouse.open({ path: join(work, '.dimsync', 'warehouse.duckdb') })
    try {
      const rows = await warehouse.query(
        `SELECT o.order_id, c.customer_id, c.region, CAST(c.valid_from AS VARCHAR) AS valid_from, c.is_inferred ` +
          `FROM fact_orders o JOIN dim_customers c ON c.dimsync_sk = o.customer_sk ORDER BY o.order_id`,
      )
      expect(rows).toEqual([
        {
          order_id: 1,
          customer_id: 101,
          region: 'South',
          valid_from: '2024-01-01 00:00:00+00',
          is_inferred: false,
        },
        {
          order_id: 2,
          customer_id: 999,
          region: 'North',
          valid_from: '2024-02-01 10:00:00+00',
          is_inferred: false,
        },
      ])
      expect(
        await warehouse.query(`SELECT COUNT(*) AS n FROM dim_customers WHERE customer_id = 999`),
      ).toEqual([{ n: 1 }])
    } finally {
      await warehouse.close()
    }
  }, 180_000)
})

describe('dimsync dates (real process)', () => {
  it('writes dim_date with holidays from a file, and refuses a date that does not exist in one line', async () => {
    write('holidays.csv', ['date,name', '2025-01-01,New Year'])
    const built = dimsync('dates', '--from', '2024-12-30', '--to', '2025-01-02', '--holidays', 'holidays.csv')
    expect(built.code).toBe(0)
    expect(built.out).toContain('dim_date: 4 days written, 2024-12-30 to 2025-01-02')
    const warehouse = await DuckDbWarehouse.open({ path: join(work, '.dimsync', 'warehouse.duckdb') })
    try {
      const rows = await warehouse.query(
        `SELECT date_key, iso_year, iso_week, holiday FROM dim_date ORDER BY date_key`,
      )
      expect(rows.map((r) => [r.date_key, r.iso_year, r.iso_week, r.holiday])).toEqual([
        [20241230, 2025, 1, null],
        [20241231, 2025, 1, null],
        [20250101, 2025, 1, 'New Year'],
        [20250102, 2025, 1, null],
      ])
    } finally {
      await warehouse.close()
    }
    const bad = dimsync('dates', '--from', '2023-02-29', '--to', '2023-03-01')
    expect(bad.code).not.toBe(0)
    expect(bad.err.trim().split('\n').at(-1)).toContain('--from 2023-02-29 is not a date (YYYY-MM-DD)')
  }, 120_000)
})
