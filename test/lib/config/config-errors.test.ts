import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../../lib/core/errors.ts'
import { parseProject } from '../../../lib/config/parse-project.ts'

const CONFIG = '/projects/shop/dimsync.yaml'

function issuesOf(text: string): readonly string[] {
  try {
    parseProject(text, CONFIG)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).file).toBe(CONFIG)
    return (error as ConfigError).issues
  }
  throw new Error('expected a ConfigError')
}

function withTable(table: string, top = ''): string {
  return `version: 1\n${top}tables:\n  - name: customers\n    source: { type: file, path: data/customers.csv }\n${table
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => `    ${line}`)
    .join('\n')}\n`
}

describe('document level', () => {
  it('names an empty file and a non-mapping document', () => {
    expect(issuesOf('')).toEqual(['(root): the file is empty; expected a mapping with version and tables'])
    expect(issuesOf('- a\n')).toEqual(['(root): must be a mapping with version and tables (got a list)'])
  })

  it('requires version 1 and at least one table', () => {
    expect(issuesOf('tables: []\n')).toEqual(['version: is required', 'tables: must not be empty'])
    expect(issuesOf('version: 2\n')).toEqual(['version: must be 1 (got 2)', 'tables: is required'])
    expect(issuesOf("version: '1'\ntables: {}\n")).toEqual([
      'version: must be 1 (got "1")',
      'tables: must be a list of tables (got a mapping)',
    ])
  })

  it('reports unknown top-level keys with a suggestion, first', () => {
    expect(issuesOf(withTable('key: id', 'wharehouse: {}\ntabels: []\n'))).toEqual([
      '(root): unknown key "wharehouse"; did you mean "warehouse"?',
      '(root): unknown key "tabels"; did you mean "tables"?',
    ])
  })

  it('checks the warehouse, staging and state sections', () => {
    const top =
      'warehouse: { type: duckdbb, schema: my-schema, pth: x }\nstaging: { type: s3 }\nstate: { path: "" }\n'
    expect(issuesOf(withTable('key: id', top))).toEqual([
      'warehouse.type: must be one of duckdb, bigquery, postgres (got "duckdbb"); did you mean "duckdb"?',
      'warehouse.schema: must be a schema name (letters, digits and _, not starting with a digit) (got "my-schema")',
      'warehouse: unknown key "pth"; did you mean "path"?',
      'staging.type: must be one of local (got "s3")',
      'state.path: must be a folder path (got "")',
    ])
  })
})

describe('BigQuery warehouse section', () => {
  it('names each missing or malformed BigQuery setting', () => {
    const top = 'warehouse: { type: bigquery, project: Acme_DW, dataset: my-data, pth: x }\n'
    expect(issuesOf(withTable('key: id', top))).toEqual([
      'warehouse.project: must be a Google Cloud project id (my-project-123) (got "Acme_DW")',
      'warehouse.dataset: must be a dataset name (letters, digits and _, not starting with a digit) (got "my-data")',
      'warehouse.location: is required',
      'warehouse: unknown key "pth"',
    ])
  })

  it('refuses a service-account key and keyless auth together before anything opens the warehouse', () => {
    const top =
      'warehouse:\n  type: bigquery\n  project: acme-dw\n  dataset: history\n  location: EU\n' +
      '  credentials_secret: dimsync/bigquery-key\n' +
      '  workload_identity: { audience: //iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/aws/providers/dimsync }\n'
    expect(issuesOf(withTable('key: id', top))).toEqual([
      'warehouse: set either credentials_secret (a service-account key) or workload_identity (keyless auth from ' +
        "the functions' AWS role), not both",
    ])
  })
})

describe('PostgreSQL warehouse section', () => {
  it('reads the URL from the variable url_env names, never from the file, and defaults the schema to public', () => {
    const project = parseProject(
      withTable('key: id', 'warehouse: { type: postgres, url_env: DW_URL }\n'),
      CONFIG,
    )
    expect(project.warehouse).toEqual({ type: 'postgres', urlEnv: 'DW_URL', schema: 'public' })
    const named = parseProject(
      withTable('key: id', 'warehouse: { type: postgres, url_env: DW_URL, schema: history }\n'),
      CONFIG,
    )
    expect(named.warehouse).toEqual({ type: 'postgres', urlEnv: 'DW_URL', schema: 'history' })
  })

  it('names a missing or malformed setting, and refuses a URL written in the file', () => {
    const top = 'warehouse: { type: postgres, schema: my-schema, url: "postgres://u:secret@db/x" }\n'
    expect(issuesOf(withTable('key: id', top))).toEqual([
      'warehouse.url_env: is required',
      'warehouse.schema: must be a schema name (letters, digits and _, not starting with a digit) (got "my-schema")',
      'warehouse: unknown key "url"',
    ])
    expect(issuesOf(withTable('key: id', 'warehouse: { type: postgres, url_env: "DW-URL" }\n'))).toEqual([
      'warehouse.url_env: must be an environment variable name (DIMSYNC_PG_URL) (got "DW-URL")',
    ])
  })
})

describe('table fields', () => {
  it('requires name, source and key', () => {
    expect(issuesOf('version: 1\ntables:\n  - target: x\n')).toEqual([
      'tables[0].name: is required',
      'tables[0].source: is required',
      'tables[0].key: is required',
    ])
  })

  it('checks the table name pattern', () => {
    expect(issuesOf(withTable('key: id').replace('name: customers', 'name: Customers'))).toEqual([
      'tables[0].name: must be a table name: a-z, 0-9 and _, starting with a letter, at most 63 characters (got "Customers")',
    ])
  })

  it('reports duplicate table names and targets', () => {
    const text = `version: 1
tables:
  - { name: customers, source: { type: file, path: a.csv }, key: id }
  - { name: orders, source: { type: file, path: b.csv }, key: id, target: DIM_CUSTOMERS }
  - { name: customers, source: { type: file, path: c.csv }, key: id, target: dim_c2 }
`
    expect(issuesOf(text)).toEqual([
      'tables[1].target: duplicate target "DIM_CUSTOMERS" (also tables[0])',
      'tables[2].name: duplicate table name "customers" (also tables[0])',
    ])
  })

  it('reports unknown table keys with a suggestion', () => {
    expect(issuesOf(withTable('key: id\ntrackd: [name]\nfoo: 1'))).toEqual([
      'tables[0]: unknown key "trackd"; did you mean "tracked"?',
      'tables[0]: unknown key "foo"',
    ])
  })

  it('checks identifiers: key, tracked, exclude, target', () => {
    expect(
      issuesOf(withTable('key: [id, first-name]\ntracked: ["1st"]\nexclude: [a b]\ntarget: dim.x')),
    ).toEqual([
      'tables[0].target: must be a table name (letters, digits and _, not starting with a digit, at most 128 characters) (got "dim.x")',
      'tables[0].key[1]: must be a column name (letters, digits and _, not starting with a digit) (got "first-name")',
      'tables[0].tracked[0]: must be a column name (letters, digits and _, not starting with a digit) (got "1st")',
      'tables[0].exclude[0]: must be a column name (letters, digits and _, not starting with a digit) (got "a b")',
    ])
  })

  it('rejects empty, duplicate and wrongly typed keys', () => {
    expect(issuesOf(withTable('key: []'))).toEqual(['tables[0].key: must not be empty'])
    expect(issuesOf(withTable('key: 5'))).toEqual([
      'tables[0].key: must be a column name or a non-empty list of column names (got 5)',
    ])
    expect(issuesOf(withTable('key: [id, 5]'))).toEqual([
      'tables[0].key[1]: must be a column name (letters, digits and _, not starting with a digit) (got 5)',
    ])
    expect(issuesOf(withTable('key: [tenant, id, ID]'))).toEqual([
      'tables[0].key[2]: duplicate column "ID" (also tables[0].key[1])',
    ])
  })

  it('checks enums with the offending value', () => {
    expect(issuesOf(withTable('key: id\ndeletes: delete'))).toEqual([
      'tables[0].deletes: must be one of ignore, invalidate, new_record (got "delete")',
    ])
    expect(issuesOf(withTable('key: id\ndeletes: invalidat'))).toEqual([
      'tables[0].deletes: must be one of ignore, invalidate, new_record (got "invalidat"); did you mean "invalidate"?',
    ])
    expect(issuesOf(withTable('key: id\ncolumns: dbtt'))).toEqual([
      'tables[0].columns: must be a preset (dimsync, dbt, fivetran, databricks) or a mapping like { preset: dbt, valid_to: my_valid_to } (got "dbtt"); did you mean "dbt"?',
    ])
  })

  it('checks extract forms', () => {
    expect(issuesOf(withTable('key: id\nextract: incremental'))).toEqual([
      'tables[0].extract: must be "full" or a mapping { mode: incremental, cursor: <column> } or { mode: changes } (got "incremental": an incremental extract needs a cursor column)',
    ])
    expect(issuesOf(withTable('key: id\nextract: ful'))).toEqual([
      'tables[0].extract: must be "full" or a mapping { mode: incremental, cursor: <column> } or { mode: changes } (got "ful"); did you mean "full"?',
    ])
    expect(issuesOf(withTable('key: id\nextract: { mode: incremental }'))).toEqual([
      'tables[0].extract.cursor: is required',
    ])
    expect(issuesOf(withTable('key: id\nextract: { mode: incrementl, cursor: ts }'))).toEqual([
      'tables[0].extract.mode: must be one of full, incremental, changes (got "incrementl"); did you mean "incremental"?',
    ])
    expect(
      issuesOf(
        withTable('key: id\nextract: { mode: incremental, cursor: ts, lookback_minutes: 1.5, lookback: 3 }'),
      ),
    ).toEqual([
      'tables[0].extract.lookback_minutes: must be a whole number of minutes, 0 or more (got 1.5)',
      'tables[0].extract: unknown key "lookback"',
    ])
  })

  it('checks valid_from, tracked and columns forms', () => {
    expect(issuesOf(withTable('key: id\nvalid_from: updated_at'))).toEqual([
      'tables[0].valid_from: must be "extracted_at" or a mapping { column: <column> } (got "updated_at")',
    ])
    expect(issuesOf(withTable('key: id\nvalid_from: { colum: updated_at }'))).toEqual([
      'tables[0].valid_from.column: is required',
      'tables[0].valid_from: unknown key "colum"; did you mean "column"?',
    ])
    expect(issuesOf(withTable('key: id\ntracked: []'))).toEqual(
      ['tracked: must not be empty'].map((m) => `tables[0].${m}`),
    )
    expect(issuesOf(withTable('key: id\ntracked: { all_exept: [a] }'))).toEqual([
      'tables[0].tracked.all_except: is required',
      'tables[0].tracked: unknown key "all_exept"; did you mean "all_except"?',
    ])
    expect(issuesOf(withTable('key: id\ncolumns: { preset: dbt, validto: x }'))).toEqual([
      'tables[0].columns: unknown key "validto"; did you mean "valid_to"?',
    ])
    expect(issuesOf(withTable('key: id\ncolumns: { preset: scd }'))).toEqual([
      'tables[0].columns.preset: must be one of dimsync, dbt, fivetran, databricks (got "scd")',
    ])
  })

  it('checks max_delete_share and open_end', () => {
    for (const share of ['0', '1.5', '-0.1', "'half'"]) {
      expect(issuesOf(withTable(`key: id\nmax_delete_share: ${share}`))).toEqual([
        `tables[0].max_delete_share: must be a number greater than 0 and at most 1 (got ${share.replaceAll("'", '"')})`,
      ])
    }
    expect(firstIssue(withTable("key: id\nopen_end: '2099-12-31T00:00:00Z'"))).toBe(
      'tables[0].open_end: must be after 2100-01-01 (got "2099-12-31T00:00:00Z"): a sentinel that close could be mistaken for a real end date',
    )
    expect(firstIssue(withTable("key: id\nopen_end: '9999-02-30'"))).toBe(
      'tables[0].open_end: "9999-02-30" is not a valid date/time',
    )
    expect(firstIssue(withTable("key: id\nopen_end: '9999-12-31 23:59:59'"))).toBe(
      `tables[0].open_end: must be null or an ISO timestamp with a time zone, like '9999-12-31T23:59:59Z' (got "9999-12-31 23:59:59")`,
    )
    expect(firstIssue(withTable("key: id\nopen_end: '9999-12-31T23:59:59'"))).toBe(
      `tables[0].open_end: must be null or an ISO timestamp with a time zone, like '9999-12-31T23:59:59Z' (got "9999-12-31T23:59:59")`,
    )
  })
})

function firstIssue(text: string): string | undefined {
  return issuesOf(text)[0]
}

describe('sources', () => {
  const source = (yaml: string) => `version: 1\ntables:\n  - name: a\n    key: id\n    source: ${yaml}\n`

  it('checks the source type and its keys', () => {
    expect(issuesOf(source('{ type: s3, path: x }'))).toEqual([
      'tables[0].source.type: must be one of file, postgres, mysql (got "s3")',
    ])
    expect(issuesOf(source('{ path: x.csv }'))).toEqual(['tables[0].source.type: is required'])
    expect(issuesOf(source('data.csv'))).toEqual([
      'tables[0].source: must be a mapping with a type (file, postgres or mysql) (got "data.csv")',
    ])
    expect(issuesOf(source('{ type: file, path: x.csv, url_env: X, delimeter: ";" }'))).toEqual([
      'tables[0].source: unknown key "url_env"',
      'tables[0].source: unknown key "delimeter"; did you mean "delimiter"?',
    ])
  })

  it('infers the file format or asks for it', () => {
    expect(issuesOf(source('{ type: file, path: data/customers.txt }'))).toEqual([
      'tables[0].source.format: cannot infer the format from "data/customers.txt" (expected .csv or .parquet); set format: csv or parquet',
    ])
    expect(issuesOf(source('{ type: file, path: x.csv, format: xml }'))).toEqual([
      'tables[0].source.format: must be one of csv, parquet, json (got "xml")',
    ])
    expect(issuesOf(source('{ type: file, path: x.csv, format: json }'))).toEqual([
      'tables[0].source.format: JSON files are read as Debezium change events only: set extract: { mode: changes, format: debezium }',
    ])
  })

  it('refuses csv options on parquet and bad csv options', () => {
    expect(issuesOf(source('{ type: file, path: x.parquet, delimiter: ";", header: false }'))).toEqual([
      'tables[0].source.delimiter: only applies to csv sources',
      'tables[0].source.header: only applies to csv sources',
    ])
    expect(issuesOf(source('{ type: file, path: x.csv, delimiter: ";;", header: "yes" }'))).toEqual([
      'tables[0].source.delimiter: must be a single character (got ";;")',
      'tables[0].source.header: must be true or false (got "yes")',
    ])
  })

  it('checks the database source options chunks and statement_timeout_seconds', () => {
    expect(
      issuesOf(
        source('{ type: postgres, url_env: DB, table: t, chunks: 0, statement_timeout_seconds: 1.5 }'),
      ),
    ).toEqual([
      'tables[0].source.chunks: must be a whole number from 1 to 64 (got 0)',
      'tables[0].source.statement_timeout_seconds: must be a whole number of seconds, 1 or more (got 1.5)',
    ])
    expect(issuesOf(source('{ type: mysql, url_env: DB, table: t, chunks: 65 }'))).toEqual([
      'tables[0].source.chunks: must be a whole number from 1 to 64 (got 65)',
    ])
  })

  it('checks database sources', () => {
    expect(issuesOf(source('{ type: postgres, url_env: pg_url, table: "public.my-table" }'))).toEqual([
      'tables[0].source.url_env: must be the name of an environment variable (A-Z, 0-9, _) (got "pg_url")',
      'tables[0].source.table: must be a table name, optionally schema-qualified (public.customers) (got "public.my-table")',
    ])
    expect(issuesOf(source('{ type: mysql }'))).toEqual(['tables[0].source.url_env: is required'])
    expect(issuesOf(source('{ type: mysql, url_env: DB }'))).toEqual([
      'tables[0].source: needs exactly one of table or query (got neither)',
    ])
    expect(issuesOf(source('{ type: mysql, url_env: DB, table: t, query: "SELECT 1" }'))).toEqual([
      'tables[0].source: needs exactly one of table or query (got both)',
    ])
    expect(issuesOf(source('{ type: mysql, url_env: DB, path: x.csv }'))).toEqual([
      'tables[0].source: unknown key "path"',
    ])
  })
})

describe('rules across fields', () => {
  it('refuses key columns in tracked and exclude', () => {
    expect(issuesOf(withTable('key: [tenant, id]\ntracked: [name, id]\nexclude: [tenant]'))).toEqual([
      'tables[0].tracked[1]: key column "id" cannot be tracked: the key identifies the entity',
      'tables[0].exclude[0]: key column "tenant" cannot be excluded',
    ])
  })

  it('refuses excluding tracked columns and columns the extract needs', () => {
    const table = `key: id
tracked: [name]
exclude: [name, updated_at, changed_at, deleted_at]
extract: { mode: incremental, cursor: updated_at }
valid_from: { column: changed_at }
soft_delete_column: deleted_at`
    expect(issuesOf(withTable(table))).toEqual([
      'tables[0].exclude[0]: "name" is tracked, so it cannot be excluded',
      'tables[0].extract.cursor: the cursor column "updated_at" is in exclude; it must be extracted',
      'tables[0].valid_from.column: the valid_from column "changed_at" is in exclude; it must be extracted',
      'tables[0].soft_delete_column: the soft delete column "deleted_at" is in exclude; it must be extracted',
    ])
    expect(
      issuesOf(withTable('key: id\ntracked: { all_except: [login_count] }\nexclude: [login_count]')),
    ).toEqual([
      'tables[0].exclude[0]: "login_count" is in tracked.all_except (stored, not tracked), so it cannot also be excluded',
    ])
  })

  it('refuses deletes by absence on incremental extracts unless a soft delete column is set', () => {
    expect(
      issuesOf(withTable('key: id\nextract: { mode: incremental, cursor: ts }\ndeletes: invalidate')),
    ).toEqual([
      'tables[0].deletes: "invalidate" needs a full extract: a row missing from an incremental delta is not deleted (use deletes: ignore, or set soft_delete_column to read deletes from a column)',
    ])
    const inherited = issuesOf(
      withTable('key: id\nextract: { mode: incremental, cursor: ts }', 'defaults: { deletes: new_record }\n'),
    )
    expect(inherited).toEqual([
      'tables[0].deletes: "new_record" needs a full extract: a row missing from an incremental delta is not deleted (use deletes: ignore, or set soft_delete_column to read deletes from a column) (inherited from defaults)',
    ])
    const ok = parseProject(
      withTable(
        'key: id\nextract: { mode: incremental, cursor: ts }\ndeletes: invalidate\nsoft_delete_column: deleted',
      ),
      CONFIG,
    )
    expect(ok.tables[0]!.deletes).toBe('invalidate')
  })

  it('refuses metadata column names that collide with each other', () => {
    expect(issuesOf(withTable('key: id\ncolumns: { valid_to: is_current }'))).toEqual([
      'tables[0].columns.valid_to: "is_current" is already the name of the is_current metadata column',
    ])
    expect(issuesOf(withTable('key: id\ncolumns: { preset: dbt, valid_from: DBT_VALID_TO }'))).toEqual([
      'tables[0].columns.valid_from: "DBT_VALID_TO" is already the name of the valid_to metadata column',
    ])
    expect(issuesOf(withTable('key: id', 'defaults: { columns: { batch_id: valid_from } }\n'))).toEqual([
      'defaults.columns.batch_id: "valid_from" is already the name of the valid_from metadata column',
    ])
  })

  it('refuses source columns named like a metadata column', () => {
    expect(
      issuesOf(withTable('key: valid_from\ntracked: [is_current]\nexclude: [DBT_ROW_HASH]\ncolumns: dbt')),
    ).toEqual([
      'tables[0].exclude[0]: "DBT_ROW_HASH" is also the name of the row_hash metadata column; rename the metadata column with columns: { row_hash: <other name> }',
    ])
    expect(issuesOf(withTable('key: valid_from\nvalid_from: { column: is_current }'))).toEqual([
      'tables[0].key: "valid_from" is also the name of the valid_from metadata column; rename the metadata column with columns: { valid_from: <other name> }',
      'tables[0].valid_from.column: "is_current" is also the name of the is_current metadata column; rename the metadata column with columns: { is_current: <other name> }',
    ])
  })

  it('reports a bad default once, at the defaults path', () => {
    const text = `version: 1
defaults: { exclude: [a, a], open_end: '2000-01-01' }
tables:
  - { name: x, source: { type: file, path: x.csv }, key: id }
  - { name: y, source: { type: file, path: y.csv }, key: id }
`
    expect(issuesOf(text)).toEqual([
      'defaults.exclude[1]: duplicate column "a" (also defaults.exclude[0])',
      'defaults.open_end: must be after 2100-01-01 (got "2000-01-01"): a sentinel that close could be mistaken for a real end date',
    ])
    expect(issuesOf(withTable('key: id', 'defaults: { name: x, deletes: ignore }\n'))).toEqual([
      'defaults: unknown key "name"',
    ])
  })

  it('names inherited values in cross-field messages', () => {
    expect(issuesOf(withTable('key: id', 'defaults: { exclude: [id] }\n'))).toEqual([
      'tables[0].exclude[0]: key column "id" cannot be excluded (inherited from defaults)',
    ])
  })
})

describe('many problems at once', () => {
  it('collects every issue across sections and tables in document order', () => {
    const text = `version: 2
defaults: { deletes: nope }
tables:
  - name: customers
    source: { type: s3, path: x }
    key: [a, 5]
    trackd: [x]
  - name: orders
    source: { type: file, path: orders.csv }
    key: order_id
    tracked: [order_id]
  - name: customers
    source: { type: file, path: c.csv }
    key: id
  - 5
staging: { type: local, path: '' }
`
    expect(issuesOf(text)).toEqual([
      'version: must be 1 (got 2)',
      'staging.path: must be a folder path (got "")',
      'defaults.deletes: must be one of ignore, invalidate, new_record (got "nope")',
      'tables[0].source.type: must be one of file, postgres, mysql (got "s3")',
      'tables[0].key[1]: must be a column name (letters, digits and _, not starting with a digit) (got 5)',
      'tables[0]: unknown key "trackd"; did you mean "tracked"?',
      'tables[2].name: duplicate table name "customers" (also tables[0])',
      'tables[2].target: duplicate target "dim_customers" (also tables[0])',
      'tables[3]: must be a mapping (got 5)',
    ])
  })

  it('still runs the rule checks of valid tables when another table is broken', () => {
    const text = `version: 1
tables:
  - { name: a, source: { type: file, path: a.csv }, key: [1] }
  - { name: b, source: { type: file, path: b.csv }, key: id, exclude: [id] }
`
    expect(issuesOf(text)).toEqual([
      'tables[0].key[0]: must be a column name (letters, digits and _, not starting with a digit) (got 1)',
      'tables[1].exclude[0]: key column "id" cannot be excluded',
    ])
  })

  it('puts every issue in the error message', () => {
    expect(() => parseProject('version: 2\ntables: []\n', CONFIG)).toThrow(
      `${CONFIG}: version: must be 1 (got 2); tables: must not be empty`,
    )
  })
})

describe('YAML syntax', () => {
  it('names line and column of a syntax error', () => {
    expect(issuesOf('version: 1\ntables:\n  - name: a\n   key: b\n')).toEqual([
      '4:1: YAML syntax error: Sequence item without - indicator',
    ])
    const issues = issuesOf('version: 1\ntables:\n  - name: [oops\n    key: id\n')
    expect(issues.length).toBeGreaterThan(0)
    for (const issue of issues) expect(issue).toMatch(/^[3-5]:\d+: YAML syntax error: \S/)
  })

  it('refuses duplicate keys instead of keeping one silently', () => {
    expect(issuesOf('version: 1\nversion: 1\ntables: []\n')).toEqual([
      '2:1: YAML syntax error: Map keys must be unique',
    ])
  })
})
