import { describe, expect, it } from 'vitest'

import { parseProject } from '../../../lib/config/index.ts'
import { ConfigError } from '../../../lib/core/errors.ts'
import type { StagedColumn } from '../../../lib/core/batch.ts'
import type { ProjectSpec, TableSpec } from '../../../lib/core/table-spec.ts'
import type { Source } from '../../../lib/ports/source.ts'
import { warehouseBundle } from '../../../lib/runtime/warehouse-registry.ts'
import { renderOfflineBigQueryPlan } from '../../../lib/sql/bigquery/offline-plan.ts'
import {
  assertNoObjectNameConflicts,
  objectNameConflicts,
  validateProject,
  type ValidateOptions,
} from '../../../lib/use-cases/validate-project.ts'

/** validateProject with the checks of the project's warehouse, as `dimsync validate` gives them. */
const validate = async (
  spec: ProjectSpec,
  openSource: (table: TableSpec) => Source,
  options?: ValidateOptions,
): Promise<string[]> =>
  validateProject(spec, openSource, await warehouseBundle(spec.warehouse).checks(spec.warehouse), options)

const project = (tables: string) => parseProject(`version: 1\ntables:\n${tables}`, '/project/dimsync.yaml')
const table = (name: string, target: string, extra = '') =>
  `  - name: ${name}\n    source: { type: file, path: ${name}.csv }\n    key: id\n    target: ${target}\n${extra}`

/** A source that describes `described` and is never extracted from (validate extracts nothing). */
const source = (described: readonly StagedColumn[]): Source => ({
  describe: async () => described,
  extract: async () => {
    throw new Error('validate extracts nothing')
  },
  close: async () => {},
})

describe('objectNameConflicts', () => {
  it("refuses a target that is another table's view, table function or capture log, naming both tables", () => {
    const spec = project(
      table('customers', 'dim_cust', '    valid_from: { column: changed_at }\n') +
        table('current', 'dim_cust_current') +
        table('as_of', 'DIM_CUST_AS_OF') +
        table('captures', 'dim_cust_dimsync_captures'),
    )
    expect(objectNameConflicts(spec)).toEqual([
      'tables[1].target: "dim_cust_current" is the current-versions view of table customers (target dim_cust); choose another target',
      'tables[2].target: "DIM_CUST_AS_OF" is the as-of table function of table customers (target dim_cust); choose another target',
      'tables[3].target: "dim_cust_dimsync_captures" is the capture log of table customers (target dim_cust); choose another target',
    ])
    expect(() => assertNoObjectNameConflicts(spec)).toThrow(ConfigError)
  })

  it("refuses a target that is another table's retired-versions table (a sequenced change feed)", () => {
    const feed =
      '    extract: { mode: changes, operation: op, sequence: seq }\n    valid_from: { column: changed_at }\n'
    const spec = project(table('feed', 'dim_feed', feed) + table('retired', 'dim_feed_dimsync_retired'))
    expect(objectNameConflicts(spec)).toEqual([
      'tables[1].target: "dim_feed_dimsync_retired" is the retired versions of table feed (target dim_feed); choose another target',
    ])
  })

  it("refuses a target that is another table's surrogate-key record", () => {
    const spec = project(table('customers', 'dim_cust') + table('keys', 'dim_cust_dimsync_keys'))
    expect(objectNameConflicts(spec)).toEqual([
      'tables[1].target: "dim_cust_dimsync_keys" is the surrogate key record of table customers (target dim_cust); choose another target',
    ])
  })

  it("refuses dimsync's own names: the batch ledger and the reserved prefixes", () => {
    const spec = project(
      table('ledger', '_dimsync_batches') +
        table('stage', '_dimsync_stage_x') +
        table('temp', '__dimsync_stage'),
    )
    expect(objectNameConflicts(spec)).toEqual([
      'tables[0].target: "_dimsync_batches" is the batch ledger dimsync keeps beside the dimensions; choose another target',
      'tables[1].target: "_dimsync_stage_x" starts with _dimsync_, which dimsync keeps for its own objects; choose another target',
      'tables[2].target: "__dimsync_stage" starts with __dimsync_, which dimsync keeps for its own objects; choose another target',
    ])
  })

  it('accepts targets that only look alike', () => {
    const spec = project(
      table('a', 'dim_cust') + table('b', 'dim_cust_currently') + table('c', 'dim_cust_dimsync_captures'),
    )
    // dim_cust keeps its valid_from from extraction times: it has no capture log.
    expect(objectNameConflicts(spec)).toEqual([])
  })
})

describe('validateProject names every column the warehouse cannot store (table, column, type)', () => {
  const columns: readonly StagedColumn[] = [
    { name: 'id', type: 'BIGINT' },
    { name: 'huge', type: 'HUGEINT' },
    { name: 'counter', type: 'UBIGINT' },
    { name: 'address', type: 'STRUCT(street VARCHAR, city VARCHAR)' },
    { name: 'name', type: 'VARCHAR' },
    // One-dimensional arrays of these elements are ARRAY columns on BigQuery; deeper ones and floats are not.
    { name: 'tags', type: 'VARCHAR[]' },
    { name: 'scores', type: 'INTEGER[]' },
    { name: 'grid', type: 'INTEGER[][]' },
    { name: 'weights', type: 'DOUBLE[]' },
    // JSON is a JSON column on BigQuery; arrays of JSON are not stored yet.
    { name: 'profile', type: 'JSON' },
    { name: 'events', type: 'JSON[]' },
  ]
  const withWarehouse = (warehouse: string) =>
    parseProject(
      `version: 1\nwarehouse: ${warehouse}\ntables:\n${table('accounts', 'dim_accounts')}${table('orders', 'dim_orders')}`,
      '/project/dimsync.yaml',
    )

  it('BigQuery: each unstorable column of each table is an issue; the whole project fails', async () => {
    const spec = withWarehouse('{ type: bigquery, project: acme-dw, dataset: history, location: EU }')
    const error = await validate(spec, (t) =>
      source(t.name === 'accounts' ? columns : [{ name: 'id', type: 'DECIMAL(60,2)' }]),
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).issues).toEqual([
      'tables[0] (accounts): column "huge" has type HUGEINT, which BigQuery cannot store',
      'tables[0] (accounts): column "counter" has type UBIGINT, which BigQuery cannot store',
      'tables[0] (accounts): column "address" has type STRUCT(street VARCHAR, city VARCHAR), which BigQuery cannot store',
      'tables[0] (accounts): column "grid" has type INTEGER[][], which BigQuery cannot store',
      'tables[0] (accounts): column "weights" has type DOUBLE[], which BigQuery cannot store',
      'tables[0] (accounts): column "events" has type JSON[], which BigQuery cannot store',
      'tables[1] (orders): column "id" has type DECIMAL(60,2), which BigQuery cannot store',
    ])
  })

  it('PostgreSQL: each column it cannot store with the same row hash is an issue', async () => {
    const spec = withWarehouse('{ type: postgres, url_env: DW_URL }')
    const error = await validate(spec, (t) =>
      source(t.name === 'accounts' ? columns : [{ name: 'id', type: 'TINYINT' }]),
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).issues).toEqual([
      'tables[0] (accounts): column "huge" has type HUGEINT, which PostgreSQL cannot store',
      'tables[0] (accounts): column "counter" has type UBIGINT, which PostgreSQL cannot store',
      'tables[0] (accounts): column "address" has type STRUCT(street VARCHAR, city VARCHAR), which PostgreSQL cannot store',
      'tables[0] (accounts): column "grid" has type INTEGER[][], which PostgreSQL cannot store',
      'tables[0] (accounts): column "weights" has type DOUBLE[], which PostgreSQL cannot store',
      'tables[0] (accounts): column "events" has type JSON[], which PostgreSQL cannot store',
      'tables[1] (orders): column "id" has type TINYINT, which PostgreSQL cannot store',
    ])
  })

  it('BigQuery: a JSON or array key is an issue (no equality on them), the same types as attributes are not', async () => {
    const spec = withWarehouse('{ type: bigquery, project: acme-dw, dataset: history, location: EU }')
    const error = await validate(spec, (t) =>
      source(
        t.name === 'accounts'
          ? [
              { name: 'id', type: 'JSON' },
              { name: 'tags', type: 'VARCHAR[]' },
            ]
          : [
              { name: 'id', type: 'INTEGER[]' },
              { name: 'profile', type: 'JSON' },
            ],
      ),
    ).catch((e: unknown) => e)
    expect((error as ConfigError).issues).toEqual([
      'tables[0] (accounts): key column "id" has type JSON, which BigQuery cannot compare (no equality on JSON or arrays), so it cannot be a key',
      'tables[1] (orders): key column "id" has type INTEGER[], which BigQuery cannot compare (no equality on JSON or arrays), so it cannot be a key',
    ])
  })

  it('BigQuery: a JSON or array column the merge compares value by value (untracked) is an issue', async () => {
    const spec = parseProject(
      `version: 1\nwarehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU }\ntables:\n` +
        table('accounts', 'dim_accounts', '    tracked: [name]\n'),
      '/project/dimsync.yaml',
    )
    const error = await validate(spec, () =>
      source([
        { name: 'id', type: 'BIGINT' },
        { name: 'name', type: 'VARCHAR' },
        { name: 'tags', type: 'VARCHAR[]' },
      ]),
    ).catch((e: unknown) => e)
    expect((error as ConfigError).issues).toEqual([
      'tables[0] (accounts): column "tags" is untracked (type 1), which the merge compares value by value, and ' +
        'BigQuery has no equality on its type (VARCHAR[]): track it (changes then open versions) or cast it to ' +
        'text in a query source',
    ])
  })

  it('an excluded column the source describes without (it is never staged) is ok, whatever its type', async () => {
    const spec = parseProject(
      `version: 1\nwarehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU }\ntables:\n` +
        table('accounts', 'dim_accounts', '    exclude: [huge]\n'),
      '/project/dimsync.yaml',
    )
    expect(await validate(spec, () => source([{ name: 'id', type: 'BIGINT' }]))).toEqual([
      expect.stringMatching(/^accounts: ok \(id BIGINT\); BigQuery merge script: /),
    ])
  })

  it('BigQuery: reports the length and statement count of each table’s merge script (first load, later batches)', async () => {
    const spec = parseProject(
      `version: 1\nwarehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU }\ntables:\n` +
        table('accounts', 'dim_accounts', '    tracked: [name]\n'),
      '/project/dimsync.yaml',
    )
    const described = [
      { name: 'id', type: 'BIGINT' },
      { name: 'name', type: 'VARCHAR' },
      { name: 'tier', type: 'VARCHAR' },
    ]
    const [line] = await validate(spec, () => source(described))
    const script = (later: boolean) =>
      renderOfflineBigQueryPlan({
        table: spec.tables[0]!,
        columns: described,
        project: 'acme-dw',
        dataset: 'history',
        now: new Date(0).toISOString(),
        later,
      })
    const size = (s: ReturnType<typeof script>) =>
      `${Math.ceil(s.text.length / 1000)}K characters in ${s.ddl.length + s.merge.length + s.after.length} statements`
    expect(line).toBe(
      `accounts: ok (id BIGINT, name VARCHAR, tier VARCHAR); BigQuery merge script: first load ${size(script(false))}, ` +
        `later batches ${size(script(true))}`,
    )
    // The later batches' script overwrites type 1 columns: more statements than the first load's.
    expect(script(true).merge.length).toBeGreaterThan(script(false).merge.length)
  })

  it('BigQuery: a table whose merge script is over the query length limit runs as several queries of one session transaction, and says how many', async () => {
    const spec = parseProject(
      `version: 1\nwarehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU }\ntables:\n` +
        table('wide', 'dim_wide', '    tracked: [attribute_name_00000]\n'),
      '/project/dimsync.yaml',
    )
    const wide = [
      { name: 'id', type: 'BIGINT' },
      ...Array.from({ length: 2_200 }, (_, i) => ({
        name: `attribute_name_${String(i).padStart(5, '0')}`,
        type: 'VARCHAR',
      })),
    ]
    const [line] = await validate(spec, () => source(wide))
    expect(line).toMatch(
      /^wide: ok \(.*\); BigQuery merge script: first load \d{3}K characters in \d+ statements, later batches 1,\d{3}K characters in \d+ statements, as [2-9] queries of one session transaction$/,
    )
  })

  it('BigQuery: a table with a statement too long for one query even in a session is an issue', async () => {
    const spec = parseProject(
      `version: 1\nwarehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU }\ntables:\n` +
        table('wide', 'dim_wide', ''),
      '/project/dimsync.yaml',
    )
    // A later batch's diff names each column twice: 3,000 names of 290 characters are over 1,024K by themselves.
    const wide = [
      { name: 'id', type: 'BIGINT' },
      ...Array.from({ length: 3_000 }, (_, i) => ({
        name: `attribute_name_${String(i).padStart(5, '0')}`.padEnd(290, '_x'),
        type: 'VARCHAR',
      })),
    ]
    const error = await validate(spec, () => source(wide)).catch((e: unknown) => e)
    expect((error as ConfigError).issues).toEqual([
      expect.stringMatching(
        /^tables\[0\] \(wide\): its merge script is [\d,]+K characters \(3001 columns\), over BigQuery's limit of 1,024K characters per query, and its statement "diff snapshot against current versions" \([\d,]+K characters\) does not fit one query of a session either; a run refuses it/,
      ),
    ])
  })

  it('DuckDB stores every staged type: the same columns are ok', async () => {
    const lines = await validate(withWarehouse('{ type: duckdb, path: w.duckdb }'), () => source(columns))
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(/^accounts: ok \(id BIGINT, huge HUGEINT/)
  })
})

describe('validateProject checks fact tables against their sources too', () => {
  const spec = parseProject(
    `version: 1\ntables:\n${table('customers', 'dim_customers')}facts:\n` +
      '  - name: orders\n    source: { type: file, path: orders.csv }\n    grain: order_id\n' +
      '    event_time: ordered_at\n    measures: [amount]\n' +
      '    references:\n      - { dimension: customers, key: customer_id, as: customer }\n',
    '/project/dimsync.yaml',
  )
  const described = (columns: readonly string[]) => source(columns.map((name) => ({ name, type: 'VARCHAR' })))

  it('names the fact, the setting and the missing column (with a close match) before anything runs', async () => {
    const error = await validate(spec, (t) =>
      described(t.name === 'orders' ? ['order_id', 'ordred_at', 'amount', 'customer'] : ['id']),
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).issues).toEqual([
      'facts[0] (orders): event_time: column "ordered_at" is not in the source; did you mean "ordred_at"?',
      'facts[0] (orders): reference to customers: column "customer_id" is not in the source; did you mean "customer"?',
    ])
  })

  /** orders with these types of ordered_at and customer_id; customers keyed on an id of `key` type. */
  const typed = (types: { ordered_at: string; customer_id: string; key: string }) => (t: { name: string }) =>
    t.name === 'orders'
      ? source([
          { name: 'order_id', type: 'BIGINT' },
          { name: 'ordered_at', type: types.ordered_at },
          { name: 'amount', type: 'DOUBLE' },
          { name: 'customer_id', type: types.customer_id },
        ])
      : source([{ name: 'id', type: types.key }])

  it('says ok for a fact whose configured columns are all in its source, of types the load can use', async () => {
    const lines = await validate(
      spec,
      typed({ ordered_at: 'TIMESTAMP WITH TIME ZONE', customer_id: 'INTEGER', key: 'BIGINT' }),
    )
    expect(lines).toEqual([
      'customers: ok (id BIGINT)',
      'orders: ok (order_id BIGINT, ordered_at TIMESTAMP WITH TIME ZONE, amount DOUBLE, customer_id INTEGER)',
    ])
    expect(
      await validate(spec, typed({ ordered_at: 'DATE', customer_id: 'VARCHAR', key: 'VARCHAR' })),
    ).toHaveLength(2)
  })

  it('refuses what the load refuses: an event time stored as text, a reference key that cannot equal the key', async () => {
    const error = await validate(
      spec,
      typed({ ordered_at: 'VARCHAR', customer_id: 'VARCHAR', key: 'BIGINT' }),
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).issues).toEqual([
      'facts[0] (orders): event time column "ordered_at" has type VARCHAR; it must be a timestamp or a date; cast it in the source',
      'facts[0] (orders): reference to customers: column "customer_id" (VARCHAR) cannot match key column "id" ' +
        '(BIGINT) of dim_customers; cast it in the source',
    ])
  })

  it('leaves the reference unchecked when the dimension itself could not be described (its own issue says why)', async () => {
    const error = await validate(spec, (t) =>
      t.name === 'orders'
        ? typed({ ordered_at: 'DATE', customer_id: 'VARCHAR', key: 'BIGINT' })(t)
        : { ...source([]), describe: async () => Promise.reject(new Error('customers.csv: no such file')) },
    ).catch((e: unknown) => e)
    expect((error as ConfigError).issues).toEqual(['tables[0] (customers): customers.csv: no such file'])
  })
})

describe('validateProject checks the operation values of a change feed as run checks them', () => {
  const spec = parseProject(
    `version: 1\ntables:\n${table('customers', 'dim_customers')}` +
      '    extract: { mode: changes }\n    valid_from: { column: changed_at }\n' +
      'facts:\n' +
      '  - name: orders\n    source: { type: file, path: orders.csv }\n    grain: order_id\n' +
      '    event_time: ordered_at\n    measures: [amount]\n' +
      '    extract: { mode: changes, operation: { column: kind, insert: [new], update: edit, delete: gone } }\n' +
      '    references:\n      - { dimension: customers, key: customer_id, as: customer }\n',
    '/project/dimsync.yaml',
  )
  const sources = (t: { name: string }) =>
    t.name === 'orders'
      ? source([
          { name: 'order_id', type: 'BIGINT' },
          { name: 'kind', type: 'VARCHAR' },
          { name: 'ordered_at', type: 'TIMESTAMP' },
          { name: 'amount', type: 'DOUBLE' },
          { name: 'customer_id', type: 'VARCHAR' },
        ])
      : source([
          { name: 'id', type: 'VARCHAR' },
          { name: 'Op', type: 'VARCHAR' },
          { name: 'changed_at', type: 'TIMESTAMP' },
          { name: 'region', type: 'VARCHAR' },
        ])

  it('reads only the columns the check needs, and says ok when every value is a configured one', async () => {
    const asked: [string, string, readonly string[]][] = []
    const lines = await validate(spec, sources, {
      stagedValues: async (_source, t, column) => {
        asked.push([t.name, column, t.exclude])
        return t.name === 'orders'
          ? [
              { value: 'new', rows: 3 },
              { value: 'gone', rows: 1 },
            ]
          : [{ value: 'U', rows: 2 }]
      },
    })
    expect(lines).toHaveLength(2)
    expect(asked).toEqual([
      ['customers', 'Op', ['region']],
      ['orders', 'kind', ['ordered_at', 'amount', 'customer_id']],
    ])
  })

  it('refuses values run would refuse (another case, NULL), naming the column, the configured values and the way out', async () => {
    const error = await validate(spec, sources, {
      stagedValues: async (_source, t) =>
        t.name === 'orders'
          ? [
              { value: 'NEW', rows: 3 },
              { value: 'edit', rows: 2 },
              { value: null, rows: 1 },
            ]
          : [
              { value: 'i', rows: 2 },
              { value: 'U', rows: 1 },
            ],
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).issues).toEqual([
      'tables[0] (customers): operation column "Op" holds values that are none of I, U, D, which run refuses: ' +
        '"i" (2 rows); values are compared exactly, case too: list them in extract.operation ' +
        '(e.g. insert: [I, i]) or fix the source',
      'facts[0] (orders): operation column "kind" holds values that are none of new, edit, gone, which run refuses: ' +
        '"NEW" (3 rows), NULL (1 row); values are compared exactly, case too: list them in extract.operation ' +
        '(e.g. insert: [new, NEW]) or fix the source',
    ])
  })

  it('without a reader of staged values (plain describe), the values are not checked', async () => {
    expect(await validate(spec, sources)).toHaveLength(2)
  })
})
