import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

const CONFIG = CONFIG_PATH
const project = (body: string) =>
  oneTableYaml(`source: { type: file, path: data/customers.csv }\nkey: id\n${body}`)
const issuesOf = configIssues

describe('keep_first (type 0), previous_value (type 3), current_value (type 6)', () => {
  it('resolves the three lists; a table without them has no policies', () => {
    const spec = parseProject(
      project('keep_first: [born]\nprevious_value: [region]\ncurrent_value: [region, segment]'),
      CONFIG,
    ).tables[0]!
    expect(spec.policies).toEqual({
      keepFirst: ['born'],
      previousValue: ['region'],
      currentValue: ['region', 'segment'],
    })
    expect(parseProject(project(''), CONFIG).tables[0]!.policies).toBeUndefined()
  })

  it('refuses, naming the column: a key, an excluded column, a tracked keep_first, a keep_first with a previous or current value, an untracked previous value, a duplicate', () => {
    expect(
      issuesOf(
        project(
          'tracked: [region, born]\nexclude: [secret]\nkeep_first: [id, born, secret]\n' +
            'previous_value: [segment, born]\ncurrent_value: [born, region, REGION]',
        ),
      ),
    ).toEqual([
      'tables[0].keep_first[0]: key column "id" identifies the entity; it has no column policy',
      'tables[0].keep_first[1]: "born" is tracked; a keep_first column never opens versions (leave it out of tracked)',
      'tables[0].keep_first[2]: "secret" is in exclude, so it is not stored',
      'tables[0].previous_value[0]: "segment" is not tracked: previous_value needs a tracked column, whose versions hold the values before its last change',
      'tables[0].previous_value[1]: "born" is in keep_first: it never changes, so it has no previous value',
      'tables[0].current_value[2]: duplicate column "REGION" (also tables[0].current_value[1])',
      'tables[0].current_value[0]: "born" is in keep_first: it never changes, so it has no current value',
    ])
  })

  it('a column left out of tracked by all_except has no previous value; policies apply to history tables only', () => {
    expect(issuesOf(project('tracked: { all_except: [segment] }\nprevious_value: [segment]'))).toEqual([
      'tables[0].previous_value[0]: "segment" is not tracked: previous_value needs a tracked column, whose versions hold the values before its last change',
    ])
    expect(issuesOf(project('mode: mirror\ncurrent_value: [region]'))).toEqual([
      'tables[0].current_value: only applies to mode history (this table is mode mirror)',
    ])
  })
})
