import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runDimsync } from '../support/cli-process.ts'

/** Facts operated like dimensions: discard, plan and history take a fact's name (real CLI processes). */
let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-fact-ops-'))
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
  write('customers.csv', ['customer_id,region', '101,South'])
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsync(...args: string[]) {
  return runDimsync(work, args)
}
const write = (name: string, lines: string[]) => writeFileSync(join(work, name), `${lines.join('\n')}\n`)
/** The lines of stderr that are not progress logs (those start with a timestamp). */
const errorLines = (err: string) => err.split('\n').filter((l) => l !== '' && !/^\d{4}-\d\d-\d\dT/.test(l))
const stagedOrders = () => {
  const folder = join(work, '.dimsync', 'staging', 'orders')
  return existsSync(folder) ? readdirSync(folder) : []
}
const GOOD_ORDERS = [
  'order_id,customer_id,ordered_at,amount',
  '1,101,2024-02-01T10:00:00Z,10',
  '2,999,2024-02-01T10:00:00Z,5',
]

describe('a refused fact batch', () => {
  it('names the way out on the next run; discard --list shows it, discard drops it, and the next run loads the fixed source', () => {
    write('orders.csv', [
      'order_id,customer_id,ordered_at,amount',
      '1,101,,10',
      '2,999,2024-02-01T10:00:00Z,5',
    ])
    const refused = dimsync('run', '--extracted-at', '2024-01-01T00:00:00Z')
    expect(refused.code).toBe(1)
    const batch =
      /fact orders: batch (\S+) has 1 facts with a NULL event time \(ordered_at\); nothing was written/.exec(
        refused.err,
      )?.[1]
    expect(batch).toBeDefined()
    expect(stagedOrders()).toEqual([batch])

    write('orders.csv', GOOD_ORDERS)
    const again = dimsync('run', '--table', 'orders')
    expect(again.code).toBe(1)
    expect(errorLines(again.err)).toEqual([
      `dimsync: fact orders: batch ${batch} has 1 facts with a NULL event time (ordered_at); nothing was written. ` +
        `This batch was staged by an earlier run; it is refused on every run until it is dropped with: ` +
        `dimsync discard --table orders --batch ${batch} (see docs/errors.md#a-batch-is-refused)`,
    ])

    const listed = dimsync('discard', '--table', 'orders', '--list')
    expect(listed.code).toBe(0)
    expect(listed.out).toBe(
      `orders: ${batch} committed, not merged: extracted at 2024-01-01T00:00:00.000Z, 2 rows\n`,
    )
    const discarded = dimsync('discard', '--table', 'orders')
    expect(discarded.code).toBe(0)
    expect(discarded.out).toBe(`orders: discarded 1 staged batch(es): ${batch}\n`)
    expect(stagedOrders()).toEqual([])

    const loaded = dimsync('run', '--table', 'orders')
    expect(loaded.code).toBe(0)
    expect(loaded.out).toMatch(
      /^orders → fact_orders: batch \S+, 2 rows; 2 facts loaded, 1 to the unknown member of customers \(customer_sk\)$/m,
    )
    expect(dimsync('discard', '--table', 'orders', '--list').out).toBe('orders: no staged batch\n')
  }, 180_000)
})

describe('plan and history of a fact', () => {
  it('plan --table orders runs the load and its checks, writes nothing and says what it would load', () => {
    expect(dimsync('run', '--table', 'customers', '--extracted-at', '2024-01-01T00:00:00Z').code).toBe(0)
    write('orders.csv', GOOD_ORDERS)
    const plan = dimsync('plan', '--table', 'orders', '--sql')
    expect(plan.code).toBe(0)
    expect(plan.out).toMatch(
      /^orders: 2 rows extracted; would load 2 facts into fact_orders, 1 to the unknown member of customers \(customer_sk\) \(resolved against the dimensions as they are now\)$/m,
    )
    expect(plan.out).toContain('-- check NULL event time\n')
    expect(stagedOrders()).toEqual([])
    // Nothing was written: the next run loads both facts.
    expect(dimsync('run', '--table', 'orders').out).toMatch(/^orders → fact_orders: .* 2 facts loaded/m)

    // A plan without --table plans the facts after the tables, as run runs them; its checks refuse what run refuses.
    write('orders.csv', [
      'order_id,customer_id,ordered_at,amount',
      '3,101,,10',
      '4,101,2024-02-02T10:00:00Z,7',
    ])
    const all = dimsync('plan')
    expect(all.code).toBe(1)
    expect(all.out).toMatch(/^customers: 1 rows extracted; would add 0 new keys/m)
    expect(errorLines(all.err)).toEqual([
      expect.stringMatching(
        /^dimsync: fact orders: batch \S+ has 1 facts with a NULL event time \(ordered_at\); nothing was written \(see docs\/errors\.md#a-batch-is-refused\)$/,
      ),
      'dimsync: 1 of 2 tables failed: orders',
    ])
    expect(stagedOrders()).toEqual([])
  }, 180_000)

  it('history of a fact says it is a fact, where its rows are and which dimensions to ask', () => {
    const r = dimsync('history', 'orders')
    expect(r.code).toBe(1)
    expect(errorLines(r.err)).toEqual([
      'dimsync: orders is a fact table, not a dimension: history shows the versions of a dimension. Query its ' +
        'facts in fact_orders in the warehouse; the versions they point at: dimsync history customers',
    ])
    const unknown = dimsync('history', 'order')
    expect(errorLines(unknown.err)).toEqual([
      `dimsync: table order is not in ${join(work, 'dimsync.yaml')} (tables: customers)`,
    ])
  })
})

describe('validate checks a fact as run checks it', () => {
  it('refuses an event time stored as text and a text reference key against a numeric dimension key, as run does', () => {
    write('orders.csv', ['order_id,customer_id,ordered_at,amount', '1,C101,yesterday,10'])
    const validated = dimsync('validate')
    expect(validated.code).toBe(1)
    expect(errorLines(validated.err)).toEqual([
      `dimsync: ${join(work, 'dimsync.yaml')}: ` +
        'facts[0] (orders): event time column "ordered_at" has type VARCHAR; it must be a timestamp or a date; cast it in the source; ' +
        'facts[0] (orders): reference to customers: column "customer_id" (VARCHAR) cannot match key column "customer_id" (BIGINT) of dim_customers; cast it in the source ' +
        '(see docs/errors.md#the-config-is-invalid)',
    ])
    const run = dimsync('run')
    expect(run.code).toBe(1)
    expect(run.err).toContain(
      'event time column "ordered_at" has type VARCHAR; it must be a timestamp or a date',
    )
  }, 60_000)

  it('refuses operation values of a change feed that run refuses (another case), and passes them once configured', () => {
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
    extract: { mode: changes }
    grain: order_id
    event_time: ordered_at
    measures: [amount]
    references:
      - { dimension: customers, key: customer_id, as: customer }
`,
    )
    write('orders.csv', [
      'Op,order_id,customer_id,ordered_at,amount',
      'i,1,101,2024-02-01T10:00:00Z,10',
      'i,2,101,2024-02-01T11:00:00Z,5',
      'U,3,101,2024-02-01T12:00:00Z,7',
    ])
    const validated = dimsync('validate')
    expect(validated.code).toBe(1)
    expect(errorLines(validated.err)).toEqual([
      `dimsync: ${join(work, 'dimsync.yaml')}: facts[0] (orders): operation column "Op" holds values that are none ` +
        'of I, U, D, which run refuses: "i" (2 rows); values are compared exactly, case too: list them in ' +
        'extract.operation (e.g. insert: [I, i]) or fix the source (see docs/errors.md#the-config-is-invalid)',
    ])
    expect(stagedOrders()).toEqual([])
    const run = dimsync('run')
    expect(run.code).toBe(1)
    expect(run.err).toContain(
      'changes whose operation (Op) is none of I, U, D, for example i; nothing was written',
    )

    expect(dimsync('discard', '--table', 'orders').code).toBe(0)
    writeFileSync(
      join(work, 'dimsync.yaml'),
      readFileSync(join(work, 'dimsync.yaml'), 'utf8').replace(
        'extract: { mode: changes }',
        'extract: { mode: changes, operation: { column: Op, insert: [I, i] } }',
      ),
    )
    expect(dimsync('validate').code).toBe(0)
    expect(dimsync('run').out).toMatch(/^orders → fact_orders: batch \S+, 3 rows; 3 facts loaded/m)
  }, 120_000)
})
