import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import { afterEach, describe, expect, it } from 'vitest'

import { runTable } from '../../../lib/use-cases/run-table.ts'
import { makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

let embedded: EmbeddedProject | undefined
afterEach(async () => {
  await embedded?.dispose()
  embedded = undefined
})

/**
 * DuckDB's Parquet writer keeps one dictionary entry for values it compares equal: INTERVAL '1 month' and
 * '30 days', TIMETZ '12:00+01' and '11:00+00'. A Parquet file source holding both would have every row staged with
 * whichever came first, and the dimension would store values the file never held.
 */
describe('a Parquet file source with intervals and times with a zone that DuckDB compares equal', () => {
  it('stores each value as the file holds it', async () => {
    const p = (embedded = await makeEmbeddedProject(
      [
        'version: 1',
        'tables:',
        '  - name: spans',
        '    source: { type: file, path: spans.parquet }',
        '    key: id',
        '',
      ].join('\n'),
    ))
    const file = join(p.dir, 'spans.parquet')
    const instance = await DuckDBInstance.create(':memory:')
    const connection = await instance.connect()
    const written = `SELECT range AS id,
        CASE WHEN range % 2 = 0 THEN INTERVAL '1 month' ELSE INTERVAL '30 days' END AS span,
        CASE WHEN range % 2 = 0 THEN TIMETZ '12:00:00+01' ELSE TIMETZ '11:00:00+00' END AS opens
      FROM range(20)`
    const texts = `SELECT id, CAST(span AS VARCHAR) AS span, CAST(opens AS VARCHAR) AS opens`
    try {
      // Written without a dictionary, so the file holds every value.
      await connection.run(`COPY (${written}) TO '${file}' (FORMAT parquet, DICTIONARY_SIZE_LIMIT 0)`)
      const held = (await connection.runAndReadAll(`${texts} FROM '${file}' ORDER BY id`)).getRowObjectsJson()
      expect(new Set(held.map((r) => r.span))).toEqual(new Set(['1 month', '30 days']))
      await runTable(p.deps, p.project.tables[0]!, { extractedAt: new Date('2024-01-01T00:00:00Z') })
      const warehouse = await p.deps.openWarehouse()
      const stored = await warehouse.query(`${texts} FROM main.dim_spans ORDER BY id`)
      expect(stored.map((r) => ({ ...r, id: String(r.id) }))).toEqual(
        held.map((r) => ({ ...r, id: String(r.id) })),
      )
    } finally {
      connection.closeSync()
      instance.closeSync()
    }
  })
})
