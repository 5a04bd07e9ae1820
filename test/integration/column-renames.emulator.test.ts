import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import {
  BothWarehouses,
  PairedDimension,
  type MergeOutcome,
  type Paired,
} from '../support/both-warehouses.ts'
import type { Value } from '../support/staged-batches.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

/*
 * renamed: { old: new } on DuckDB and the BigQuery emulator: the dimension's column (and its previous_ column)
 * takes the new name with its history, no version opens because of the rename, and running again is a no-op.
 */

let both: BothWarehouses
beforeAll(async () => {
  both = await BothWarehouses.start()
})
afterAll(async () => {
  await both?.stop()
})

const day = (d: number) => `2024-02-${String(d).padStart(2, '0')}T00:00:00Z`
const BEFORE: StagedColumn[] = [
  { name: 'id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'tier', type: 'VARCHAR' },
]
const AFTER: StagedColumn[] = [
  { name: 'id', type: 'BIGINT' },
  { name: 'area', type: 'VARCHAR' },
  { name: 'tier', type: 'VARCHAR' },
]
const original = tableSpec({
  name: 'cust',
  target: 'dim_cust',
  key: ['id'],
  policies: { keepFirst: [], previousValue: ['region'], currentValue: [] },
})
const renamed: TableSpec = {
  ...original,
  policies: { keepFirst: [], previousValue: ['area'], currentValue: [] },
  renamed: [{ from: 'region', to: 'area' }],
}

function under(dimension: PairedDimension, table: TableSpec, columns: StagedColumn[]): PairedDimension {
  return new PairedDimension(table, columns, both, dimension.warehouses, dimension.emulator)
}

async function load(
  dimension: PairedDimension,
  rows: readonly Record<string, Value>[],
  extractedAt: string,
): Promise<Paired<MergeOutcome>> {
  const outcome = await dimension.load(rows, { extractedAt })
  expect(outcome.bigquery, 'the same outcome on BigQuery').toEqual(outcome.duckdb)
  return outcome
}

async function merged(dimension: PairedDimension, rows: readonly Record<string, Value>[], at: string) {
  const outcome = await load(dimension, rows, at)
  if ('error' in outcome.duckdb) throw new Error(outcome.duckdb.message)
  return outcome.duckdb
}

/** Every version as [id, <columns...>, valid_from day, open], equal on both warehouses. */
async function stored(dimension: PairedDimension, columns: readonly string[]): Promise<unknown[][]> {
  const c = dimension.table.columns
  const select = (d: SqlDialect, schema: string) => {
    const text = (name: string) => `${d.castToString(d.quoteIdentifier(name))} AS ${d.quoteIdentifier(name)}`
    return (
      `SELECT ${['id', ...columns, c.validFrom, c.validTo].map(text).join(', ')} ` +
      `FROM ${d.table({ schema, name: dimension.table.target })} ORDER BY ${d.quoteIdentifier('id')}, ${d.quoteIdentifier(c.validFrom)}`
    )
  }
  const { duckdb, bigquery } = await dimension.read(select)
  expect(bigquery, 'the same rows on BigQuery').toEqual(duckdb)
  return duckdb.map((r) => [
    Number(r.id),
    ...columns.map((name) => r[name]),
    String(r[c.validFrom]).slice(8, 10),
    r[c.validTo] === null,
  ])
}

describe('renamed: { old: new }', () => {
  it('carries the history over: the column and its previous_ column are renamed, no version opens; running again is a no-op', async () => {
    const dimension = await both.open(original, BEFORE)
    try {
      await merged(
        dimension,
        [
          { id: 1, region: 'North', tier: 'gold' },
          { id: 2, region: 'South', tier: 'silver' },
        ],
        day(1),
      )
      await merged(
        dimension,
        [
          { id: 1, region: 'East', tier: 'gold' },
          { id: 2, region: 'South', tier: 'silver' },
        ],
        day(2),
      )
      const before = await stored(dimension, ['region', 'previous_region'])
      expect(before).toEqual([
        [1, 'North', 'North', '01', false],
        [1, 'East', 'North', '02', true],
        [2, 'South', null, '01', true],
      ])
      const after = under(dimension, renamed, AFTER)
      const outcome = await merged(
        after,
        [
          { id: 1, area: 'East', tier: 'gold' },
          { id: 2, area: 'South', tier: 'silver' },
        ],
        day(3),
      )
      expect(outcome.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
      expect(await stored(after, ['area', 'previous_area'])).toEqual(before)
      for (const side of ['duckdb', 'bigquery'] as const) {
        const described = await after.warehouses[side].describeTable({
          schema: after.schemaOf(side),
          name: 'dim_cust',
        })
        const names = described!.map((c) => c.name)
        expect(names, side).toEqual(expect.arrayContaining(['area', 'previous_area']))
        expect(names, side).not.toContain('region')
        expect(names, side).not.toContain('previous_region')
      }
      // The same config again: nothing to rename; a real change opens a version as usual.
      await merged(
        after,
        [
          { id: 1, area: 'West', tier: 'gold' },
          { id: 2, area: 'South', tier: 'silver' },
        ],
        day(4),
      )
      expect(await stored(after, ['area', 'previous_area'])).toEqual([
        [1, 'North', 'East', '01', false],
        [1, 'East', 'East', '02', false],
        [1, 'West', 'East', '04', true],
        [2, 'South', null, '01', true],
      ])
    } finally {
      await dimension.close()
    }
  })

  it('a batch refused after the rename (on BigQuery the rename is DDL and stays) leaves a table the next batch merges without a version per key', async () => {
    const dimension = await both.open(original, BEFORE)
    try {
      await merged(
        dimension,
        [
          { id: 1, region: 'North', tier: 'gold' },
          { id: 2, region: 'South', tier: 'silver' },
        ],
        day(1),
      )
      const before = await stored(dimension, ['region', 'previous_region'])
      const after = under(dimension, renamed, AFTER)
      // Duplicate keys: the batch is refused on both warehouses, and its history is unchanged.
      const refused = await load(
        after,
        [
          { id: 1, area: 'North', tier: 'gold' },
          { id: 1, area: 'East', tier: 'gold' },
        ],
        day(2),
      )
      expect('error' in refused.duckdb ? refused.duckdb.message : refused.duckdb).toMatch(
        /nothing was written/,
      )
      const next = await merged(
        after,
        [
          { id: 1, area: 'North', tier: 'gold' },
          { id: 2, area: 'South', tier: 'silver' },
        ],
        day(3),
      )
      expect(next.counts).toMatchObject({ insertedVersions: 0, closedVersions: 0 })
      expect(await stored(after, ['area', 'previous_area'])).toEqual(before)
    } finally {
      await dimension.close()
    }
  })

  it('refuses a source that still sends the old name, an old name the dimension does not have, and a new name it has; nothing is written', async () => {
    const dimension = await both.open(original, BEFORE)
    try {
      await merged(dimension, [{ id: 1, region: 'North', tier: 'gold' }], day(1))
      const stillOld = await load(
        under(dimension, renamed, BEFORE),
        [{ id: 1, region: 'North', tier: 'gold' }],
        day(2),
      )
      expect(stillOld.duckdb).toMatchObject({
        message: expect.stringContaining(
          'table cust: renamed: { region: area }, but the source still sends "region"',
        ),
      })
      const wrongOld = await load(
        under(dimension, { ...renamed, renamed: [{ from: 'regoin', to: 'area' }] }, AFTER),
        [{ id: 1, area: 'North', tier: 'gold' }],
        day(2),
      )
      expect(wrongOld.duckdb).toMatchObject({
        message: expect.stringContaining('dimension dim_cust has no column "regoin" (nor "area")'),
      })
      const taken = await load(
        under(dimension, { ...original, renamed: [{ from: 'region', to: 'tier' }] }, [
          { name: 'id', type: 'BIGINT' },
          { name: 'tier', type: 'VARCHAR' },
        ]),
        [{ id: 1, tier: 'North' }],
        day(2),
      )
      expect(taken.duckdb).toMatchObject({
        message: expect.stringContaining('dimension dim_cust already has both "region" and "tier"'),
      })
      expect(await stored(dimension, ['region'])).toEqual([[1, 'North', '01', true]])
    } finally {
      await dimension.close()
    }
  })
})
