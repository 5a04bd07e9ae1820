import { expect } from 'vitest'
import { presetTableFields } from '../../lib/config/table-options.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import { canonicalJson } from '../../lib/core/canonical-json.ts'
import type { ChangeFeedSpec, TableSpec } from '../../lib/core/table-spec.ts'
import type { MergeOutcome, TextRows } from './both-warehouses.ts'
import type { Value } from './staged-batches.ts'
import { tableSpec } from './table-spec-builder.ts'

/**
 * The warehouse contract's scenarios: the inputs of the DuckDB scenario suites (scd2-scenarios, change-feed,
 * check-failures, empty-first-load), run on DuckDB and another warehouse (the BigQuery emulator:
 * test/integration/warehouse-contract.emulator.test.ts; PostgreSQL: warehouse-contract-postgres.test.ts). After
 * every merge both must report the same outcome (status and counts, or the same error class and message) and hold
 * the same rows: versions, windows, surrogate keys, row hashes, deleted flags, the current view, the as-of
 * function, the capture log and the retired versions.
 */

type Rows = readonly Record<string, Value>[]
interface Step {
  readonly rows?: Rows
  readonly extractedAt?: string
  readonly mode?: 'full' | 'incremental'
  readonly columns?: readonly StagedColumn[]
  readonly allowMassDelete?: boolean
  /** Merge the previous step's batch again instead of staging a new one. */
  readonly again?: true
  /** What DuckDB must answer, so the scenario provably crosses the path it names. */
  readonly expect: 'merged' | 'already-applied' | 'refused'
  /** Versions the merge must insert (on both: the outcomes are compared), where the scenario is about that. */
  readonly insertedVersions?: number
}
export interface Scenario {
  readonly table?: Partial<TableSpec>
  readonly columns?: readonly StagedColumn[]
  readonly steps: readonly Step[]
  /** Instants the as-of function is read at after the last step. */
  readonly asOf?: readonly string[]
}

export const CUSTOMER = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'region', type: 'VARCHAR' },
]
const WITH_UPDATED_AT = [...CUSTOMER, { name: 'updated_at', type: 'TIMESTAMP' }]
export const JAN = '2024-01-01T09:00:00Z'
export const MAR = '2024-03-10T14:30:00Z'
export const MAY = '2024-05-01T00:00:00Z'
export const ana = (region: string | null) => ({ customer_id: 101, name: 'Ana', region })
export const bruno = { customer_id: 102, name: 'Bruno', region: 'North' }
export const carla = { customer_id: 103, name: 'Carla', region: 'South' }
export const diego = { customer_id: 104, name: 'Diego', region: 'West' }
const CHANGE_TIME: Partial<TableSpec> = {
  extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
  validFrom: { kind: 'column', column: 'updated_at' },
}
const merged = (rows: Rows, extractedAt: string, more: Partial<Step> = {}): Step => ({
  rows,
  extractedAt,
  expect: 'merged',
  ...more,
})
const refused = (rows: Rows, extractedAt: string, more: Partial<Step> = {}): Step => ({
  rows,
  extractedAt,
  expect: 'refused',
  ...more,
})

export const SNAPSHOTS: Record<string, Scenario> = {
  'initial load': { steps: [merged([ana('South'), bruno, carla], JAN)] },
  'quickstart, deletes=ignore': {
    table: { deletes: 'ignore' },
    steps: [merged([ana('South'), bruno, carla], JAN), merged([ana('North'), bruno, diego], MAR)],
    asOf: ['2024-02-01T00:00:00Z', MAR, '2024-04-01T00:00:00Z'],
  },
  'deletes=invalidate': {
    table: { deletes: 'invalidate' },
    steps: [merged([ana('South'), bruno, carla], JAN), merged([ana('South'), bruno, diego], MAR)],
  },
  'deletes=new_record, a deleted key comes back': {
    table: { deletes: 'new_record' },
    steps: [
      merged([ana('South'), bruno, carla], JAN),
      merged([ana('South'), bruno], MAR),
      merged([ana('South'), bruno, carla], MAY),
    ],
    asOf: ['2024-04-01T00:00:00Z'],
  },
  'deletes=invalidate, a deleted key comes back': {
    table: { deletes: 'invalidate' },
    steps: [
      merged([ana('South'), bruno, carla], JAN),
      merged([ana('South'), bruno], MAR),
      merged([ana('South'), bruno, carla], MAY),
    ],
  },
  'the same batch merged twice; an unchanged snapshot': {
    table: { deletes: 'invalidate' },
    steps: [
      merged([ana('South'), bruno, carla], JAN),
      merged([ana('North'), bruno, carla], MAR),
      { again: true, expect: 'already-applied' },
      merged([ana('North'), bruno, carla], MAY),
    ],
  },
  'the mass-delete guard, then --allow-mass-delete; an empty full extract': {
    table: { deletes: 'invalidate', maxDeleteShare: 0.5 },
    steps: [
      merged([ana('South'), bruno, carla, diego], JAN),
      refused([ana('North')], MAR),
      { again: true, allowMassDelete: true, expect: 'merged' },
      refused([], MAY),
    ],
  },
  'composite keys': {
    table: { key: ['tenant', 'customer_id'], deletes: 'invalidate' },
    columns: [
      { name: 'tenant', type: 'VARCHAR' },
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'region', type: 'VARCHAR' },
    ],
    steps: [
      merged(
        [
          { tenant: 'a', customer_id: 1, region: 'South' },
          { tenant: 'b', customer_id: 1, region: 'South' },
        ],
        JAN,
      ),
      merged([{ tenant: 'a', customer_id: 1, region: 'North' }], MAR, { allowMassDelete: true }),
    ],
  },
  "NULL, '' and 'NULL' are three states; a value moved between columns is a change": {
    columns: [...CUSTOMER, { name: 'last_name', type: 'VARCHAR' }],
    steps: [
      merged([{ ...ana(null), last_name: 'Ana' }], JAN),
      merged([{ ...ana(''), last_name: 'Ana' }], MAR),
      merged([{ ...ana('NULL'), last_name: 'Ana' }], MAY),
      merged([{ ...ana('NULL'), name: 'An', last_name: 'aAna' }], '2024-06-01T00:00:00Z'),
    ],
  },
  'snapshots out of extraction order are refused': {
    steps: [merged([ana('South')], MAR), refused([ana('North')], JAN)],
  },
  'untracked columns are type 1': {
    table: { tracked: { kind: 'list', columns: ['region'] } },
    columns: [...CUSTOMER, { name: 'email', type: 'VARCHAR' }],
    steps: [
      merged([{ ...ana('South'), email: 'a@old' }], JAN),
      merged([{ ...ana('North'), email: 'a@old' }], MAR),
      merged([{ ...ana('North'), email: 'a@new' }], MAY),
    ],
  },
  // The type 1 rewrite of every version runs only when a version may differ (render-merge.ts): a key that had no
  // current version (deleted under invalidate) may still have older versions to rewrite.
  'type 1 reaches the older versions of a key deleted and back (invalidate)': {
    table: { deletes: 'invalidate', tracked: { kind: 'list', columns: ['region'] } },
    columns: [...CUSTOMER, { name: 'email', type: 'VARCHAR' }],
    steps: [
      merged(
        [
          { ...ana('South'), email: 'a@old' },
          { ...bruno, email: 'b' },
          { ...carla, email: 'c' },
        ],
        JAN,
      ),
      merged(
        [
          { ...ana('North'), email: 'a@old' },
          { ...bruno, email: 'b' },
          { ...carla, email: 'c' },
        ],
        MAR,
      ),
      merged(
        [
          { ...bruno, email: 'b' },
          { ...carla, email: 'c' },
        ],
        MAY,
      ),
      merged(
        [
          { ...ana('North'), email: 'a@new' },
          { ...bruno, email: 'b' },
        ],
        '2024-07-01T00:00:00Z',
      ),
    ],
  },
  'a new source column; a column whose type changed; a column that vanished': {
    steps: [
      merged([ana('South'), bruno], JAN),
      merged(
        [
          { ...ana('South'), segment: null },
          { ...bruno, segment: 'smb' },
        ],
        MAR,
        { columns: [...CUSTOMER, { name: 'segment', type: 'VARCHAR' }] },
      ),
      refused([{ customer_id: 101, name: 'Ana', region: 7, segment: null }], MAY, {
        columns: [
          ...CUSTOMER.filter((c) => c.name !== 'region'),
          { name: 'region', type: 'INTEGER' },
          { name: 'segment', type: 'VARCHAR' },
        ],
      }),
      // Kept in the dimension, NULL on new versions, opening none.
      merged([{ customer_id: 101, name: 'Ana', segment: null }], MAY, {
        columns: [...CUSTOMER.filter((c) => c.name !== 'region'), { name: 'segment', type: 'VARCHAR' }],
      }),
    ],
  },
  'a sentinel open end': {
    table: { openEnd: '9999-12-31T23:59:59Z', deletes: 'new_record' },
    steps: [merged([ana('South'), bruno], JAN), merged([ana('North')], MAR, { allowMassDelete: true })],
    asOf: ['2024-04-01T00:00:00Z'],
  },
  'the dbt preset (dbt_scd_id, dbt_updated_at)': {
    table: { ...presetTableFields('dbt'), deletes: 'new_record' },
    steps: [merged([ana('South'), bruno], JAN), merged([ana('North')], MAR, { allowMassDelete: true })],
  },
  'the fivetran preset (ends one millisecond early), late events': {
    table: { ...presetTableFields('fivetran'), ...CHANGE_TIME, deletes: 'invalidate' },
    columns: WITH_UPDATED_AT,
    steps: [
      merged(
        [
          { ...ana('South'), updated_at: MAR },
          { ...bruno, updated_at: JAN },
        ],
        MAY,
      ),
      merged([{ ...ana('North'), updated_at: JAN }], MAY),
    ],
    asOf: [JAN, '2024-02-01T00:00:00Z', MAR],
  },
  'values of every staged type (NUMERIC and whole DOUBLE text differ: pinned below)': {
    columns: [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'big', type: 'BIGINT' },
      { name: 'small', type: 'INTEGER' },
      { name: 'score', type: 'DOUBLE' },
      { name: 'born', type: 'DATE' },
      { name: 'seen', type: 'TIMESTAMP' },
      { name: 'active', type: 'BOOLEAN' },
      { name: 'note', type: 'VARCHAR' },
    ],
    steps: [
      merged(
        [
          {
            customer_id: 1,
            big: 9007199254740993n,
            small: -7,
            score: 0.1,
            born: '1969-07-20',
            seen: '2024-01-01 00:00:00.123456',
            active: true,
            note: 'é ∅ "q" \'s\'',
          },
          {
            customer_id: 2,
            big: null,
            small: null,
            score: null,
            born: null,
            seen: null,
            active: null,
            note: null,
          },
        ],
        JAN,
      ),
      merged(
        [
          {
            customer_id: 1,
            big: 9007199254740993n,
            small: -7,
            score: 1e-7,
            born: '1969-07-20',
            seen: '2024-01-01 00:00:00.123456',
            active: true,
            note: 'é ∅ "q" \'s\'',
          },
          {
            customer_id: 2,
            big: 0,
            small: 0,
            score: -2.5e-300,
            born: '2000-01-01',
            seen: null,
            active: false,
            note: '',
          },
        ],
        MAR,
      ),
    ],
  },
}

export const SOURCE_TYPES: Record<string, Scenario> = {
  'UUID columns (STRING on BigQuery), a UUID key; a changed UUID opens a version': {
    table: { key: ['account_id'], deletes: 'invalidate' },
    columns: [
      { name: 'account_id', type: 'UUID' },
      { name: 'owner', type: 'UUID' },
      { name: 'name', type: 'VARCHAR' },
    ],
    steps: [
      merged(
        [
          {
            account_id: '0b6d1a52-3c55-4f2e-9f8a-2a1d5e0c7b01',
            owner: 'f3a1c2d4-0000-4000-8000-000000000001',
            name: 'a',
          },
          { account_id: '0b6d1a52-3c55-4f2e-9f8a-2a1d5e0c7b02', owner: null, name: 'b' },
        ],
        JAN,
      ),
      merged(
        [
          {
            account_id: '0b6d1a52-3c55-4f2e-9f8a-2a1d5e0c7b01',
            owner: 'F3A1C2D4-0000-4000-8000-000000000002',
            name: 'a',
          },
          { account_id: '0b6d1a52-3c55-4f2e-9f8a-2a1d5e0c7b02', owner: null, name: 'b' },
        ],
        MAR,
      ),
    ],
  },
  'PostgreSQL intervals, staged as their exact ISO 8601 text: a changed interval opens a version': {
    columns: [...CUSTOMER, { name: 'term', type: 'VARCHAR' }],
    steps: [
      merged([{ ...ana('South'), term: 'P1Y2M3DT4H5M6.000007S' }], JAN),
      merged([{ ...ana('South'), term: 'P1Y2M3DT4H5M6.000008S' }], MAR),
    ],
  },
  // The sources stage a JSON document's canonical text (the extract runs canonicalJson): reordered keys and
  // other spacing are the same text, so no change on either warehouse.
  'JSON columns (JSON on BigQuery): a changed value or array element opens a version, reordered keys do not':
    {
      table: { deletes: 'invalidate' },
      columns: [
        { name: 'customer_id', type: 'BIGINT' },
        { name: 'profile', type: 'JSON' },
      ],
      steps: [
        merged(
          [
            { customer_id: 1, profile: canonicalJson('{"name": "Ana", "tags": ["a", "b"], "score": 2.50}') },
            { customer_id: 2, profile: canonicalJson('{"x": null, "é": {"z": 1, "y": [true, 1e2]}}') },
            { customer_id: 3, profile: null },
          ],
          JAN,
          { insertedVersions: 3 },
        ),
        merged(
          [
            { customer_id: 1, profile: canonicalJson('{"tags":["a","b"],"score":2.5,"name":"Ana"}') },
            { customer_id: 2, profile: canonicalJson('{"é": {"y": [true, 100.0], "z": 1}, "x": 0}') },
            { customer_id: 3, profile: canonicalJson('{}') },
          ],
          MAR,
          { insertedVersions: 2 },
        ),
        merged(
          [
            { customer_id: 1, profile: canonicalJson('{"tags":["b","a"],"score":2.5,"name":"Ana"}') },
            { customer_id: 2, profile: canonicalJson('{"é": {"y": [true, 100.0], "z": 1}, "x": 0}') },
            { customer_id: 3, profile: canonicalJson('{}') },
          ],
          MAY,
          { insertedVersions: 1 },
        ),
      ],
    },
  'arrays of text and of integers (ARRAY on BigQuery): a changed element and a reordered array open versions':
    {
      table: { deletes: 'invalidate' },
      columns: [
        { name: 'customer_id', type: 'BIGINT' },
        { name: 'tags', type: 'VARCHAR[]' },
        { name: 'scores', type: 'INTEGER[]' },
        { name: 'amounts', type: 'DECIMAL(10,2)[]' },
      ],
      steps: [
        merged(
          [
            {
              customer_id: 1,
              tags: ['vip', 'a, b', "it's", 'NULL', ''],
              scores: [1, 2, 3],
              amounts: ['1.5'],
            },
            { customer_id: 2, tags: [], scores: [7], amounts: [] },
          ],
          JAN,
          { insertedVersions: 2 },
        ),
        // A changed element of key 1; key 2 unchanged.
        merged(
          [
            {
              customer_id: 1,
              tags: ['vip', 'a, b', "it's", 'NULL', ''],
              scores: [1, 2, 4],
              amounts: ['1.5'],
            },
            { customer_id: 2, tags: [], scores: [7], amounts: [] },
          ],
          MAR,
          { insertedVersions: 1 },
        ),
        // The same elements in another order (key 1), an element added to an empty array (key 2).
        merged(
          [
            {
              customer_id: 1,
              tags: ['vip', 'a, b', "it's", 'NULL', ''],
              scores: [2, 1, 4],
              amounts: ['1.5'],
            },
            { customer_id: 2, tags: ['x'], scores: [7], amounts: [] },
          ],
          MAY,
          { insertedVersions: 2 },
        ),
        // The same values again (1.50 is 1.5 at scale 2): nothing changes.
        merged(
          [
            {
              customer_id: 1,
              tags: ['vip', 'a, b', "it's", 'NULL', ''],
              scores: [2, 1, 4],
              amounts: ['1.50'],
            },
            { customer_id: 2, tags: ['x'], scores: [7], amounts: [] },
          ],
          '2024-06-01T00:00:00Z',
          { insertedVersions: 0 },
        ),
      ],
    },
}

export const CHANGE_TIMES: Record<string, Scenario> = {
  'several events of one key in one delta': {
    table: CHANGE_TIME,
    columns: WITH_UPDATED_AT,
    steps: [
      merged(
        [
          { ...ana('North'), updated_at: '2024-02-01 00:00:00' },
          { ...ana('South'), updated_at: '2024-01-01 00:00:00' },
          { ...ana('West'), updated_at: '2024-03-01 00:00:00' },
        ],
        MAR,
      ),
    ],
  },
  'a late event splits a window; type 1 columns take the newest capture': {
    table: { ...CHANGE_TIME, tracked: { kind: 'list', columns: ['region'] } },
    columns: [...WITH_UPDATED_AT, { name: 'email', type: 'VARCHAR' }],
    steps: [
      merged([{ ...ana('South'), email: 'a@jan', updated_at: '2024-01-01 00:00:00' }], JAN),
      merged([{ ...ana('West'), email: 'a@mar', updated_at: '2024-03-01 00:00:00' }], MAR),
      merged([{ ...ana('North'), email: 'a@feb', updated_at: '2024-02-01 00:00:00' }], MAY),
    ],
    asOf: ['2024-02-01T00:00:00Z', '2024-02-15T00:00:00Z'],
  },
  'several changes of a key in one batch: type 1 takes the newest on every version': {
    table: { ...CHANGE_TIME, deletes: 'ignore', tracked: { kind: 'list', columns: ['region'] } },
    columns: [...WITH_UPDATED_AT, { name: 'email', type: 'VARCHAR' }],
    steps: [
      merged(
        [
          { ...ana('South'), email: 'a@jan', updated_at: '2024-01-01 00:00:00' },
          { ...ana('North'), email: 'a@feb', updated_at: '2024-02-01 00:00:00' },
        ],
        MAR,
      ),
      merged([{ ...ana('West'), email: 'a@feb', updated_at: '2024-04-01 00:00:00' }], MAY),
    ],
  },
  "a late event of a composite key splits only that key's window": {
    table: { ...CHANGE_TIME, key: ['tenant', 'customer_id'] },
    columns: [{ name: 'tenant', type: 'VARCHAR' }, ...WITH_UPDATED_AT],
    steps: [
      merged(
        ['a', 'b'].map((tenant) => ({ tenant, ...ana('South'), updated_at: '2024-01-01 00:00:00' })),
        JAN,
      ),
      merged(
        ['a', 'b'].map((tenant) => ({ tenant, ...ana('West'), updated_at: '2024-03-01 00:00:00' })),
        MAR,
      ),
      merged([{ tenant: 'a', ...ana('North'), updated_at: '2024-02-01 00:00:00' }], MAY),
    ],
  },
  'a row that changed without a new change time; a NULL change time': {
    table: CHANGE_TIME,
    columns: WITH_UPDATED_AT,
    steps: [
      merged([{ ...ana('South'), updated_at: '2024-01-01 00:00:00' }], JAN),
      refused([{ ...ana('North'), updated_at: '2024-01-01 00:00:00' }], MAR),
      refused([{ ...bruno, updated_at: null }], MAR),
    ],
  },
}

export const SOFT_DELETES: Record<string, Scenario> = Object.fromEntries(
  (['invalidate', 'new_record', 'ignore'] as const).map((deletes) => [
    `a row flagged by the soft-delete column, then unflagged (deletes=${deletes})`,
    {
      table: { deletes, softDeleteColumn: 'deleted' },
      columns: [...CUSTOMER, { name: 'deleted', type: 'BOOLEAN' }],
      steps: [false, true, false].map((flag, i) =>
        merged(
          [
            { ...ana('South'), deleted: flag },
            { ...bruno, deleted: false },
          ],
          [JAN, MAR, MAY][i]!,
        ),
      ),
    } satisfies Scenario,
  ]),
)

export const BAD_BATCHES: Record<string, Scenario> = {
  'duplicate keys, even ones that read like a mass delete': {
    steps: [
      merged([ana('South')], JAN),
      refused(
        Array.from({ length: 12 }, (_, i) => [
          { customer_id: 200 + i, name: 'x would delete y', region: 'a' },
          { customer_id: 200 + i, name: 'y', region: 'b' },
        ]).flat(),
        MAR,
      ),
    ],
  },
  'NULL keys': { steps: [refused([ana('South'), { customer_id: null, name: 'x', region: 'y' }], JAN)] },
  // NaN equals nothing on BigQuery: its key would never match its current version, and every batch would add one.
  'NaN keys, whose next batch would open a second current version on BigQuery': {
    columns: [
      { name: 'customer_id', type: 'DOUBLE' },
      { name: 'name', type: 'VARCHAR' },
      { name: 'region', type: 'VARCHAR' },
    ],
    steps: [
      merged([{ customer_id: 1.5, name: 'Ana', region: 'South' }], JAN),
      refused(
        [
          { customer_id: Number.NaN, name: 'x', region: 'y' },
          { customer_id: 1.5, name: 'Ana', region: 'North' },
        ],
        MAR,
      ),
      merged([{ customer_id: 1.5, name: 'Ana', region: 'North' }], MAY),
    ],
  },
  'a key column missing from the source': {
    table: { key: ['custmer_id'] },
    steps: [refused([ana('South')], JAN)],
  },
  'a tracked column missing from the source': {
    table: { tracked: { kind: 'list', columns: ['segment'] } },
    steps: [refused([ana('South')], JAN)],
  },
  'an empty full extract on a first load, then with the guard overridden': {
    columns: [...CUSTOMER, { name: 'amount', type: 'DECIMAL(12,2)' }],
    steps: [refused([], JAN), { again: true, allowMassDelete: true, expect: 'merged' }],
  },
  'an empty first delta': { table: CHANGE_TIME, columns: WITH_UPDATED_AT, steps: [merged([], JAN)] },
}

const DMS: ChangeFeedSpec = { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } }
const FEED = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
]
const SEQUENCED = [...FEED, { name: 'seq', type: 'BIGINT' }]
const ev = (Op: string | null, customer_id: number, region: string | null, day: number, seq?: number) => ({
  Op,
  customer_id,
  region,
  changed_at: `2024-01-${String(day).padStart(2, '0')} 00:00:00`,
  ...(seq !== undefined ? { seq } : {}),
})
const feedDay = (day: number) => `2024-02-${String(day).padStart(2, '0')}T00:00:00Z`
const feed = (overrides: Partial<TableSpec> = {}): Partial<TableSpec> => ({
  validFrom: { kind: 'column', column: 'changed_at' },
  changes: DMS,
  deletes: 'invalidate',
  ...overrides,
})
const sequenced = (overrides: Partial<TableSpec> = {}) =>
  feed({ changes: { ...DMS, sequence: 'seq' }, ...overrides })

export const CHANGE_FEEDS: Record<string, Scenario> = {
  'several events of a key in one batch; a delete closes the key; absence means nothing': {
    table: feed(),
    columns: FEED,
    steps: [
      merged(
        [
          ev('I', 1, 'South', 1),
          ev('U', 1, 'North', 3),
          ev('U', 1, 'West', 5),
          ev('I', 2, 'East', 2),
          ev('D', 2, 'East', 4),
          ev('I', 3, 'East', 1),
        ],
        feedDay(1),
      ),
      merged([ev('U', 1, 'North', 6)], feedDay(2), { mode: 'full' }),
    ],
  },
  'deletes=new_record; an older update after a delete never resurrects the key': {
    table: feed({ deletes: 'new_record' }),
    columns: FEED,
    steps: [
      merged([ev('I', 1, 'South', 1), ev('D', 1, null, 5)], feedDay(1)),
      merged([ev('U', 1, 'North', 3)], feedDay(2)),
    ],
    asOf: ['2024-01-04T00:00:00Z', '2024-01-06T00:00:00Z'],
  },
  'deletes=invalidate; a late event; a re-delivered batch': {
    table: feed(),
    columns: FEED,
    steps: [
      merged(
        [ev('I', 1, 'South', 1), ev('U', 1, 'West', 5), ev('I', 2, 'East', 1), ev('D', 2, null, 5)],
        feedDay(1),
      ),
      merged([ev('U', 1, 'North', 3), ev('U', 2, 'North', 3)], feedDay(2)),
      merged([ev('U', 1, 'North', 3), ev('U', 2, 'North', 3)], feedDay(3)),
    ],
  },
  'deletes=ignore; the same event twice in one batch; configurable operation values': {
    table: feed({
      deletes: 'ignore',
      changes: { operation: { column: 'Op', insert: ['c', 'r'], update: ['u'], delete: ['d'] } },
    }),
    columns: FEED,
    steps: [
      merged(
        [ev('r', 1, 'South', 1), ev('r', 1, 'South', 1), ev('u', 1, 'North', 2), ev('d', 1, null, 3)],
        feedDay(1),
      ),
    ],
  },
  'sequenced: events at one change time, a correction in place, a superseded late event': {
    table: sequenced(),
    columns: SEQUENCED,
    steps: [
      merged(
        [
          ev('U', 1, 'North', 3, 20),
          ev('I', 1, 'South', 1, 1),
          ev('U', 1, 'West', 3, 10),
          ev('U', 1, 'East', 5, 1),
        ],
        feedDay(1),
      ),
      merged([ev('U', 1, 'Nowhere', 3, 15)], feedDay(2)),
      merged([ev('U', 1, 'West', 3, 30)], feedDay(3)),
    ],
  },
  'sequenced: a correction that merges two versions retires the later one': {
    table: sequenced({ deletes: 'new_record' }),
    columns: SEQUENCED,
    steps: [
      merged([ev('I', 1, 'South', 1, 1), ev('U', 1, 'West', 3, 1), ev('U', 1, 'South', 5, 1)], feedDay(1)),
      merged([ev('U', 1, 'South', 3, 2)], feedDay(2)),
      merged([ev('U', 1, 'North', 7, 1), ev('D', 1, null, 9, 1)], feedDay(3)),
    ],
  },
  'refused: an unknown or missing operation, a tie without a sequence': {
    table: feed(),
    columns: FEED,
    steps: [
      merged([ev('I', 1, 'South', 1)], feedDay(1)),
      refused([ev('U', 1, 'North', 2), ev(null, 7, 'West', 2)], feedDay(2)),
      refused([ev('X', 8, 'West', 2)], feedDay(3)),
      refused([ev('U', 1, 'North', 2), ev('U', 1, 'South', 2), ev('U', 2, 'East', 2)], feedDay(4)),
    ],
  },
  'refused: a sequence tie, a NULL sequence, an event changed at its time and sequence': {
    table: sequenced(),
    columns: SEQUENCED,
    steps: [
      merged([ev('I', 1, 'South', 1, 1)], feedDay(1)),
      refused([ev('U', 1, 'North', 2, 5), ev('D', 1, 'North', 2, 5)], feedDay(2)),
      refused([ev('U', 3, 'North', 2, 5), { ...ev('U', 4, 'North', 2), seq: null }], feedDay(3)),
      refused([ev('I', 1, 'North', 1, 1)], feedDay(4)),
    ],
  },
  'an empty first batch of a feed': {
    table: feed(),
    columns: FEED,
    steps: [merged([], feedDay(1), { mode: 'full' })],
  },
}

/** DuckDB and another warehouse holding one dimension (BothWarehouses, DuckDbAndPostgres). */
export interface ScenarioPair<Other extends string> {
  /** The other warehouse's key in outcomes and holdings, and its name in messages. */
  readonly other: Other
  readonly otherName: string
  open(
    table: TableSpec,
    columns: readonly StagedColumn[],
    numbering: { readonly rowsPerKeyBucket?: number },
  ): Promise<ScenarioDimension<Other>>
}

type OnBoth<T, Other extends string> = { readonly duckdb: T } & { readonly [K in Other]: T }

export interface ScenarioDimension<Other extends string> {
  stage(
    rows: Rows,
    options: { extractedAt: string; mode?: 'full' | 'incremental'; columns?: readonly StagedColumn[] },
  ): Promise<string>
  merge(batchId: string, options: { allowMassDelete?: boolean }): Promise<OnBoth<MergeOutcome, Other>>
  holdings(asOf: readonly string[]): Promise<OnBoth<Record<string, TextRows>, Other>>
  close(): Promise<void>
}

/**
 * Runs a scenario's steps on DuckDB and the pair's other warehouse: after every merge the same outcome, at the
 * end the same rows (and surrogate keys given out once).
 */
export async function runScenario<Other extends string>(
  pair: ScenarioPair<Other>,
  scenario: Scenario,
  numbering: { readonly rowsPerKeyBucket?: number } = {},
): Promise<void> {
  const table = tableSpec(scenario.table)
  const other = pair.other
  const dimension = await pair.open(table, scenario.columns ?? CUSTOMER, numbering)
  try {
    let batchId: string | undefined
    const batchOrder: string[] = []
    for (const [i, step] of scenario.steps.entries()) {
      if (!step.again) {
        batchId = await dimension.stage(step.rows ?? [], {
          extractedAt: step.extractedAt!,
          ...(step.mode ? { mode: step.mode } : {}),
          ...(step.columns ? { columns: step.columns } : {}),
        })
        batchOrder.push(batchId)
      }
      const outcome = await dimension.merge(batchId!, { allowMassDelete: step.allowMassDelete ?? false })
      expect(kind(outcome.duckdb), `step ${i + 1} on DuckDB: ${JSON.stringify(outcome.duckdb)}`).toBe(
        step.expect,
      )
      expect(outcome[other], `step ${i + 1}: the same outcome on ${pair.otherName}`).toEqual(outcome.duckdb)
      if (step.insertedVersions !== undefined)
        expect(outcome.duckdb, `step ${i + 1}: versions inserted`).toMatchObject({
          counts: { insertedVersions: step.insertedVersions },
        })
    }
    // Read once at the end: a read on the emulator costs about as much as a merge statement, and a step that
    // wrote differently on one warehouse still shows in what it holds afterwards.
    const held = await dimension.holdings(scenario.asOf ?? [])
    expect(
      withoutDbtScdId(table, withoutEmptyDimension(held[other])),
      `the same rows on ${pair.otherName}`,
    ).toEqual(withoutDbtScdId(table, withoutEmptyDimension(held.duckdb)))
    expectSurrogateKeysGivenOutOnce(table, held.duckdb, batchOrder)
  } finally {
    await dimension.close()
  }
}

/**
 * Invariant 5 (docs/invariants.md) over what a warehouse holds (both hold the same): surrogate keys are unique over the dimension and
 * its retired versions, every key a batch gave out is above every key of the batches before it (a retired key is
 * never given out again), and the record of the highest key given out is at least every key held.
 */
function expectSurrogateKeysGivenOutOnce(
  table: TableSpec,
  held: Record<string, TextRows>,
  batchOrder: readonly string[],
): void {
  const n = table.columns
  const rows = [...(held.dimension ?? []), ...(held.retired ?? [])].map((r) => ({
    sk: Number(r[n.surrogateKey]),
    batch: batchOrder.indexOf(String(r[n.batchId] ?? r.batch_id)),
  }))
  const keys = rows.map((r) => r.sk)
  expect(new Set(keys).size, 'surrogate keys are unique over the dimension and its retired versions').toBe(
    keys.length,
  )
  for (const later of rows)
    for (const earlier of rows)
      if (earlier.batch < later.batch)
        expect(
          later.sk,
          `a key of batch ${later.batch + 1} is above the keys of batch ${earlier.batch + 1}`,
        ).toBeGreaterThan(earlier.sk)
  if (keys.length > 0)
    expect(Number(held.keys?.[0]?.highest_surrogate_key), 'the recorded highest key').toBeGreaterThanOrEqual(
      Math.max(...keys),
    )
}

/**
 * A first batch refused inside the merge leaves no dimension on DuckDB (its DDL rolls back with the merge) and an
 * empty one on BigQuery (DDL runs before the transaction there): the same content, pinned below.
 */
export function withoutEmptyDimension(held: Record<string, TextRows>): Record<string, TextRows> {
  return Object.values(held).every((rows) => rows.length === 0) ? {} : held
}

/**
 * dbt_scd_id hashes the instant as each dbt adapter casts it to text (`+00` on BigQuery only), so it differs by
 * design: presets-drop-in.emulator.test.ts checks it against dbt's own algorithm on each warehouse.
 */
function withoutDbtScdId(table: TableSpec, held: Record<string, TextRows>): Record<string, TextRows> {
  const id = table.dbtIds?.scdId
  if (id === undefined) return held
  return Object.fromEntries(
    Object.entries(held).map(([name, rows]) => [
      name,
      rows.map((r) => Object.fromEntries(Object.entries(r).filter(([column]) => column !== id))),
    ]),
  )
}

export function kind(outcome: MergeOutcome): Step['expect'] {
  if ('error' in outcome) return 'refused'
  return outcome.status === 'already-applied' ? 'already-applied' : 'merged'
}

/** Every group of the contract, for the runners' `describe.each`: a group added here runs on every warehouse pair. */
export const CONTRACT_GROUPS: readonly (readonly [string, Record<string, Scenario>])[] = [
  ['snapshots', SNAPSHOTS],
  ['source types', SOURCE_TYPES],
  ['change times', CHANGE_TIMES],
  ['soft deletes', SOFT_DELETES],
  ['bad batches', BAD_BATCHES],
  ['change feeds', CHANGE_FEEDS],
]
