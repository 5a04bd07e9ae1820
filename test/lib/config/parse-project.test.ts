import { describe, expect, it } from 'vitest'
import type { ProjectSpec } from '../../../lib/core/table-spec.ts'
import { COLUMN_PRESETS } from '../../../lib/core/metadata-columns.ts'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { resolveProject } from '../../../lib/config/resolve-project.ts'

const CONFIG = '/projects/shop/dimsync.yaml'

/** A config with one table whose body is `table` (YAML lines indented under the list item). */
function withTable(table: string, top = ''): string {
  return `version: 1\n${top}tables:\n  - name: customers\n    source: { type: file, path: data/customers.csv }\n${table
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => `    ${line}`)
    .join('\n')}\n`
}

function firstTable(text: string) {
  return parseProject(text, CONFIG).tables[0]!
}

describe('parseProject: a valid minimal config', () => {
  it('resolves every default', () => {
    const project = parseProject(withTable('key: customer_id'), CONFIG)
    expect(project).toStrictEqual<ProjectSpec>({
      configPath: CONFIG,
      baseDir: '/projects/shop',
      warehouse: { type: 'duckdb', path: '/projects/shop/.dimsync/warehouse.duckdb', schema: 'main' },
      staging: { type: 'local', path: '/projects/shop/.dimsync/staging' },
      state: { type: 'local', path: '/projects/shop/.dimsync/state' },
      tables: [
        {
          name: 'customers',
          source: {
            type: 'file',
            path: 'data/customers.csv',
            format: 'csv',
            csv: { delimiter: ',', header: true },
          },
          target: 'dim_customers',
          key: ['customer_id'],
          mode: 'history',
          extract: { mode: 'full' },
          validFrom: { kind: 'extracted_at' },
          tracked: { kind: 'all_except', columns: [] },
          exclude: [],
          deletes: 'ignore',
          maxDeleteShare: 0.5,
          openEnd: null,
          columns: {
            surrogateKey: 'dimsync_sk',
            validFrom: 'valid_from',
            validTo: 'valid_to',
            isCurrent: 'is_current',
            isDeleted: 'is_deleted',
            rowHash: 'dimsync_row_hash',
            batchId: 'dimsync_batch_id',
          },
        },
      ],
    })
  })

  it('returns a deeply frozen spec', () => {
    const project = parseProject(withTable('key: [a, b]'), CONFIG)
    expect(Object.isFrozen(project)).toBe(true)
    expect(Object.isFrozen(project.warehouse)).toBe(true)
    expect(Object.isFrozen(project.tables)).toBe(true)
    expect(Object.isFrozen(project.tables[0]!.key)).toBe(true)
    expect(Object.isFrozen(project.tables[0]!.columns)).toBe(true)
    expect(() => (project.tables[0]!.key as string[]).push('c')).toThrow(TypeError)
  })

  it('makes a relative config path absolute and resolves store paths against its folder', () => {
    const text = withTable(
      'key: id',
      'warehouse: { path: ../wh/dim.duckdb, schema: history }\nstaging: { path: /data/staging }\nstate: {}\n',
    )
    const project = parseProject(text, 'conf/dimsync.yaml')
    expect(project.configPath).toBe(`${process.cwd()}/conf/dimsync.yaml`)
    expect(project.baseDir).toBe(`${process.cwd()}/conf`)
    expect(project.warehouse).toEqual({
      type: 'duckdb',
      path: `${process.cwd()}/wh/dim.duckdb`,
      schema: 'history',
    })
    expect(project.staging.path).toBe('/data/staging')
    expect(project.state.path).toBe(`${process.cwd()}/conf/.dimsync/state`)
  })

  it('reads a BigQuery warehouse: project, dataset (also the schema), location, credentials secret', () => {
    const top =
      'warehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU, credentials_secret: dimsync/bq }\n'
    expect(parseProject(withTable('key: id', top), CONFIG).warehouse).toEqual({
      type: 'bigquery',
      project: 'acme-dw',
      dataset: 'history',
      schema: 'history',
      location: 'EU',
      credentialsSecret: 'dimsync/bq',
    })
  })

  it('reads warehouse.allow_partition_expiration, the opt-in to merging into dimensions whose partitions expire', () => {
    const top =
      'warehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU, allow_partition_expiration: true }\n'
    expect(parseProject(withTable('key: id', top), CONFIG).warehouse).toMatchObject({
      type: 'bigquery',
      allowPartitionExpiration: true,
    })
  })

  it('keeps the DuckDB in-memory database name as is', () => {
    const warehouse = parseProject(
      withTable('key: id', "warehouse: { path: ':memory:' }\n"),
      CONFIG,
    ).warehouse
    expect(warehouse.type === 'duckdb' && warehouse.path).toBe(':memory:')
  })

  it('accepts empty optional sections', () => {
    const project = parseProject(withTable('key: id', 'warehouse:\nstaging:\nstate:\ndefaults:\n'), CONFIG)
    expect(project.warehouse.schema).toBe('main')
    expect(project.tables[0]!.deletes).toBe('ignore')
  })

  it('resolves a plain object the same way (resolveProject is the pure core)', () => {
    const project = resolveProject(
      { version: 1, tables: [{ name: 'c', source: { type: 'file', path: 'c.parquet' }, key: 'id' }] },
      CONFIG,
    )
    expect(project.tables[0]!.source).toEqual({
      type: 'file',
      path: 'c.parquet',
      format: 'parquet',
      csv: { delimiter: ',', header: true },
    })
  })
})

describe('parseProject: table options', () => {
  it('resolves every option written out', () => {
    const table = firstTable(
      withTable(`
target: customer_history
key: [tenant_id, customer_id]
extract: { mode: incremental, cursor: updated_at, lookback_minutes: 15 }
valid_from: { column: updated_at }
tracked: [name, region]
exclude: [password_hash]
deletes: invalidate
max_delete_share: 0.2
open_end: '9999-12-31T23:59:59Z'
soft_delete_column: deleted_at
`),
    )
    expect(table).toMatchObject({
      target: 'customer_history',
      key: ['tenant_id', 'customer_id'],
      extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 15 },
      validFrom: { kind: 'column', column: 'updated_at' },
      tracked: { kind: 'list', columns: ['name', 'region'] },
      exclude: ['password_hash'],
      deletes: 'invalidate',
      maxDeleteShare: 0.2,
      openEnd: '9999-12-31T23:59:59.000Z',
      softDeleteColumn: 'deleted_at',
    })
  })

  it('accepts { mode: full }, a lookback default of 0 and tracked all_except', () => {
    expect(firstTable(withTable('key: id\nextract: { mode: full }')).extract).toEqual({ mode: 'full' })
    expect(firstTable(withTable('key: id\nextract: { mode: incremental, cursor: ts }')).extract).toEqual({
      mode: 'incremental',
      cursor: 'ts',
      lookbackMinutes: 0,
    })
    expect(firstTable(withTable('key: id\ntracked: { all_except: [login_count] }')).tracked).toEqual({
      kind: 'all_except',
      columns: ['login_count'],
    })
  })

  it('keeps composite keys in order', () => {
    expect(firstTable(withTable('key: [region, customer_id, valid_date]')).key).toEqual([
      'region',
      'customer_id',
      'valid_date',
    ])
  })

  it('normalizes open_end sentinels to ISO UTC', () => {
    expect(firstTable(withTable("key: id\nopen_end: '9999-12-31'")).openEnd).toBe('9999-12-31T00:00:00.000Z')
    expect(firstTable(withTable('key: id\nopen_end: 9999-12-31T23:59:59+01:00')).openEnd).toBe(
      '9999-12-31T22:59:59.000Z',
    )
    expect(firstTable(withTable('key: id\nopen_end: ~')).openEnd).toBeNull()
  })

  it('builds database sources from url_env and a table or a query', () => {
    const text = `version: 1
tables:
  - name: a
    source: { type: postgres, url_env: PG_URL, table: public.customers }
    key: id
  - name: b
    source: { type: mysql, url_env: MYSQL_URL, query: 'SELECT id, name FROM b' }
    key: id
`
    const project = parseProject(text, CONFIG)
    expect(project.tables[0]!.source).toStrictEqual({
      type: 'postgres',
      urlEnv: 'PG_URL',
      table: 'public.customers',
    })
    expect(project.tables[1]!.source).toStrictEqual({
      type: 'mysql',
      urlEnv: 'MYSQL_URL',
      query: 'SELECT id, name FROM b',
    })
  })

  it('reads the database source options chunks and statement_timeout_seconds', () => {
    const text = `version: 1
tables:
  - name: a
    source: { type: postgres, url_env: PG_URL, table: public.customers, chunks: 4, statement_timeout_seconds: 600 }
    key: id
`
    expect(parseProject(text, CONFIG).tables[0]!.source).toStrictEqual({
      type: 'postgres',
      urlEnv: 'PG_URL',
      table: 'public.customers',
      chunks: 4,
      statementTimeoutSeconds: 600,
    })
  })

  it('reads csv options and an explicit format', () => {
    const text = `version: 1
tables:
  - name: a
    source: { type: file, path: 'exports/*.txt', format: csv, delimiter: "\\t", header: false }
    key: id
`
    expect(parseProject(text, CONFIG).tables[0]!.source).toEqual({
      type: 'file',
      path: 'exports/*.txt',
      format: 'csv',
      csv: { delimiter: '\t', header: false },
    })
  })

  it('lets tables share settings through YAML anchors and merge keys', () => {
    const text = `version: 1
tables:
  - &base
    name: a
    source: { type: file, path: a.csv }
    key: id
    deletes: new_record
  - <<: *base
    name: b
`
    const project = parseProject(text, CONFIG)
    expect(project.tables.map((t) => [t.name, t.deletes])).toEqual([
      ['a', 'new_record'],
      ['b', 'new_record'],
    ])
  })
})

describe('parseProject: defaults section', () => {
  const defaults = `defaults:
  deletes: invalidate
  columns: dbt
  open_end: '9999-12-31T23:59:59Z'
  max_delete_share: 0.1
  exclude: [etl_loaded_at]
`
  it('applies defaults where a table sets nothing, and the table value where it does', () => {
    const text = `version: 1
${defaults}tables:
  - name: a
    source: { type: file, path: a.csv }
    key: id
  - name: b
    source: { type: file, path: b.csv }
    key: id
    deletes: new_record
    columns: databricks
    open_end: null
    exclude: []
`
    const [a, b] = parseProject(text, CONFIG).tables
    expect(a).toMatchObject({
      deletes: 'invalidate',
      columns: COLUMN_PRESETS.dbt,
      openEnd: '9999-12-31T23:59:59.000Z',
      maxDeleteShare: 0.1,
      exclude: ['etl_loaded_at'],
    })
    expect(b).toMatchObject({
      deletes: 'new_record',
      columns: COLUMN_PRESETS.databricks,
      openEnd: null,
      maxDeleteShare: 0.1,
      exclude: [],
    })
  })

  it('lets a table clear an inherited soft_delete_column with null', () => {
    const text = withTable(
      'key: id\nsoft_delete_column: null',
      'defaults: { soft_delete_column: deleted_at }\n',
    )
    expect(firstTable(text)).not.toHaveProperty('softDeleteColumn')
    expect(
      firstTable(withTable('key: id', 'defaults: { soft_delete_column: deleted_at }\n')).softDeleteColumn,
    ).toBe('deleted_at')
  })

  it('builds a preset-less column override on the defaults columns', () => {
    const table = firstTable(
      withTable('key: id\ncolumns: { valid_to: ended_at }', 'defaults: { columns: fivetran }\n'),
    )
    expect(table.columns).toEqual({ ...COLUMN_PRESETS.fivetran, validTo: 'ended_at' })
  })
})

describe('parseProject: metadata column presets', () => {
  it.each([
    [
      'dimsync',
      [
        'dimsync_sk',
        'valid_from',
        'valid_to',
        'is_current',
        'is_deleted',
        'dimsync_row_hash',
        'dimsync_batch_id',
      ],
    ],
    [
      'dbt',
      [
        'dbt_sk',
        'dbt_valid_from',
        'dbt_valid_to',
        'dbt_is_current',
        'dbt_deleted',
        'dbt_row_hash',
        'dbt_batch_id',
      ],
    ],
    [
      'fivetran',
      [
        '_fivetran_sk',
        '_fivetran_start',
        '_fivetran_end',
        '_fivetran_active',
        '_fivetran_deleted',
        '_fivetran_row_hash',
        '_fivetran_batch_id',
      ],
    ],
    [
      'databricks',
      ['__dimsync_sk', '__START_AT', '__END_AT', '__IS_CURRENT', '__IS_DELETED', '__ROW_HASH', '__BATCH_ID'],
    ],
  ])('preset %s', (preset, names) => {
    const [surrogateKey, validFrom, validTo, isCurrent, isDeleted, rowHash, batchId] = names
    expect(firstTable(withTable(`key: id\ncolumns: ${preset}`)).columns).toStrictEqual({
      surrogateKey,
      validFrom,
      validTo,
      isCurrent,
      isDeleted,
      rowHash,
      batchId,
    })
  })

  it('overrides single names on top of a preset', () => {
    const table = firstTable(
      withTable(
        'key: id\ncolumns: { preset: dbt, valid_to: my_to, surrogate_key: customer_sk, batch_id: load_id }',
      ),
    )
    expect(table.columns).toStrictEqual({
      ...COLUMN_PRESETS.dbt,
      validTo: 'my_to',
      surrogateKey: 'customer_sk',
      batchId: 'load_id',
    })
  })

  it('overrides on the dimsync preset when no preset is named', () => {
    expect(firstTable(withTable('key: id\ncolumns: { is_deleted: removed }')).columns).toStrictEqual({
      ...COLUMN_PRESETS.dimsync,
      isDeleted: 'removed',
    })
  })
})
