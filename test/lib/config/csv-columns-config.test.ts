import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

const csv = (columns: string) =>
  `source: { type: file, path: data/accounts.csv, columns: ${columns} }\nkey: id`

describe('source.columns: the declared types of CSV columns', () => {
  it('takes a type, or a type and a strptime format, spelled as DuckDB does', () => {
    const spec = parseProject(
      oneTableYaml(csv(`{ acct: 'decimal(38, 0)', d: { type: DATE, format: '%d/%m/%Y' }, note: text }`)),
      CONFIG_PATH,
    ).tables[0]!
    expect(spec.source).toMatchObject({
      columns: [
        { name: 'acct', type: 'DECIMAL(38,0)' },
        { name: 'd', type: 'DATE', format: '%d/%m/%Y' },
        { name: 'note', type: 'VARCHAR' },
      ],
    })
  })

  it('reads a block mapping too, where DECIMAL(38,0) needs no quotes', () => {
    const yaml = oneTableYaml(
      'source:\n  type: file\n  path: a.csv\n  columns:\n    acct: DECIMAL(38,0)\nkey: id',
    )
    expect(parseProject(yaml, CONFIG_PATH).tables[0]!.source).toMatchObject({
      columns: [{ name: 'acct', type: 'DECIMAL(38,0)' }],
    })
  })

  it('is absent unless set', () => {
    const spec = parseProject(oneTableYaml('source: { type: file, path: a.csv }\nkey: id'), CONFIG_PATH)
      .tables[0]!
    expect(spec.source).not.toHaveProperty('columns')
  })

  it('refuses a type a CSV value cannot be read as exactly, naming the ones it can', () => {
    expect(configIssues(oneTableYaml(csv("{ acct: 'DECIMAL(40,0)', doc: JSON }")))).toEqual([
      expect.stringMatching(
        /^tables\[0\]\.source\.columns\.acct: "DECIMAL\(40,0\)" is not a type a CSV column can be read as: VARCHAR, BOOLEAN, .*DECIMAL\(p,s\) \(p up to 38\)/,
      ),
      expect.stringMatching(/^tables\[0\]\.source\.columns\.doc: "JSON" is not a type/),
    ])
  })

  it('refuses a format on a type that has none, and a format without a directive', () => {
    expect(
      configIssues(
        oneTableYaml(csv("{ n: { type: BIGINT, format: '%d' }, d: { type: DATE, format: 'dd/mm/yyyy' } }")),
      ),
    ).toEqual([
      'tables[0].source.columns.n.format: only dates, times and timestamps have a format (n is BIGINT)',
      'tables[0].source.columns.d.format: "dd/mm/yyyy" has no strptime directive such as %d, %m or %Y',
    ])
  })

  it('refuses unknown keys, column names that are not identifiers, and Parquet sources', () => {
    expect(configIssues(oneTableYaml(csv('{ d: { type: DATE, fmt: x } }')))).toEqual([
      expect.stringMatching(/columns\.d.*unknown key "fmt"/s),
    ])
    expect(configIssues(oneTableYaml(csv("{ 'a b': BIGINT }")))).toEqual([
      expect.stringMatching(/columns\.a b: must be a column name/),
    ])
    // YAML splits an unquoted DECIMAL(38,0) inside { } at its comma.
    expect(configIssues(oneTableYaml(csv('{ acct: DECIMAL(38,0) }')))).toEqual([
      "tables[0].source.columns.0): a DECIMAL type inside { } must be quoted: acct: 'DECIMAL(38,0)' (YAML splits it at its comma)",
    ])
    expect(
      configIssues(oneTableYaml('source: { type: file, path: a.parquet, columns: { a: BIGINT } }\nkey: id')),
    ).toEqual(['tables[0].source.columns: only applies to csv sources (a Parquet file carries its types)'])
  })
})
