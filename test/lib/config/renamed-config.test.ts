import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

const project = (body: string) =>
  oneTableYaml(`source: { type: postgres, url_env: SHOP_DB, table: public.customers }\nkey: id\n${body}`)

describe('renamed: { old_name: new_name }', () => {
  it('resolves each pair; a table without it renames nothing', () => {
    expect(
      parseProject(project('renamed: { region: area, tier: level }'), CONFIG_PATH).tables[0]!.renamed,
    ).toEqual([
      { from: 'region', to: 'area' },
      { from: 'tier', to: 'level' },
    ])
    expect(parseProject(project(''), CONFIG_PATH).tables[0]!.renamed).toBeUndefined()
  })

  it('refuses a key column, a chain, two columns to one name, an excluded name and a bad identifier', () => {
    expect(configIssues(project('renamed: { id: customer_id }'))).toEqual([
      'tables[0].renamed.id: key column "id" cannot be renamed: the key identifies the versions; load the table into a new target to change its key',
    ])
    expect(configIssues(project('renamed: { a: b, b: c }'))).toEqual([
      'tables[0].renamed.a: "b" is itself renamed; rename each column once, to its newest name',
    ])
    expect(configIssues(project('renamed: { a: c, b: c }'))).toEqual([
      'tables[0].renamed.b: "a" is renamed to "c" too',
    ])
    expect(configIssues(project('exclude: [c]\nrenamed: { a: c }'))).toEqual([
      'tables[0].renamed.a: "c" is in exclude, so it is not stored',
    ])
    expect(configIssues(project('renamed: { a: "b c" }'))[0]).toMatch(/^tables\[0\]\.renamed/)
  })

  it('refuses tables with a capture log, bitemporal tables and other modes', () => {
    expect(configIssues(project('valid_from: { column: changed_at }\nrenamed: { a: b }'))[0]).toMatch(
      /^tables\[0\]\.renamed: does not apply to a table whose valid_from is a source column/,
    )
    expect(configIssues(project('system_time: true\nrenamed: { a: b }'))).toEqual([
      'tables[0].renamed: does not apply to a bitemporal table (system_time: true): its rows are never rewritten',
    ])
    expect(configIssues(project('mode: mirror\nrenamed: { a: b }'))).toEqual([
      'tables[0].renamed: only applies to mode history (this table is mode mirror)',
    ])
  })
})
