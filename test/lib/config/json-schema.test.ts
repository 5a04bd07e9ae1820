import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { configJsonSchema, renderConfigJsonSchema } from '../../../lib/config/json-schema.ts'
import { validate } from './mini-json-schema.ts'

const SCHEMA_FILE = new URL('../../../schema/dimsync.schema.json', import.meta.url)

const VALID = parse(`
version: 1
warehouse: { type: duckdb, path: wh.duckdb, schema: main }
defaults: { deletes: invalidate, columns: dbt, open_end: '9999-12-31T23:59:59Z' }
tables:
  - name: customers
    source: { type: file, path: 'data/customers_*.csv', delimiter: ';' }
    key: customer_id
    tracked: [name, region]
  - name: orders
    source: { type: postgres, url_env: PG_URL, table: public.orders }
    key: [tenant_id, order_id]
    extract: { mode: incremental, cursor: updated_at, lookback_minutes: 10 }
    valid_from: { column: updated_at }
    tracked: { all_except: [views] }
    soft_delete_column: deleted_at
    columns: { preset: fivetran, valid_to: ended_at }
    max_delete_share: 1
`) as Record<string, unknown>

function withTableChange(change: Record<string, unknown>): unknown {
  const tables = VALID.tables as Record<string, unknown>[]
  return { ...VALID, tables: [{ ...tables[0], ...change }, tables[1]] }
}

describe('schema/dimsync.schema.json', () => {
  it('is up to date with the zod schema (run `npm run schema` after changing it)', async () => {
    expect(await readFile(SCHEMA_FILE, 'utf8')).toBe(renderConfigJsonSchema())
  })

  it('accepts a valid config', () => {
    expect(validate(configJsonSchema(), VALID)).toEqual([])
  })

  it('rejects unknown keys, bad enums and bad identifiers', () => {
    const schema = configJsonSchema()
    expect(validate(schema, withTableChange({ trackd: ['x'] }))).toEqual([
      '$.tables[0]: unknown property trackd',
    ])
    expect(validate(schema, withTableChange({ deletes: 'delete' }))).toEqual([
      '$.tables[0].deletes: anyOf failed',
    ])
    expect(validate(schema, withTableChange({ name: 'Customers' }))).toEqual([
      '$.tables[0].name: does not match ^[a-z][a-z0-9_]{0,62}$',
    ])
    expect(validate(schema, { ...VALID, extra: 1 })).toEqual(['$: unknown property extra'])
    expect(validate(schema, { ...VALID, version: 2 })).toEqual(['$.version: expected 1'])
  })

  it('describes the table options for editors', () => {
    const schema = configJsonSchema() as {
      properties: {
        tables: { items: { properties: Record<string, { description?: string }>; required: string[] } }
      }
    }
    const table = schema.properties.tables.items
    expect(table.required).toEqual(['name', 'source', 'key'])
    expect(Object.keys(table.properties)).toEqual([
      'name',
      'source',
      'target',
      'key',
      'keep_first',
      'previous_value',
      'current_value',
      'ignore_null_updates',
      'columns_to_update',
      'change_detection',
      'renamed',
      'removed_columns',
      'system_time',
      'mode',
      'extract',
      'valid_from',
      'tracked',
      'exclude',
      'deletes',
      'max_delete_share',
      'open_end',
      'columns',
      'soft_delete_column',
      'schedule',
      'lambda',
    ])
    expect(table.properties.deletes!.description).toMatch(/Default ignore/)
    expect(table.properties.mode!.description).toMatch(/^history \(default/)
  })

  it('describes facts: a fact table with references and a change feed validates, mistakes are named', () => {
    const schema = configJsonSchema()
    const facts = parse(`
- name: orders
  source: { type: postgres, url_env: PG_URL, table: public.order_changes }
  extract: { mode: changes, operation: { column: op, delete: [D, X] }, sequence: lsn }
  grain: [order_id, line]
  event_time: ordered_at
  measures: [amount]
  references:
    - { dimension: customers, key: customer_id, as: buyer, natural_key: true, inferred: true }
    - { dimension: customers, key: seller_id, as: seller, unknown_member_key: -1 }
- name: invoices
  source: { type: file, path: invoices.csv }
  extract: { mode: incremental, cursor: invoiced_at }
  grain: invoice_id
  event_time: invoiced_on
`) as Record<string, unknown>[]
    expect(validate(schema, { ...VALID, facts })).toEqual([])
    expect(validate(schema, { ...VALID, facts: null })).toEqual([])
    // `facts:` may be empty (null) or a list: the list's own schema names the mistake.
    const list = (schema as { properties: { facts: { anyOf: Record<string, unknown>[] } } }).properties.facts
      .anyOf[0]!
    const [orders] = facts as [Record<string, unknown>]
    const withOrders = (change: Record<string, unknown>) => [{ ...orders, ...change }]
    expect(validate(list, withOrders({ refs: [] }))).toEqual(['$[0]: unknown property refs'])
    expect(
      validate(list, withOrders({ references: [{ dimension: 'customers', key: 'c', inferred: 'yes' }] })),
    ).toEqual(['$[0].references[0].inferred: expected boolean, got string'])
    expect(validate(list, withOrders({ extract: { mode: 'changes', order: 'lsn' } }))).toEqual([
      '$[0].extract: anyOf failed',
    ])
    const withoutGrain = { ...orders }
    delete withoutGrain.grain
    expect(validate(list, [withoutGrain])).toEqual(['$[0]: missing grain'])
  })
})
