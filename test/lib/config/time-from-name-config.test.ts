import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

const source = (options: string) => `source: { type: file, path: exports/*.csv, ${options} }\nkey: id`

describe('source.time_from_name', () => {
  it('is kept for a table that reads new files only', () => {
    const table = parseProject(
      oneTableYaml(source("files: new_only, time_from_name: 'customers_%Y-%m-%d.csv'")),
      CONFIG_PATH,
    ).tables[0]!
    expect(table.source).toMatchObject({ files: 'new_only', timeFromName: 'customers_%Y-%m-%d.csv' })
  })

  it('is refused without files: new_only, and when the pattern reads no year, naming the field', () => {
    expect(configIssues(oneTableYaml(source("time_from_name: 'customers_%Y-%m-%d.csv'")))).toEqual([
      expect.stringMatching(
        /tables\[0\]\.source\.time_from_name: orders the new files of files: new_only; .*dimsync backfill --time-from-name/,
      ),
    ])
    expect(
      configIssues(oneTableYaml(source("files: new_only, time_from_name: 'customers_%m-%d.csv'"))),
    ).toEqual([
      expect.stringMatching(
        /tables\[0\]\.source\.time_from_name: pattern "customers_%m-%d\.csv" must contain %Y/,
      ),
    ])
  })
})
