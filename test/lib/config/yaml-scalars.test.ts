import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'

const CONFIG = '/projects/shop/dimsync.yaml'

/** A config whose one table carries `option` (a YAML line), with `defaults` lines when given. */
function withOption(option: string, defaults = ''): string {
  return (
    `version: 1\n${defaults ? `defaults:\n  ${defaults}\n` : ''}tables:\n  - name: customers\n` +
    `    source: { type: file, path: data/customers.csv }\n    key: customer_id\n    ${option}\n`
  )
}

/**
 * Options whose values are words are written the way YAML users write them: a value YAML reads as its own type
 * (null, a boolean, a number) means what its text means.
 */
describe('the config takes option values as YAML writes them', () => {
  it.each(['removed_columns: null', 'removed_columns: ~', "removed_columns: 'null'", 'removed_columns:'])(
    '%s keeps removed columns NULL (the default)',
    (line) => {
      const table = parseProject(withOption(line), CONFIG).tables[0]!
      expect(table.removedColumns).toBeUndefined()
    },
  )

  it('removed_columns: null on a table overrides keep_last in defaults', () => {
    const text = withOption('removed_columns: null', 'removed_columns: keep_last')
    expect(parseProject(text, CONFIG).tables[0]!.removedColumns).toBeUndefined()
    expect(
      parseProject(withOption('tracked: [name]', 'removed_columns: keep_last'), CONFIG).tables[0]!
        .removedColumns,
    ).toBe('keep_last')
  })

  it('an unknown word is still refused, naming the values', () => {
    expect(() => parseProject(withOption('removed_columns: last'), CONFIG)).toThrow(
      /tables\[0\]\.removed_columns: must be one of null, keep_last \(got "last"\)/,
    )
  })

  it.each([
    ['system_time: true', (t: { systemTime?: unknown }) => t.systemTime !== undefined],
    ['system_time: false', (t: { systemTime?: unknown }) => t.systemTime === undefined],
  ])('%s is a boolean', (line, holds) => {
    expect(holds(parseProject(withOption(line), CONFIG).tables[0]!)).toBe(true)
  })

  it('max_delete_share takes a number as a number', () => {
    expect(parseProject(withOption('max_delete_share: 0.25'), CONFIG).tables[0]!.maxDeleteShare).toBe(0.25)
  })
})
