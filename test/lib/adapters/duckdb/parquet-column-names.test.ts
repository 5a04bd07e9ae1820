import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { readParquetColumnNames } from '../../../../lib/adapters/duckdb/parquet-schema.ts'

describe('readParquetColumnNames (real DuckDB)', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dimsync-parquet-names-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('gives the top-level columns, not the fields nested in structs and lists', async () => {
    const path = join(dir, 'nested.parquet')
    const instance = await DuckDBInstance.create(':memory:')
    const connection = await instance.connect()
    try {
      await connection.run(
        `COPY (SELECT 1 AS id, {'Name': 'a', 'inner': {'deep': 1}} AS s, 'b' AS name, [{'x': 1}] AS l,
           'c' AS "Tail") TO '${path}' (FORMAT parquet)`,
      )
      expect(await readParquetColumnNames(path, connection)).toEqual(['id', 's', 'name', 'l', 'Tail'])
    } finally {
      connection.closeSync()
      instance.closeSync()
    }
    // Without a connection, it opens its own.
    expect(await readParquetColumnNames(path)).toEqual(['id', 's', 'name', 'l', 'Tail'])
  })
})
