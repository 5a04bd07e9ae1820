import { afterEach, describe, expect, it } from 'vitest'
import { runFact } from '../../../lib/use-cases/run-fact.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

const YAML = `version: 1
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
      - { dimension: customers, key: customer_id, as: customer, natural_key: true }
`

let p: EmbeddedProject | undefined
afterEach(async () => {
  await p?.dispose()
  p = undefined
})

describe('runFact: a fact table of dimsync.yaml extracted and loaded under its own lease', () => {
  it('extracts the source, keys every fact to the version true at its time, records the run, keeps nothing staged', async () => {
    p = await makeEmbeddedProject(YAML, 'dimsync-facts-')
    const { deps, project } = p
    const [customers] = project.tables
    const [orders] = project.facts!
    p.writeCsv('customers.csv', 'customer_id,region', ['101,South', '102,North'])
    await runTable(deps, customers!, { extractedAt: new Date('2024-01-01T00:00:00Z') })
    p.writeCsv('customers.csv', 'customer_id,region', ['101,North', '102,North'])
    await runTable(deps, customers!, { extractedAt: new Date('2024-03-01T00:00:00Z') })
    p.writeCsv('orders.csv', 'order_id,customer_id,ordered_at,amount', [
      '1,101,2024-02-01T10:00:00Z,10',
      '2,101,2024-03-05T10:00:00Z,20',
      '3,999,2024-03-05T10:00:00Z,5',
    ])
    const result = await runFact(deps, orders!, project.tables)
    expect(result).toMatchObject({
      fact: 'orders',
      rows: 3,
      resumed: [],
      load: {
        status: 'loaded',
        facts: 3,
        unknown: [{ dimension: 'customers', column: 'customer_sk', facts: 1 }],
      },
    })
    const warehouse = await deps.openWarehouse()
    const rows = await warehouse.query(
      `SELECT order_id, customer_sk, customer_region FROM fact_orders_as_was ORDER BY order_id`,
    )
    expect(rows.map((r) => [Number(r.order_id), r.customer_sk, r.customer_region])).toEqual([
      [1, 1, 'South'],
      [2, 3, 'North'],
      [3, 0, 'Unknown'],
    ])
    expect(await deps.staging.listBatches('orders')).toEqual([])
    const [run] = await deps.state.listRuns('orders', 1)
    expect(run).toMatchObject({ status: 'succeeded', batchId: result.batchId, rowsExtracted: 3 })
    await deps.releaseWarehouse?.()
  })
})

describe('runFact refusing a source that lacks a configured column', () => {
  it('names the fact, the role and the column, with the closest source column; nothing is staged', async () => {
    p = await makeEmbeddedProject(YAML.replace('measures: [amount]', 'measures: [amout]'), 'dimsync-facts-')
    const { deps, project } = p
    p.writeCsv('orders.csv', 'order_id,customer_id,ordered_at,amount', ['1,101,2024-02-01T10:00:00Z,10'])
    await expect(runFact(deps, project.facts![0]!, project.tables)).rejects.toThrow(
      'fact orders: measures: column "amout" is not in the source; did you mean "amount"?',
    )
    expect(await deps.staging.listBatches('orders')).toEqual([])
    const [run] = await deps.state.listRuns('orders', 1)
    expect(run).toMatchObject({ status: 'failed' })
  })
})
