import { writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { DuckDBInstance } from '@duckdb/node-api'
import { afterEach, describe, expect, it } from 'vitest'

import { SourceError } from '../../../lib/core/errors.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

/**
 * A CSV file that is not what its table says (another encoding, another format, another delimiter) fails the run
 * in one line that names the file and what it found, and nothing is staged or written.
 */

let embedded: EmbeddedProject | undefined
afterEach(async () => {
  await embedded?.dispose()
  embedded = undefined
})

async function runError(write: (path: string) => Promise<void> | void): Promise<Error> {
  embedded = await makeEmbeddedProject(customersYaml())
  const path = join(embedded.dir, 'customers.csv')
  await write(path)
  const error = await runTable(embedded.deps, embedded.project.tables[0]!).catch((e: unknown) => e)
  expect(error).toBeInstanceOf(SourceError)
  expect(await embedded.deps.staging.listBatches('customers')).toEqual([])
  return error as Error
}

const TEXT = 'customer_id,name\n1,Ana\n2,Bruno\n'

describe('a CSV file that is not UTF-8 comma-separated text', () => {
  it('UTF-16 with a byte-order mark is refused naming the encoding', async () => {
    const littleEndian = await runError((path) =>
      writeFileSync(path, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(TEXT, 'utf16le')])),
    )
    expect(littleEndian.message).toBe(
      'customers: customers.csv is UTF-16 (little-endian) text; dimsync reads CSV as UTF-8: save the file as UTF-8',
    )
    const bigEndian = await runError((path) =>
      writeFileSync(path, Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(TEXT, 'utf16le').swap16()])),
    )
    expect(bigEndian.message).toContain('customers.csv is UTF-16 (big-endian) text')
  })

  it('UTF-16 without a byte-order mark is refused naming the encoding', async () => {
    const error = await runError((path) => writeFileSync(path, Buffer.from(TEXT, 'utf16le')))
    expect(error.message).toBe(
      'customers: customers.csv is UTF-16 (little-endian) text; dimsync reads CSV as UTF-8: save the file as UTF-8',
    )
  })

  it('a Parquet file named .csv is refused naming the file and the way out', async () => {
    const error = await runError(async (path) => {
      const duck = await DuckDBInstance.create(':memory:')
      const connection = await duck.connect()
      await connection.run(`COPY (SELECT 1 AS customer_id, 'Ana' AS name) TO '${path}' (FORMAT parquet)`)
      connection.closeSync()
      duck.closeSync()
    })
    expect(error.message).toBe(
      'customers: customers.csv is a Parquet file, not CSV text; set format: parquet in the source of table customers',
    )
  })

  it('a gzip file not named .csv.gz is refused naming the file', async () => {
    const { gzipSync } = await import('node:zlib')
    const error = await runError((path) => writeFileSync(path, gzipSync(TEXT)))
    expect(error.message).toBe(
      'customers: customers.csv is gzip-compressed; give it a name ending in .csv.gz so that it is read as compressed CSV',
    )
  })

  it('a semicolon-separated file names the header it found and the delimiter to set', async () => {
    const error = await runError((path) => writeFileSync(path, 'customer_id;name\n1;Ana\n2;Bruno\n'))
    expect(error.message).toBe(
      `customers: customers.csv: the header "customer_id;name" is one column when split at ','; ` +
        `it looks separated by ';': set delimiter: ';' in the source of table customers`,
    )
  })

  it('a tab-separated file names the header it found and the delimiter to set', async () => {
    const error = await runError((path) => writeFileSync(path, 'customer_id\tname\n1\tAna\n'))
    expect(error.message).toBe(
      `customers: customers.csv: the header "customer_id\\tname" is one column when split at ','; ` +
        `it looks separated by tabs: set delimiter: "\\t" in the source of table customers`,
    )
  })
})
