import { BigQuery } from '@google-cloud/bigquery'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BothWarehouses, type MergeTally, type TextRows } from '../support/both-warehouses.ts'
import { tableSpec } from '../support/table-spec-builder.ts'
import {
  CHANGE_FEEDS,
  CHANGE_TIMES,
  CUSTOMER,
  JAN,
  MAR,
  MAY,
  ana,
  CONTRACT_GROUPS,
  runScenario,
  type Scenario,
  SNAPSHOTS,
} from '../support/warehouse-contract-scenarios.ts'

/**
 * The warehouse contract (test/support/warehouse-contract-scenarios.ts) on DuckDB and the BigQuery emulator. The
 * DuckDB suites pin what the rows are; this one pins that BigQuery agrees.
 */

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  if (both === undefined) return
  const { duckdb, bigquery } = both.tally
  const engine = await both.engineCpuMs()
  const per = (t: MergeTally) => `${t.calls} merges, ${(t.ms / Math.max(t.calls, 1)).toFixed(0)} ms a merge`
  console.info(
    `warehouse contract: DuckDB ${per(duckdb)}; BigQuery emulator ${per(bigquery)}, ` +
      `${(bigquery.statements / Math.max(bigquery.merged, 1)).toFixed(1)} script statements a merge, ` +
      `reference engine CPU (reads included) ${engine === undefined ? '?' : (engine / Math.max(bigquery.calls, 1)).toFixed(0)} ms a merge`,
  )
  await both.stop()
})

describe.each(CONTRACT_GROUPS)(
  'warehouse contract, %s: DuckDB and the BigQuery emulator agree',
  (_group, scenarios) => {
    // About 10 s a scenario on a quiet machine; CI shares its two cores with the rest of the suite. Each scenario has
    // its own DuckDB and emulator (only the ZetaSQL server is shared): they run side by side.
    it.concurrent.each(Object.keys(scenarios))(
      '%s',
      async (name) => {
        await runScenario(both, scenarios[name]!)
      },
      180_000,
    )
  },
)

/**
 * BigQuery numbers the new keys of a batch larger than a bucket per bucket of the key's hash
 * (surrogate-keys.ts). Here every batch of more than two rows is numbered that way, on both warehouses: the same
 * keys on both, unique, above every key of earlier batches, retired keys never given out again.
 */
describe('warehouse contract, surrogate keys numbered in buckets of 2 rows: DuckDB and the BigQuery emulator agree', () => {
  const scenarios: [string, Scenario][] = [
    [
      'deletes=new_record, a deleted key comes back',
      SNAPSHOTS['deletes=new_record, a deleted key comes back']!,
    ],
    ['composite keys', SNAPSHOTS['composite keys']!],
    ['several events of one key in one delta', CHANGE_TIMES['several events of one key in one delta']!],
    [
      'a late event splits a window; type 1 columns take the newest capture',
      CHANGE_TIMES['a late event splits a window; type 1 columns take the newest capture']!,
    ],
    [
      'sequenced: a correction that merges two versions retires the later one',
      CHANGE_FEEDS['sequenced: a correction that merges two versions retires the later one']!,
    ],
  ]
  it.concurrent.each(scenarios)(
    '%s',
    async (_name, scenario) => {
      await runScenario(both, scenario, { rowsPerKeyBucket: 2 })
    },
    180_000,
  )
})

describe("column descriptions belong to users: dimsync's source types are kept elsewhere", () => {
  const columns = [
    { name: 'customer_id', type: 'BIGINT' },
    { name: 'seats', type: 'INTEGER' },
    { name: 'price', type: 'DECIMAL(12,2)' },
    { name: 'score', type: 'FLOAT' },
    { name: 'name', type: 'VARCHAR' },
  ]
  /** What a person documenting columns in the console does: a tables.patch of the schema's descriptions. */
  const describeAs = async (
    dimension: PairedDimensionLike,
    description: (field: { name: string; description?: string }) => string | undefined,
  ) => {
    const table = new BigQuery({ projectId: 'acme-dw', ...dimension.emulator.clientOptions() })
      .dataset('history')
      .table('dim_customer')
    const [metadata] = await table.getMetadata()
    const fields = (metadata.schema.fields as { name: string; description?: string }[]).map((f) => {
      const text = description(f)
      return { ...f, description: text ?? '' }
    })
    await table.setMetadata({ schema: { fields } })
  }
  const describeColumns = async (dimension: PairedDimensionLike) =>
    (await dimension.warehouses.bigquery.describeTable({ schema: 'history', name: 'dim_customer' }))!

  it('a description a user sets (or clears) on any column does not change the next batch', async () => {
    const dimension = await both.open(tableSpec(), columns)
    try {
      const row = (seats: number) => ({ customer_id: 1, seats, price: '9.99', score: 0.5, name: 'Ana' })
      await dimension.load([row(2)], { extractedAt: JAN })
      const fields = await describeColumns(dimension)
      // The key column is REQUIRED (NOT NULL), as dimsync created it.
      expect(
        fields
          .filter((c) => columns.some((s) => s.name === c.name))
          .map(({ name, type }) => ({ name, type })),
      ).toEqual(columns)
      await describeAs(dimension, (f) =>
        f.name === 'name' ? undefined : `Documented by a person: ${f.name}`,
      )
      const outcome = await dimension.load([row(3)], { extractedAt: MAR })
      expect(outcome.bigquery).toEqual(outcome.duckdb)
      expect(outcome.bigquery).toMatchObject({ status: 'merged', counts: { insertedVersions: 1 } })
      expect(await describeColumns(dimension)).toEqual(fields)
    } finally {
      await dimension.close()
    }
  })

  it('a dimension an older version wrote (source types in descriptions, no record of them) still merges', async () => {
    const dimension = await both.open(tableSpec(), columns)
    try {
      const row = (seats: number) => ({ customer_id: 1, seats, price: '9.99', score: 0.5, name: 'Ana' })
      await dimension.load([row(2)], { extractedAt: JAN })
      const fields = await describeColumns(dimension)
      // What an older version left: every type in its column's description, nothing recorded anywhere else.
      await dimension.emulator.query('acme-dw', 'DROP TABLE IF EXISTS `acme-dw.history._dimsync_columns`')
      await describeAs(
        dimension,
        (f) => `dimsync source type: ${fields.find((c) => c.name === f.name)!.type}`,
      )
      expect(await describeColumns(dimension)).toEqual(fields)
      const outcome = await dimension.load([row(3)], { extractedAt: MAR })
      expect(outcome.bigquery).toEqual(outcome.duckdb)
      expect(outcome.bigquery).toMatchObject({ status: 'merged', counts: { insertedVersions: 1 } })
      // Merged once by this version, its types are recorded: the descriptions are the users' from now on.
      await describeAs(dimension, (f) => (f.name === 'seats' ? 'Seats sold' : f.description))
      const next = await dimension.load([row(4)], { extractedAt: MAY })
      expect(next.bigquery).toEqual(next.duckdb)
      expect(next.bigquery).toMatchObject({ status: 'merged' })
    } finally {
      await dimension.close()
    }
  })
})

type PairedDimensionLike = Awaited<ReturnType<BothWarehouses['open']>>

describe('NUMERIC and BIGNUMERIC keys are clustered on BigQuery', () => {
  it.each([
    ['DECIMAL(12,0)', 'NUMERIC', '12345678901'],
    ['DECIMAL(38,10)', 'BIGNUMERIC', '1234567890123456789012345678.0123456789'],
  ])('a %s key: clustered, merged as on DuckDB', async (type, bigQueryType, value) => {
    const columns = [
      { name: 'account_no', type },
      { name: 'name', type: 'VARCHAR' },
    ]
    const dimension = await both.open(tableSpec({ key: ['account_no'] }), columns)
    try {
      const jan = await dimension.load([{ account_no: value, name: 'Ana' }], { extractedAt: JAN })
      expect(jan.bigquery).toEqual(jan.duckdb)
      const mar = await dimension.load([{ account_no: value, name: 'Anna' }], { extractedAt: MAR })
      expect(mar.duckdb).toMatchObject({ status: 'merged', counts: { insertedVersions: 1 } })
      expect(mar.bigquery).toEqual(mar.duckdb)
      const table = dimension.emulator.store.getTable({
        projectId: 'acme-dw',
        datasetId: 'history',
        tableId: 'dim_customer',
      })!
      expect(table.columns.find((c) => c.field.name === 'account_no')!.field.type).toBe(bigQueryType)
      expect(table.metadata.clustering).toEqual({ fields: ['account_no'] })
    } finally {
      await dimension.close()
    }
  })
})

describe('known differences between the warehouses, pinned', () => {
  it("values read back as text: BigQuery's NUMERIC keeps no scale and a whole FLOAT64 has no '.0'; the row hash is the same", async () => {
    const columns = [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'amount', type: 'DECIMAL(12,2)' },
      { name: 'score', type: 'DOUBLE' },
    ]
    const dimension = await both.open(tableSpec(), columns)
    try {
      const rows = [{ customer_id: 1, amount: '1.50', score: 2 }]
      await dimension.load(rows, { extractedAt: JAN })
      const again = await dimension.load(rows, { extractedAt: MAR })
      expect(again.duckdb).toMatchObject({ counts: { unchangedEvents: 1, insertedVersions: 0 } })
      expect(again.bigquery).toEqual(again.duckdb)
      const { duckdb, bigquery } = await dimension.holdings()
      expect(duckdb.dimension!.map((r) => [r.amount, r.score])).toEqual([['1.50', '2.0']])
      expect(bigquery.dimension!.map((r) => [r.amount, r.score])).toEqual([['1.5', '2']])
      const rest = (held: Record<string, TextRows>) =>
        held.dimension!.map(({ amount: _a, score: _s, ...r }) => r)
      expect(rest(bigquery)).toEqual(rest(duckdb))
    } finally {
      await dimension.close()
    }
  })

  it('arrays: BigQuery stores a NULL array as an empty one, and refuses a NULL element naming table, column and key', async () => {
    const columns = [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'tags', type: 'VARCHAR[]' },
    ]
    const dimension = await both.open(tableSpec(), columns)
    try {
      const first = await dimension.load(
        [
          { customer_id: 1, tags: null },
          { customer_id: 2, tags: [] },
        ],
        { extractedAt: JAN },
      )
      expect(first.bigquery).toEqual(first.duckdb)
      const held = await dimension.holdings()
      const tags = (rows: TextRows) => rows.map((r) => [r.customer_id, r.tags])
      expect(tags(held.duckdb.dimension!)).toEqual([
        ['1', null],
        ['2', '[]'],
      ])
      expect(tags(held.bigquery.dimension!)).toEqual([
        ['1', '[]'],
        ['2', '[]'],
      ])
      const nullElement = await dimension.load(
        [
          { customer_id: 1, tags: ['a', null] },
          { customer_id: 2, tags: [null] },
        ],
        { extractedAt: MAR },
      )
      expect(nullElement.duckdb).toMatchObject({ status: 'merged', counts: { insertedVersions: 2 } })
      expect(nullElement.bigquery).toEqual({
        error: 'BatchRejectedError',
        message:
          'table customers: column "tags" holds an array with a NULL element (key customer_id=1; customer_id=2), ' +
          'which BigQuery cannot store: its arrays hold no NULL elements; nothing was loaded. Drop the NULL ' +
          'elements in a query source (PostgreSQL: array_remove(tags, NULL)), or keep the table on DuckDB',
      })
      expect((await dimension.holdings()).bigquery).toEqual(held.bigquery)
    } finally {
      await dimension.close()
    }
  })

  it('a JSON key: DuckDB merges it, BigQuery refuses it before loading, naming table and column', async () => {
    const dimension = await both.open(tableSpec({ key: ['profile'] }), [
      { name: 'profile', type: 'JSON' },
      { name: 'name', type: 'VARCHAR' },
    ])
    try {
      const outcome = await dimension.load([{ profile: '{"id":1}', name: 'Ana' }], { extractedAt: JAN })
      expect(outcome.duckdb).toMatchObject({ status: 'merged', counts: { insertedVersions: 1 } })
      expect(outcome.bigquery).toEqual({
        error: 'BatchRejectedError',
        message:
          'table customers: key column "profile" has type JSON, which BigQuery cannot compare (no equality on JSON ' +
          'or arrays), so it cannot be a key; nothing was loaded. Key the table on other columns, or cast this ' +
          'one to text in a query source',
      })
    } finally {
      await dimension.close()
    }
  })

  it('an untracked (type 1) JSON column: DuckDB merges it, BigQuery refuses it before loading, naming it', async () => {
    const dimension = await both.open(tableSpec({ tracked: { kind: 'list', columns: ['region'] } }), [
      ...CUSTOMER,
      { name: 'profile', type: 'JSON' },
    ])
    try {
      const outcome = await dimension.load([{ ...ana('South'), profile: '{"a":1}' }], { extractedAt: JAN })
      expect(outcome.duckdb).toMatchObject({ status: 'merged', counts: { insertedVersions: 1 } })
      expect(outcome.bigquery).toEqual({
        error: 'BatchRejectedError',
        message:
          'table customers: column "profile" is untracked (type 1), which the merge compares value by value, and ' +
          'BigQuery has no equality on its type (JSON): track it (changes then open versions) or cast it to text ' +
          'in a query source; nothing was loaded',
      })
    } finally {
      await dimension.close()
    }
  })

  it('a first batch refused inside the merge: DuckDB rolls its DDL back, BigQuery keeps the empty dimension', async () => {
    const dimension = await both.open(tableSpec(), CUSTOMER)
    try {
      const outcome = await dimension.load([{ customer_id: null, name: 'x', region: 'y' }], {
        extractedAt: JAN,
      })
      expect(outcome.duckdb).toMatchObject({ error: 'BatchRejectedError' })
      expect(outcome.bigquery).toEqual(outcome.duckdb)
      const { duckdb, bigquery } = await dimension.holdings()
      expect(duckdb).toEqual({})
      expect(bigquery).toEqual({ dimension: [], current: [], keys: [] })
    } finally {
      await dimension.close()
    }
  })
})
