import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

function specOf(lines: string) {
  return parseProject(oneTableYaml(lines), CONFIG_PATH).tables[0]!
}

const NEW_ONLY = 'source: { type: file, path: s3://exports/customers/*.parquet, files: new_only }'

describe('source.files: all | new_only', () => {
  it('is absent (every file, one snapshot) unless set; new_only is kept with an s3:// path', () => {
    expect(specOf('source: { type: file, path: data/*.csv }\nkey: id').source).not.toHaveProperty('files')
    expect(specOf(`${NEW_ONLY}\nkey: id`).source).toMatchObject({
      type: 'file',
      path: 's3://exports/customers/*.parquet',
      format: 'parquet',
      files: 'new_only',
    })
  })

  it('a new-files snapshot table deletes nothing by absence: deletes other than ignore need a soft delete column', () => {
    expect(specOf(`${NEW_ONLY}\nkey: id`).deletes).toBe('ignore')
    expect(specOf(`${NEW_ONLY}\nkey: id\nmode: mirror`).deletes).toBe('ignore')
    const issues = configIssues(oneTableYaml(`${NEW_ONLY}\nkey: id\ndeletes: invalidate`))
    expect(issues).toEqual([expect.stringMatching(/deletes: .*invalidate.* needs every file read.*new_only/)])
    expect(specOf(`${NEW_ONLY}\nkey: id\ndeletes: invalidate\nsoft_delete_column: gone`).deletes).toBe(
      'invalidate',
    )
  })

  it('a change feed of new files keeps its delete events', () => {
    const spec = specOf(`${NEW_ONLY}\nkey: id\nextract: { mode: changes }\nvalid_from: { column: ts }`)
    expect(spec.deletes).toBe('invalidate')
    expect(spec.changes).toBeDefined()
  })

  it('an unknown value is refused naming the choices', () => {
    const issues = configIssues(
      oneTableYaml('source: { type: file, path: data/*.csv, files: newest }\nkey: id'),
    )
    expect(issues).toEqual([expect.stringMatching(/files.*all.*new_only/)])
  })

  it('an s3:// path that names no objects is refused at config time, so validate and deploy say so', () => {
    for (const [path, bucket] of [
      ['s3://exports', 'exports'],
      ['s3://exports/customers/', 'exports'],
      ['s3:///customers.csv', 'bucket'],
    ]) {
      expect(
        configIssues(oneTableYaml(`source: { type: file, path: '${path}', format: csv }\nkey: id`)),
      ).toEqual([
        `tables[0].source.path: ${path} names no objects; write s3://<bucket>/<key or glob>, for example s3://${bucket}/exports/*.parquet`,
      ])
    }
  })
})
