import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

const FILE = 'source: { type: file, path: data/customers.csv }'

function project(body: string, defaults = ''): string {
  return oneTableYaml(`${FILE}\nkey: id\n${body}`, defaults)
}

const specOf = (body: string, defaults = '') => parseProject(project(body, defaults), CONFIG_PATH).tables[0]!

describe('system_time: bitemporal history (opt-in per table)', () => {
  it('is off by default; on, the system-time columns are named after the metadata preset', () => {
    expect(specOf('').systemTime).toBeUndefined()
    expect(specOf('system_time: false').systemTime).toBeUndefined()
    expect(specOf('system_time: true').systemTime).toEqual({
      systemFrom: 'system_from',
      systemTo: 'system_to',
    })
    expect(specOf('system_time: true\ncolumns: dbt').systemTime).toEqual({
      systemFrom: 'dbt_system_from',
      systemTo: 'dbt_system_to',
    })
    expect(specOf('system_time: true\ncolumns: fivetran').systemTime).toEqual({
      systemFrom: '_fivetran_system_start',
      systemTo: '_fivetran_system_end',
    })
    expect(specOf('columns: databricks', 'defaults:\n  system_time: true\n').systemTime).toEqual({
      systemFrom: '__SYSTEM_START_AT',
      systemTo: '__SYSTEM_END_AT',
    })
  })

  it('refuses, naming the option: a mirror or an append table, a source column with a system-time name, a non-boolean', () => {
    expect(configIssues(project('system_time: true\nmode: mirror'))).toEqual([
      'tables[0].system_time: does not apply to mode mirror: bitemporal history versions the rows of a history ' +
        'table in system time, and a mirror overwrites and deletes its rows; use mode history',
    ])
    expect(configIssues(project('system_time: true\nmode: append'))).toEqual([
      'tables[0].system_time: does not apply to mode append: bitemporal history versions the rows of a history ' +
        'table in system time, and an append table keeps no versions; use mode history',
    ])
    expect(configIssues(project('system_time: true\ntracked: [system_from]'))).toEqual([
      'tables[0].tracked[0]: "system_from" is also the name of a system-time column of this bitemporal table ' +
        '(system_time: true); rename or exclude the source column',
    ])
    expect(configIssues(project('system_time: yes please'))[0]).toMatch(
      /^tables\[0\]\.system_time: .*true or false/,
    )
  })
})
