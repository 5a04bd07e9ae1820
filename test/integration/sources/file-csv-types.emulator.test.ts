import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { parseProject } from '../../../lib/config/index.ts'
import { BIGQUERY_ENDPOINT_VARIABLE, buildLocalDeps } from '../../../lib/runtime/local-deps.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { BigQueryEmulator } from '../../support/bigquery-emulator/bigquery-emulator.ts'

/**
 * The exact CSV readings into both warehouses: 20-digit keys (DECIMAL(38,0): BIGNUMERIC on BigQuery, whose
 * NUMERIC keeps only 29 whole digits), a decimal a DOUBLE would round (DECIMAL(38,2)) and day-first dates hold
 * the same values and row hashes in DuckDB and BigQuery, and `history --key` finds a 20-digit key on both.
 */
describe('CSV wide numbers and day-first dates into DuckDB and BigQuery', () => {
  let dir: string
  let emulator: BigQueryEmulator

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dimsync-csv-types-'))
    emulator = await BigQueryEmulator.start()
    emulator.createDataset('acme-dw', 'history', { location: 'EU' })
  })
  afterAll(async () => {
    await emulator?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  async function runOn(warehouse: 'duckdb' | 'bigquery', csv: string, at: string) {
    await writeFile(join(dir, 'cards.csv'), csv)
    const line =
      warehouse === 'duckdb'
        ? `{ type: duckdb, path: ${join(dir, 'warehouse.duckdb')} }`
        : '{ type: bigquery, project: acme-dw, dataset: history, location: EU }'
    const yaml = `version: 1
warehouse: ${line}
staging: { type: local, path: ${join(dir, warehouse, 'staging')} }
state: { type: local, path: ${join(dir, warehouse, 'state')} }
tables:
  - name: cards
    source: { type: file, path: cards.csv }
    key: iccid
`
    const project = parseProject(yaml, join(dir, 'dimsync.yaml'))
    const previous = process.env[BIGQUERY_ENDPOINT_VARIABLE]
    process.env[BIGQUERY_ENDPOINT_VARIABLE] = emulator.url
    const deps = await buildLocalDeps(project, undefined, {}, { bigQuery: { pollIntervalMs: 20 } })
    try {
      await runTable(deps, project.tables[0]!, { extractedAt: new Date(at) })
      const table = project.tables[0]!
      const warehouseDb = await deps.openWarehouse()
      const d = warehouseDb.dialect
      const text = (c: string) => `${d.castToString(d.quoteIdentifier(c))} AS ${d.quoteIdentifier(c)}`
      const rows = await warehouseDb.query(
        `SELECT ${['iccid', 'balance', 'opened', 'dimsync_row_hash'].map(text).join(', ')}, is_current ` +
          `FROM ${d.table({ schema: project.warehouse.schema, name: 'dim_cards' })}`,
      )
      const found = await readHistory(warehouseDb, {
        table,
        schema: project.warehouse.schema,
        key: '89310410106543789302',
      })
      return {
        rows: rows.map((r) => ({ ...r })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
        found: found.map((r) => String(r.iccid)),
      }
    } finally {
      await deps.close()
      if (previous === undefined) delete process.env[BIGQUERY_ENDPOINT_VARIABLE]
      else process.env[BIGQUERY_ENDPOINT_VARIABLE] = previous
    }
  }

  it('hold the same exact values and hashes on both, and a changed 20th digit of a balance opens a version', async () => {
    const first =
      'iccid,balance,opened\n89310410106543789301,12345678901234567.89,13/02/2024\n89310410106543789302,0.10,01/02/2024\n'
    const second =
      'iccid,balance,opened\n89310410106543789301,12345678901234567.88,13/02/2024\n89310410106543789302,0.10,01/02/2024\n'
    for (const w of ['duckdb', 'bigquery'] as const) await runOn(w, first, '2024-01-01T00:00:00Z')
    const duckdb = await runOn('duckdb', second, '2024-02-01T00:00:00Z')
    const bigquery = await runOn('bigquery', second, '2024-02-01T00:00:00Z')
    expect(duckdb.rows.map((r) => [r.iccid, r.balance, r.opened, r.is_current])).toEqual([
      ['89310410106543789301', '12345678901234567.88', '2024-02-13', true],
      ['89310410106543789301', '12345678901234567.89', '2024-02-13', false],
      ['89310410106543789302', '0.10', '2024-02-01', true],
    ])
    // BigQuery's text of a BIGNUMERIC drops trailing fraction zeros (0.10 is 0.1); the row hashes, computed from
    // the canonical text of DECIMAL(38,2), agree.
    expect(bigquery.rows.map((r) => [r.iccid, r.balance, r.opened, r.is_current])).toEqual([
      ['89310410106543789301', '12345678901234567.88', '2024-02-13', true],
      ['89310410106543789301', '12345678901234567.89', '2024-02-13', false],
      ['89310410106543789302', '0.1', '2024-02-01', true],
    ])
    expect(bigquery.rows.map((r) => r.dimsync_row_hash)).toEqual(duckdb.rows.map((r) => r.dimsync_row_hash))
    expect(duckdb.found).toEqual(['89310410106543789302'])
    expect(bigquery.found).toEqual(['89310410106543789302'])
  })
})
