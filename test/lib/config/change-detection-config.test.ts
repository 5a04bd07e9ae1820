import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

const project = (body: string) =>
  oneTableYaml(`source: { type: postgres, url_env: SHOP_DB, table: public.customers }\nkey: id\n${body}`)
const spec = (body: string) => parseProject(project(body), CONFIG_PATH).tables[0]!

describe('change_detection: { version_column, on_same_version }', () => {
  it('resolves the column and the choice (default refuse); a table without it versions by the row hash', () => {
    expect(spec('change_detection: { version_column: updated_at }').changeDetection).toEqual({
      versionColumn: 'updated_at',
      onSameVersion: 'refuse',
    })
    expect(
      spec('change_detection: { version_column: updated_at, on_same_version: overwrite }').changeDetection,
    ).toEqual({ versionColumn: 'updated_at', onSameVersion: 'overwrite' })
    expect(spec('').changeDetection).toBeUndefined()
    // The valid_from column and an incremental extract's cursor may be the version column.
    expect(
      spec('valid_from: { column: updated_at }\nchange_detection: { version_column: updated_at }')
        .changeDetection,
    ).toBeDefined()
    expect(
      spec(
        'extract: { mode: incremental, cursor: updated_at }\nchange_detection: { version_column: updated_at }',
      ).changeDetection,
    ).toBeDefined()
  })

  it('refuses a key, an untracked, excluded or keep_first column, and a misspelled choice', () => {
    expect(configIssues(project('change_detection: { version_column: id }'))).toEqual([
      'tables[0].change_detection.version_column: key column "id" cannot be the version column',
    ])
    expect(
      configIssues(project('tracked: [name]\nchange_detection: { version_column: updated_at }')),
    ).toEqual([
      'tables[0].change_detection.version_column: "updated_at" is not tracked: the version column must be tracked, so that its growth opens a version (add it to tracked)',
    ])
    expect(
      configIssues(
        project('tracked: { all_except: [updated_at] }\nchange_detection: { version_column: updated_at }'),
      ),
    ).toEqual([
      'tables[0].change_detection.version_column: "updated_at" is not tracked: the version column must be tracked, so that its growth opens a version (take it out of tracked.all_except)',
    ])
    expect(
      configIssues(project('exclude: [updated_at]\nchange_detection: { version_column: updated_at }')),
    ).toEqual(['tables[0].change_detection.version_column: "updated_at" is in exclude, so it is not stored'])
    expect(
      configIssues(project('keep_first: [updated_at]\nchange_detection: { version_column: updated_at }')),
    ).toEqual([
      'tables[0].change_detection.version_column: "updated_at" is in keep_first: it never changes, so it cannot decide a new version',
    ])
    expect(
      configIssues(project('change_detection: { version_column: updated_at, on_same_version: replace }'))[0],
    ).toMatch(/^tables\[0\]\.change_detection\.on_same_version: /)
  })

  it('refuses change feeds, partial updates, other modes, and overwrite where versions are never rewritten', () => {
    expect(
      configIssues(
        project(
          'extract: { mode: changes, sequence: seq }\nvalid_from: { column: changed_at }\nchange_detection: { version_column: updated_at }',
        ),
      ),
    ).toEqual([
      'tables[0].change_detection: does not apply to a change feed (extract: { mode: changes }): each event is a change at its own time, ordered by the sequence; leave change_detection out',
    ])
    expect(
      configIssues(
        project(
          'extract: { mode: incremental, cursor: changed_at }\nignore_null_updates: all\nchange_detection: { version_column: updated_at }',
        ),
      ),
    ).toEqual([
      'tables[0].change_detection: does not apply with partial updates (ignore_null_updates, columns_to_update): a row is compared before its unchanged values are filled in',
    ])
    expect(configIssues(project('mode: mirror\nchange_detection: { version_column: updated_at }'))).toEqual([
      'tables[0].change_detection: only applies to mode history (this table is mode mirror)',
    ])
    expect(
      configIssues(
        project(
          'system_time: true\nvalid_from: { column: changed_at }\nchange_detection: { version_column: updated_at, on_same_version: overwrite }',
        ),
      ),
    ).toEqual([
      'tables[0].change_detection.on_same_version: overwrite rewrites a version in place, which a bitemporal table (system_time: true) never does; use refuse',
    ])
    expect(
      configIssues(
        project(
          'current_value: [name]\nchange_detection: { version_column: updated_at, on_same_version: overwrite }',
        ),
      ),
    ).toEqual([
      'tables[0].change_detection.on_same_version: overwrite rewrites a version in place, but previous_value and current_value (name) are derived from the values of versions; use refuse',
    ])
  })
})
