import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDuckDbEngine, withDuckDbEngine } from '../../../../lib/adapters/duckdb/duckdb-engine.ts'

async function setting(
  connection: { runAndReadAll(sql: string): Promise<{ getRowObjectsJson(): unknown[] }> },
  name: string,
) {
  const rows = (await connection.runAndReadAll(`SELECT current_setting('${name}') AS v`)).getRowObjectsJson()
  return String((rows[0] as { v: unknown }).v)
}

describe('one DuckDB engine factory: every place that opens DuckDB gets the same session settings', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dimsync-engine-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('reads and writes times in UTC, whatever the machine zone', async () => {
    await withDuckDbEngine({}, async (connection) => {
      expect(await setting(connection, 'TimeZone')).toBe('UTC')
      const rows = (
        await connection.runAndReadAll(`SELECT CAST(TIMESTAMPTZ '2024-03-01 10:00:00+02' AS VARCHAR) AS t`)
      ).getRowObjectsJson()
      expect(rows).toEqual([{ t: '2024-03-01 08:00:00+00' }])
    })
  })

  it('applies what the caller states: threads, memory limit, spill folder, order, read-only', async () => {
    const spill = join(dir, 'spill')
    await withDuckDbEngine(
      { threads: 1, memoryLimit: '128MB', spillDirectory: spill, anyOrder: true },
      async (c) => {
        expect(await setting(c, 'threads')).toBe('1')
        expect(await setting(c, 'memory_limit')).toMatch(/^12[0-9](\.\d+)? MiB$/)
        expect(await setting(c, 'temp_directory')).toBe(spill)
        expect(await setting(c, 'preserve_insertion_order')).toBe('false')
      },
    )
    const path = join(dir, 'w.duckdb')
    const writer = await openDuckDbEngine({ path })
    await writer.connection.run('CREATE TABLE t AS SELECT 1 AS x')
    writer.close()
    writer.close()
    const reader = await openDuckDbEngine({ path, readOnly: true })
    try {
      await expect(reader.connection.run('INSERT INTO t VALUES (2)')).rejects.toThrow(/read-only/i)
    } finally {
      reader.close()
    }
  })
})
