import { describe, expect, it } from 'vitest'
import { parseDeleteCondition } from '../../../lib/config/delete-condition.ts'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

describe('deletes: { when: "<column> = <value>" }', () => {
  it('parses a column compared with true, false, a number or a quoted text', () => {
    expect(parseDeleteCondition('is_deleted = true')).toEqual({
      column: 'is_deleted',
      equals: { kind: 'boolean', value: true },
    })
    expect(parseDeleteCondition(' deleted=FALSE ')).toEqual({
      column: 'deleted',
      equals: { kind: 'boolean', value: false },
    })
    expect(parseDeleteCondition('deleted = -1.5')).toEqual({
      column: 'deleted',
      equals: { kind: 'number', value: '-1.5' },
    })
    expect(parseDeleteCondition("op = 'it''s = D'")).toEqual({
      column: 'op',
      equals: { kind: 'text', value: "it's = D" },
    })
  })

  it('refuses anything else, saying what is accepted: SQL is never pasted', () => {
    expect(parseDeleteCondition("status = 'D' OR 1 = 1")).toEqual({
      problem: `"'D' OR 1 = 1" is not a value: write true, false, a number, or a text in single quotes ('D'; a quote inside is doubled: 'it''s')`,
    })
    expect(parseDeleteCondition('status IN (1, 2)')).toMatchObject({
      problem: expect.stringMatching(/^must be <column> = <value>/),
    })
    expect(parseDeleteCondition('1st = 1')).toEqual({
      problem: '"1st" is not a column name (letters, digits and _, not starting with a digit)',
    })
    expect(parseDeleteCondition('x = 1; DROP TABLE t')).toMatchObject({
      problem: expect.stringContaining('is not a value'),
    })
  })

  it('resolves into the soft delete column and its value, with the policy (default invalidate)', () => {
    const spec = parseProject(
      oneTableYaml(
        'source: { type: file, path: c.csv }\nkey: id\ndeletes: { when: "status = \'D\'", policy: new_record }',
      ),
      CONFIG_PATH,
    ).tables[0]!
    expect([spec.softDeleteColumn, spec.softDeleteEquals, spec.deletes]).toEqual([
      'status',
      { kind: 'text', value: 'D' },
      'new_record',
    ])
    const flag = parseProject(
      oneTableYaml('source: { type: file, path: c.csv }\nkey: id\ndeletes: { when: is_deleted = true }'),
      CONFIG_PATH,
    ).tables[0]!
    expect([flag.softDeleteColumn, flag.deletes]).toEqual(['is_deleted', 'invalidate'])
  })

  it('refuses a condition it cannot read, and one given beside soft_delete_column', () => {
    expect(
      configIssues(
        oneTableYaml('source: { type: file, path: c.csv }\nkey: id\ndeletes: { when: "status <> 1" }'),
      ),
    ).toEqual([
      "tables[0].deletes.when: must be <column> = <value>, the value true, false, a number or a quoted text (is_deleted = true, op = 'D', deleted = 1)",
    ])
    expect(
      configIssues(
        oneTableYaml(
          'source: { type: file, path: c.csv }\nkey: id\nsoft_delete_column: gone\ndeletes: { when: is_deleted = true }',
        ),
      ),
    ).toEqual([
      'tables[0].deletes.when: soft_delete_column "gone" says which rows are deletes too; keep one of them',
    ])
  })
})
