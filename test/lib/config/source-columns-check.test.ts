import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../../lib/core/errors.ts'
import { parseProject } from '../../../lib/config/parse-project.ts'
import {
  assertTableMatchesSource,
  checkTableAgainstSource,
} from '../../../lib/config/source-columns-check.ts'

const CONFIG = '/projects/shop/dimsync.yaml'

const project = parseProject(
  `version: 1
tables:
  - name: orders
    source: { type: file, path: orders.csv }
    key: order_id
  - name: customers
    source: { type: postgres, url_env: PG_URL, table: public.customers }
    key: [tenant_id, custmer_id]
    tracked: [Name, region, segmnt]
    exclude: [password_hash, pwd_salt]
    extract: { mode: incremental, cursor: updatedat, lookback_minutes: 5 }
    valid_from: { column: changedat }
    soft_delete_column: deleted_on
  - name: products
    source: { type: file, path: p.parquet }
    key: sku
    tracked: { all_except: [views] }
    columns: dbt
`,
  CONFIG,
)

const CUSTOMER_COLUMNS = [
  'tenant_id',
  'customer_id',
  'name',
  'region',
  'segment',
  'password_hash',
  'updated_at',
  'changed_at',
  'deleted_at',
]

describe('checkTableAgainstSource', () => {
  it('accepts a table whose columns are all in the source', () => {
    expect(checkTableAgainstSource(project, 0, ['order_id', 'amount'])).toEqual([])
  })

  it('reports every missing column with a suggestion, case included', () => {
    expect(checkTableAgainstSource(project, 1, CUSTOMER_COLUMNS)).toEqual([
      'tables[1].key[1]: column "custmer_id" is not in the source; did you mean "customer_id"?',
      'tables[1].tracked[0]: column "Name" is not in the source; did you mean "name"?',
      'tables[1].tracked[2]: column "segmnt" is not in the source; did you mean "segment"?',
      'tables[1].exclude[1]: column "pwd_salt" is not in the source',
      'tables[1].extract.cursor: column "updatedat" is not in the source; did you mean "updated_at"?',
      'tables[1].valid_from.column: column "changedat" is not in the source; did you mean "changed_at"?',
      'tables[1].soft_delete_column: column "deleted_on" is not in the source; did you mean "deleted_at"?',
    ])
  })

  it('checks all_except columns and refuses stored source columns named like a metadata column', () => {
    expect(checkTableAgainstSource(project, 2, ['sku', 'view', 'DBT_VALID_FROM', 'dbt_is_current'])).toEqual([
      'tables[2].tracked.all_except[0]: column "views" is not in the source; did you mean "view"?',
      'tables[2]: source column "DBT_VALID_FROM" has the name of the valid_from metadata column; rename the metadata column with columns: { valid_from: <other name> }',
      'tables[2]: source column "dbt_is_current" has the name of the is_current metadata column; rename the metadata column with columns: { is_current: <other name> }',
    ])
  })

  it('refuses an index outside the project', () => {
    expect(() => checkTableAgainstSource(project, 3, [])).toThrow(RangeError)
  })
})

describe('assertTableMatchesSource', () => {
  it('throws a ConfigError about the config file listing every issue', () => {
    let caught: unknown
    try {
      assertTableMatchesSource(project, 0, ['orderid'])
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(ConfigError)
    expect((caught as ConfigError).file).toBe(CONFIG)
    expect((caught as ConfigError).issues).toEqual([
      'tables[0].key[0]: column "order_id" is not in the source; did you mean "orderid"?',
    ])
  })

  it('passes silently when the table matches', () => {
    expect(assertTableMatchesSource(project, 0, ['order_id'])).toBeUndefined()
  })
})

describe('change_detection against the source', () => {
  it('names a version column the source does not have, with the closest one', () => {
    const versioned = parseProject(
      `version: 1
tables:
  - name: items
    source: { type: file, path: items.csv }
    key: id
    change_detection: { version_column: updatedat }
`,
      CONFIG,
    )
    expect(checkTableAgainstSource(versioned, 0, ['id', 'name', 'updated_at'])).toEqual([
      expect.stringMatching(
        /^tables\[0\]\.change_detection\.version_column: column "updatedat" is not in the source.*updated_at/,
      ),
    ])
    expect(checkTableAgainstSource(versioned, 0, ['id', 'name', 'updatedat'])).toEqual([])
  })
})
