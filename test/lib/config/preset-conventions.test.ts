import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { ConfigError } from '../../../lib/core/errors.ts'

const CONFIG = '/projects/shop/dimsync.yaml'

function config(table: string, top = ''): string {
  return `version: 1\n${top}tables:\n  - name: customers\n    source: { type: file, path: data/customers.csv }\n    key: id\n${table
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => `    ${line}`)
    .join('\n')}\n`
}

const table = (text: string, top = '') => parseProject(config(text, top), CONFIG).tables[0]!

function issuesOf(text: string): readonly string[] {
  try {
    parseProject(text, CONFIG)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return (error as ConfigError).issues
  }
  throw new Error('expected a ConfigError')
}

describe("presets bring their tool's conventions, not only its names", () => {
  it('fivetran: ends are their last millisecond and active rows end at 9999-12-31 23:59:59.999', () => {
    const t = table('columns: fivetran')
    expect(t.endStyle).toBe('last_millisecond')
    expect(t.openEnd).toBe('9999-12-31T23:59:59.999Z')
    expect(t.dbtIds).toBeUndefined()
  })

  it('fivetran: an open_end the table sets wins, NULL included', () => {
    expect(table('columns: fivetran\nopen_end: null').openEnd).toBeNull()
    expect(table("columns: fivetran\nopen_end: '9999-12-31'").openEnd).toBe('9999-12-31T00:00:00.000Z')
  })

  it('fivetran: _fivetran_synced; new_record is refused (Fivetran writes no deletion version)', () => {
    expect(table('columns: fivetran').syncedColumn).toBe('_fivetran_synced')
    expect(table('columns: dbt').syncedColumn).toBeUndefined()
    expect(issuesOf(config('columns: fivetran\ndeletes: new_record'))).toEqual([
      "tables[0].deletes: new_record does not apply to the fivetran preset: Fivetran's history mode records a delete by ending the key's last version at the delete time with _fivetran_active = FALSE, and writes no deletion version; use invalidate",
    ])
    expect(table('columns: fivetran\ndeletes: invalidate').deletes).toBe('invalidate')
  })

  it("dbt: dbt_scd_id, dbt_updated_at and the text dbt_is_deleted, dbt's open end (NULL), exclusive ends", () => {
    const t = table('columns: dbt')
    expect(t.dbtIds).toEqual({
      scdId: 'dbt_scd_id',
      updatedAt: 'dbt_updated_at',
      isDeleted: 'dbt_is_deleted',
    })
    expect(t.columns.isDeleted).toBe('dbt_deleted')
    expect(t.columns.surrogateKey).toBe('dbt_sk')
    expect(t.openEnd).toBeNull()
    expect(t.endStyle).toBeUndefined()
  })

  it("dbt: dbt_valid_to_current is open_end (current versions' dbt_valid_to)", () => {
    expect(table("columns: dbt\nopen_end: '9999-12-31'").openEnd).toBe('9999-12-31T00:00:00.000Z')
  })

  it('an override builds on the preset it names, or on the defaults', () => {
    expect(table('columns: { preset: fivetran, valid_to: ended_at }').endStyle).toBe('last_millisecond')
    expect(table('columns: { valid_to: ended_at }', 'defaults:\n  columns: dbt\n').dbtIds).toBeDefined()
    expect(table('columns: { valid_to: ended_at }').dbtIds).toBeUndefined()
    expect(table('columns: dimsync', 'defaults:\n  columns: fivetran\n').endStyle).toBeUndefined()
  })

  it("dbt: a metadata column renamed to one of dbt's own columns, or a source column of that name, is refused", () => {
    expect(issuesOf(config('columns: { preset: dbt, surrogate_key: dbt_scd_id }'))).toEqual([
      'tables[0].columns.surrogate_key: "dbt_scd_id" is a column of its own in the dbt preset (dbt\'s id, start and deletion text of a version); give the surrogate_key metadata column another name',
    ])
    expect(issuesOf(config('columns: dbt\ntracked: [dbt_updated_at]'))).toEqual([
      'tables[0].tracked[0]: "dbt_updated_at" is also the name of a column dbt snapshots have (columns: dbt); rename or exclude the source column',
    ])
  })
})
