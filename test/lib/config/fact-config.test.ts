import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { ConfigError } from '../../../lib/core/errors.ts'

const TABLES = `version: 1
tables:
  - name: customers
    source: { type: file, path: customers.csv }
    key: [tenant_id, customer_id]
  - name: tariffs
    source: { type: file, path: tariffs.csv }
    key: tariff_code
`

function issues(text: string): readonly string[] {
  try {
    parseProject(text, '/project/dimsync.yaml')
  } catch (error) {
    if (error instanceof ConfigError) return error.issues
    throw error
  }
  throw new Error('expected a ConfigError')
}

describe('facts: in dimsync.yaml', () => {
  it('resolves a fact table with its defaults: fact_<name>, full extract, <dimension>_sk, unknown member 0', () => {
    const project = parseProject(
      `${TABLES}facts:
  - name: orders
    source: { type: file, path: orders.csv }
    grain: order_id
    event_time: ordered_at
    measures: [amount]
    references:
      - { dimension: customers, key: [order_tenant, order_customer] }
      - { dimension: tariffs, key: tariff, as: tariff_then, natural_key: true, unknown_member_key: -1, inferred: true }
  - name: invoices
    source: { type: file, path: invoices.parquet }
    target: invoice_facts
    extract: { mode: incremental, cursor: invoiced_at }
    grain: [invoice_id, line]
    event_time: invoiced_on
`,
      '/project/dimsync.yaml',
    )
    expect(project.facts).toEqual([
      {
        name: 'orders',
        source: { type: 'file', path: 'orders.csv', format: 'csv', csv: { delimiter: ',', header: true } },
        target: 'fact_orders',
        extract: { mode: 'full' },
        grain: ['order_id'],
        eventTime: 'ordered_at',
        measures: ['amount'],
        references: [
          {
            dimension: 'customers',
            key: ['order_tenant', 'order_customer'],
            surrogateKeyColumn: 'customers_sk',
            alias: 'customers',
            unknownMemberKey: 0,
            keepNaturalKey: false,
            inferred: false,
          },
          {
            dimension: 'tariffs',
            key: ['tariff'],
            surrogateKeyColumn: 'tariff_then_sk',
            alias: 'tariff_then',
            unknownMemberKey: -1,
            keepNaturalKey: true,
            inferred: true,
          },
        ],
      },
      expect.objectContaining({
        name: 'invoices',
        target: 'invoice_facts',
        extract: { mode: 'incremental', cursor: 'invoiced_at', lookbackMinutes: 0 },
        grain: ['invoice_id', 'line'],
        references: [],
      }),
    ])
    expect(parseProject(TABLES, '/project/dimsync.yaml').facts).toBeUndefined()
  })

  it('refuses a reference to a dimension that does not exist, naming the tables and the closest name', () => {
    expect(
      issues(`${TABLES}facts:
  - name: orders
    source: { type: file, path: orders.csv }
    grain: order_id
    event_time: ordered_at
    references: [{ dimension: customer, key: [a, b] }]
`),
    ).toEqual([
      'facts[0].references[0].dimension: no table is named "customer" (tables: customers, tariffs); did you mean "customers"?',
    ])
  })

  it("refuses reference columns that do not match the dimension's key, and a second unknown member key", () => {
    expect(
      issues(`${TABLES}facts:
  - name: orders
    source: { type: file, path: orders.csv }
    grain: order_id
    event_time: ordered_at
    references:
      - { dimension: customers, key: customer_id }
  - name: refunds
    source: { type: file, path: refunds.csv }
    grain: refund_id
    event_time: refunded_at
    references:
      - { dimension: tariffs, key: tariff, unknown_member_key: 1 }
  - name: invoices
    source: { type: file, path: invoices.csv }
    grain: invoice_id
    event_time: invoiced_on
    references:
      - { dimension: tariffs, key: tariff_code }
      - { dimension: tariffs, key: old_tariff, as: old_tariff, unknown_member_key: -1 }
`),
    ).toEqual([
      'facts[0].references[0].key: gives 1 column (customer_id) but the key of customers has 2 (tenant_id, customer_id); give one fact column per key column, in that order',
      'facts[1].references[0].unknown_member_key: must be a whole number, 0 or below (got 1)',
      "facts[2].references[1].unknown_member_key: is -1 but facts[2].references[0] gives tariffs's unknown member the key 0; a dimension has one unknown member",
    ])
  })

  it('refuses inferred members of a table with partial updates (a placeholder is no state to fold into)', () => {
    expect(
      issues(`${TABLES}  - name: accounts
    source: { type: file, path: accounts.csv }
    key: account_id
    extract: { mode: changes }
    valid_from: { column: changed_at }
    ignore_null_updates: all
facts:
  - name: orders
    source: { type: file, path: orders.csv }
    grain: order_id
    event_time: ordered_at
    references:
      - { dimension: accounts, key: account_id, inferred: true }
`),
    ).toEqual([
      'facts[0].references[0].inferred: cannot infer members of accounts: it folds partial updates into the state of a key, and a placeholder has none; remove inferred (its facts go to the unknown member) or the partial-update options',
    ])
  })

  it('refuses inferred members of a table that is not a history or is bitemporal, or from part of the key', () => {
    expect(
      issues(`${TABLES}  - name: events
    source: { type: file, path: events.csv }
    key: event_id
    mode: append
  - name: plans
    source: { type: file, path: plans.csv }
    key: plan_id
    system_time: true
facts:
  - name: orders
    source: { type: file, path: orders.csv }
    grain: order_id
    event_time: ordered_at
    references:
      - { dimension: events, key: event_id, inferred: true }
      - { dimension: customers, key: customer_id, inferred: true }
      - { dimension: plans, key: plan_id, inferred: true }
`),
    ).toEqual([
      'facts[0].references[0].inferred: cannot infer members of events: its mode is append, and only history tables complete a placeholder version in place; remove inferred or make the table mode: history',
      'facts[0].references[1].key: gives 1 column (customer_id) but the key of customers has 2 (tenant_id, customer_id); give one fact column per key column, in that order (an inferred member is a version of the whole key)',
      'facts[0].references[2].inferred: cannot infer members of plans: it is bitemporal, and a bitemporal table never updates a row in place, which completing a placeholder does; remove inferred (its facts go to the unknown member)',
    ])
    expect(
      issues(`${TABLES}facts:
  - name: orders
    source: { type: file, path: orders.csv }
    grain: order_id
    event_time: ordered_at
    references: [{ dimension: tariffs, key: tariff, inferred: yes }]
`),
    ).toEqual(['facts[0].references[0].inferred: must be true or false (got "yes")'])
  })

  it('resolves a change feed of facts: database sources after the cursor (default the sequence), files whole', () => {
    const project = parseProject(
      `${TABLES}facts:
  - name: orders
    source: { type: postgres, url_env: PG_URL, table: order_changes }
    extract: { mode: changes, sequence: lsn }
    grain: order_id
    event_time: ordered_at
  - name: refunds
    source: { type: file, path: refunds.csv }
    extract: { mode: changes, operation: { column: kind, insert: [new], update: edit, delete: gone } }
    grain: refund_id
    event_time: refunded_at
  - name: returns
    source: { type: file, path: returns.csv }
    extract: { mode: changes, operation: kind, ops: { insert: new, ignore: [before, heartbeat] } }
    grain: return_id
    event_time: returned_at
`,
      '/project/dimsync.yaml',
    )
    expect(project.facts?.map((f) => [f.extract, f.changes])).toEqual([
      [
        { mode: 'incremental', cursor: 'lsn', lookbackMinutes: 0 },
        { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] }, sequence: 'lsn' },
      ],
      [
        { mode: 'full' },
        { operation: { column: 'kind', insert: ['new'], update: ['edit'], delete: ['gone'] } },
      ],
      [
        { mode: 'full' },
        {
          operation: {
            column: 'kind',
            insert: ['new'],
            update: ['U'],
            delete: ['D'],
            ignore: ['before', 'heartbeat'],
          },
        },
      ],
    ])
    expect(
      issues(`${TABLES}facts:
  - name: orders
    source: { type: postgres, url_env: PG_URL, table: order_changes }
    extract: { mode: changes, operation: { insert: I, delete: I } }
    grain: order_id
    event_time: ordered_at
  - name: refunds
    source: { type: file, path: refunds.csv }
    extract: { mode: changes, cursor: changed_at }
    grain: refund_id
    event_time: refunded_at
  - name: returns
    source: { type: postgres, url_env: PG_URL, table: return_changes }
    extract: { mode: changes, cursor: Returned_At, sequence: lsn }
    grain: return_id
    event_time: returned_at
  - name: credits
    source: { type: file, path: credits.csv }
    extract: { mode: changes, ops: { truncate: T } }
    grain: credit_id
    event_time: credited_at
  - name: payments
    source: { type: file, path: 'payments/*.csv', files: new_only }
    extract: { mode: changes }
    grain: payment_id
    event_time: paid_at
`),
    ).toEqual([
      'facts[0].extract.operation.delete: "I" is also an insert value; each operation value must mean one thing',
      'facts[0].extract: a change feed read from a database needs a column that only grows in commit order to read it by: set sequence: <column> (the change sequence or log position the CDC tool writes; it is then the cursor) or cursor: <column>. The event time cannot be the cursor: a change inserted later with an older event time would never be read',
      'facts[1].extract.cursor: a file change feed is read whole on every run (re-applying its changes gives the same facts); cursor applies to database sources only',
      'facts[2].extract.cursor: a change feed read from a database by its event time "Returned_At" loses late events: a change inserted later with an older event time than the last run read would never be read; remove cursor (the sequence "lsn" is then the cursor)',
      'facts[3].extract.ops.truncate: a fact keeps every change it was given; a truncate of the source deletes no fact: list the value in ops.ignore',
      'facts[4].extract: a change feed read with files: new_only needs a sequence: a file that arrives late holds changes older than some already loaded, and only the sequence tells them apart; set sequence: <column> (the change sequence the CDC tool writes), or read every file (files: all)',
    ])
  })

  it('refuses names and targets shared with tables, repeated references, unknown keys and missing fields', () => {
    expect(
      issues(`${TABLES}facts:
  - name: customers
    source: { type: file, path: orders.csv }
    grain: order_id
    event_time: ordered_at
  - name: rentals
    target: dim_tariffs
    source: { type: file, path: rentals.csv }
    grain: rental_id
    event_time: rented_at
  - name: sales
    source: { type: file, path: sales.csv }
    grain: [sale_id, sale_id]
    event_time: sold_at
    references:
      - { dimension: tariffs, key: tariff }
      - { dimension: tariffs, key: other_tariff }
  - name: returns
    source: { type: file, path: returns.csv }
    grain: return_id
    evnt_time: returned_at
`),
    ).toEqual([
      'facts[2].grain: lists "sale_id" twice',
      'facts[2].references[1]: surrogate key column "tariffs_sk" is also that of references[0]; name one of them with `as`',
      'facts[2].references[1]: name (as) "tariffs" is also that of references[0]; name one of them with `as`',
      'facts[3].event_time: is required',
      'facts[3]: unknown key "evnt_time"; did you mean "event_time"?',
      'facts[0].name: "customers" is also the name of tables[0]; names must differ',
      'facts[1].target: target "dim_tariffs" is also the target of tables[1]',
    ])
  })
})
