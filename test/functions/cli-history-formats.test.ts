import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { describe, expect, it } from 'vitest'
import { cliInTemporaryFolder } from '../support/cli-process.ts'

/**
 * `dimsync history --format csv|json|table` of a dimension whose columns hold lists, structs, maps and intervals
 * (a Parquet source keeps them as they are): every format gives each stored value whole, never `[object Object]`
 * or a list's elements run together.
 */

const cli = cliInTemporaryFolder('dimsync-history-formats-')

async function parquetSource(): Promise<void> {
  const db = await DuckDBInstance.create(':memory:')
  const connection = await db.connect()
  try {
    await connection.run(
      `COPY (SELECT 1 AS id, ['a,b', 'c"d'] AS tags, {'city': 'Porto', 'zip': '4000'} AS address,
              MAP {'k': 1} AS scores, INTERVAL 3 DAY AS wait, 'plain' AS note
            UNION ALL
            SELECT 2, [], {'city': NULL, 'zip': '1'}, MAP {}, INTERVAL 1 MONTH, NULL)
       TO '${join(cli.work, 'c.parquet')}' (FORMAT parquet)`,
    )
  } finally {
    connection.closeSync()
    db.closeSync()
  }
  writeFileSync(
    join(cli.work, 'dimsync.yaml'),
    'version: 1\ntables:\n  - name: c\n    source: { type: file, path: c.parquet }\n    key: id\n',
  )
}

/** RFC 4180 records: quoted fields with `""` inside, commas and line breaks in quotes. */
function parseCsv(text: string): string[][] {
  const records: string[][] = []
  let record: string[] = []
  let field = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"'
        i++
      } else if (ch === '"') quoted = false
      else field += ch
    } else if (ch === '"') quoted = true
    else if (ch === ',') {
      record.push(field)
      field = ''
    } else if (ch === '\n') {
      record.push(field)
      records.push(record)
      record = []
      field = ''
    } else field += ch
  }
  return records
}

describe('dimsync history of nested values', () => {
  it('gives lists, structs, maps and intervals whole in CSV (as JSON text), JSON and the timeline', async () => {
    await parquetSource()
    const run = cli.dimsync('run', '--extracted-at', '2024-01-01T00:00:00Z')
    expect(run.code, run.err).toBe(0)

    const json = cli.dimsync('history', 'c', '--format', 'json')
    expect(json.code, json.err).toBe(0)
    const rows = json.out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(rows.map((r) => [r.id, r.tags, r.address, r.note])).toEqual([
      [1, ['a,b', 'c"d'], { city: 'Porto', zip: '4000' }, 'plain'],
      [2, [], { city: null, zip: '1' }, null],
    ])

    const csv = cli.dimsync('history', 'c', '--format', 'csv')
    expect(csv.code, csv.err).toBe(0)
    const [header, ...records] = parseCsv(csv.out)
    expect(records).toHaveLength(2)
    const cell = (record: string[], column: string) => record[header!.indexOf(column)]
    // A nested value is its JSON text; a plain one is as it is; NULL is empty.
    for (const [i, row] of rows.entries()) {
      for (const column of ['tags', 'address', 'scores', 'wait'])
        expect(cell(records[i]!, column), column).toBe(JSON.stringify(row[column]))
      expect(cell(records[i]!, 'note')).toBe(row.note ?? '')
    }
    expect(csv.out).not.toContain('[object Object]')

    const table = cli.dimsync('history', 'c')
    expect(table.code, table.err).toBe(0)
    expect(table.out).toContain('tags=["a,b","c\\"d"] address={"city":"Porto","zip":"4000"}')
    expect(table.out).not.toContain('[object Object]')

    // The report's key timeline (its lanes and its table of versions) shows the same text, escaped.
    const report = cli.dimsync('report', '--table', 'c', '--key', '1', '--out', 'report.html')
    expect(report.code, report.err).toBe(0)
    const page = readFileSync(join(cli.work, 'report.html'), 'utf8')
    expect(page).not.toContain('[object Object]')
    expect(page).toContain('{&quot;city&quot;:&quot;Porto&quot;,&quot;zip&quot;:&quot;4000&quot;}')
  })
})
