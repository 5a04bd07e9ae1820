import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

const CONFIG = CONFIG_PATH
const FILE = 'source: { type: file, path: data/customers.csv }'
const DATABASE = 'source: { type: postgres, url_env: SHOP_DB, table: public.customers }'

function project(body: string, source = FILE, defaults = ''): string {
  return oneTableYaml(`${source}\nkey: id\n${body}`, defaults)
}

function specOf(body: string, source = FILE, defaults = '') {
  return parseProject(project(body, source, defaults), CONFIG).tables[0]!
}

const issuesOf = configIssues

describe('mode: history | mirror | append', () => {
  it('history is the default and changes nothing else', () => {
    const spec = specOf('')
    expect(spec.mode).toBe('history')
    expect(spec.deletes).toBe('ignore')
    expect(spec.tracked).toEqual({ kind: 'all_except', columns: [] })
  })

  it('a mirror tracks no column; it deletes what a full extract or a soft delete column shows deleted', () => {
    const full = specOf('mode: mirror')
    expect(full).toMatchObject({
      mode: 'mirror',
      deletes: 'invalidate',
      tracked: { kind: 'list', columns: [] },
    })
    expect(specOf('mode: mirror\ndeletes: ignore').deletes).toBe('ignore')
    const delta = 'extract: { mode: incremental, cursor: updated_at }'
    expect(specOf(`mode: mirror\n${delta}`, DATABASE).deletes).toBe('ignore')
    expect(specOf(`mode: mirror\n${delta}\nsoft_delete_column: deleted_at`, DATABASE).deletes).toBe(
      'invalidate',
    )
  })

  it('a mode set in defaults applies to every table; options it has no use for are ignored there, refused on the table', () => {
    const defaults = 'defaults:\n  mode: append\n  tracked: [name]\n  deletes: invalidate\n'
    expect(specOf('', FILE, defaults)).toMatchObject({
      mode: 'append',
      deletes: 'ignore',
      tracked: { kind: 'all_except', columns: [] },
    })
    expect(issuesOf(project('tracked: [name]', FILE, defaults))).toEqual([
      'tables[0].tracked: does not apply to mode append (inherited from defaults): append keeps every row of every ' +
        'extract, valid from its extraction time until the next extract that holds its key (or, for a full ' +
        'extract, until the next extract); leave it out',
    ])
  })

  it('refuses, naming the option: tracked on a mirror, deletes: new_record on a mirror, history options on an append table, a change feed appended', () => {
    expect(issuesOf(project('mode: mirror\ntracked: [name]\ndeletes: new_record'))).toEqual([
      'tables[0].tracked: does not apply to mode mirror: a mirror keeps only the current row of each key, so no ' +
        'column opens versions; leave it out',
      "tables[0].deletes: new_record does not apply to mode mirror: a deleted key's row is removed (use " +
        'invalidate, or ignore to keep it)',
    ])
    const append = issuesOf(
      project(
        'mode: append\ndeletes: invalidate\nsoft_delete_column: gone\nvalid_from: { column: changed_at }',
      ),
    )
    expect(append.map((issue) => issue.split(':')[0])).toEqual([
      'tables[0].deletes',
      'tables[0].soft_delete_column',
      'tables[0].valid_from',
    ])
    expect(issuesOf(project('mode: append\nextract: { mode: changes }'))).toContain(
      'tables[0].extract.mode: a change feed cannot be appended (mode append): its rows are events, not states; ' +
        'use mode history or mirror',
    )
  })

  it('an unknown mode suggests the closest one', () => {
    expect(issuesOf(project('mode: mirrors'))).toEqual([
      'tables[0].mode: must be one of history, mirror, append (got "mirrors"); did you mean "mirror"?',
    ])
  })
})
