import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

const CONFIG = CONFIG_PATH
const project = (body: string) =>
  oneTableYaml(
    `source: { type: postgres, url_env: SHOP_DB, table: public.customers }\nkey: id\nextract: { mode: incremental, cursor: updated_at }\n${body}`,
  )
const issuesOf = configIssues

const spec = (body: string) => parseProject(project(body), CONFIG).tables[0]!

describe('ignore_null_updates and columns_to_update', () => {
  it('resolves all, a list and { except }, and columns_to_update; a table without them has none', () => {
    expect(spec('ignore_null_updates: all').partialUpdates).toEqual({ ignoreNulls: { kind: 'all' } })
    expect(spec('ignore_null_updates: [name]').partialUpdates).toEqual({
      ignoreNulls: { kind: 'list', columns: ['name'] },
    })
    expect(
      spec('ignore_null_updates: { except: [score] }\ncolumns_to_update: [name, score]').partialUpdates,
    ).toEqual({
      ignoreNulls: { kind: 'all_except', columns: ['score'] },
      columnsToUpdate: ['name', 'score'],
    })
    expect(spec('').partialUpdates).toBeUndefined()
  })

  it('refuses a key, an excluded column, a duplicate, an empty list, a misspelled value, and append tables', () => {
    expect(
      issuesOf(
        project('exclude: [secret]\nignore_null_updates: [id, secret]\ncolumns_to_update: [name, NAME]'),
      ),
    ).toEqual([
      'tables[0].ignore_null_updates[0]: key column "id" is never NULL and always identifies the row',
      'tables[0].ignore_null_updates[1]: "secret" is in exclude, so it is not stored',
      'tables[0].columns_to_update[1]: duplicate column "NAME" (also tables[0].columns_to_update[0])',
    ])
    expect(issuesOf(project('columns_to_update: []'))).toEqual([
      'tables[0].columns_to_update: must not be empty',
    ])
    expect(issuesOf(project('ignore_null_updates: any'))).toEqual([
      'tables[0].ignore_null_updates: must be all, a list of column names or a mapping { except: [<column>, ...] } (got "any")',
    ])
    expect(issuesOf(project('mode: append\nignore_null_updates: all'))).toEqual([
      'tables[0].ignore_null_updates: does not apply to mode append: append keeps every row as it is',
    ])
  })
})
