import { rmSync } from 'node:fs'
import { join } from 'node:path'

import { afterEach, describe, expect, it } from 'vitest'

import { BatchRejectedError, SourceError } from '../../../lib/core/errors.ts'
import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

/**
 * A CSV column's values are stored exactly as the file writes them, whatever the first load's file held: the
 * embedded pipeline (local files, local state, DuckDB) run by `dimsync run`.
 */

let embedded: EmbeddedProject | undefined
afterEach(async () => {
  await embedded?.dispose()
  embedded = undefined
})

const JAN = new Date('2024-01-01T00:00:00Z')
const FEB = new Date('2024-02-01T00:00:00Z')
const MAR = new Date('2024-03-01T00:00:00Z')
const APR = new Date('2024-04-01T00:00:00Z')

async function project(...options: string[]): Promise<EmbeddedProject> {
  embedded = await makeEmbeddedProject(customersYaml(...options))
  return embedded
}

/** A customers table whose source declares `columns` (a YAML mapping). */
async function declaring(columns: string): Promise<EmbeddedProject> {
  embedded = await makeEmbeddedProject(
    customersYaml().replace(
      'source: { type: file, path: customers.csv }',
      `source: { type: file, path: customers.csv, columns: ${columns} }`,
    ),
  )
  return embedded
}

async function run(p: EmbeddedProject, header: string, rows: readonly string[], at: Date) {
  p.writeCsv('customers.csv', header, rows)
  return await runTable(p.deps, p.project.tables[0]!, { extractedAt: at })
}

async function runError(p: EmbeddedProject, header: string, rows: readonly string[], at: Date) {
  const error = await run(p, header, rows, at).catch((e: unknown) => e)
  expect(error).toBeInstanceOf(Error)
  return error as Error
}

/** The dimension's rows as text, in key and time order. */
async function history(p: EmbeddedProject, columns: string, key?: string) {
  const rows = await readHistory(await p.deps.openWarehouse(), {
    table: p.project.tables[0]!,
    schema: 'main',
    ...(key !== undefined ? { key } : {}),
  })
  return rows.map((row) => columns.split(',').map((c) => String(row[c])))
}

async function columnType(p: EmbeddedProject, column: string): Promise<string | undefined> {
  const warehouse = await p.deps.openWarehouse()
  const columns = await warehouse.describeTable({ schema: 'main', name: 'dim_customers' })
  return columns?.find((c) => c.name === column)?.type
}

describe('numbers wider than a DOUBLE holds', () => {
  it('20-digit keys are stored exactly, found by history --key, and two of them are two keys', async () => {
    const p = await project()
    const result = await run(
      p,
      'customer_id,name',
      ['12345678901234567891,Ana', '12345678901234567892,Bruno', '7,Carla'],
      JAN,
    )
    expect(result.merge.counts).toMatchObject({ insertedVersions: 3 })
    expect(await columnType(p, 'customer_id')).toBe('DECIMAL(38,0)')
    expect(await history(p, 'customer_id,name')).toEqual([
      ['7', 'Carla'],
      ['12345678901234567891', 'Ana'],
      ['12345678901234567892', 'Bruno'],
    ])
    expect(await history(p, 'customer_id,name', '12345678901234567891')).toEqual([
      ['12345678901234567891', 'Ana'],
    ])
  })

  it('a decimal with more digits than a DOUBLE keeps is stored exactly', async () => {
    const p = await project()
    await run(p, 'customer_id,amount', ['1,12345678901234567.89', '2,0.5'], JAN)
    expect(await columnType(p, 'amount')).toBe('DECIMAL(38,2)')
    expect(await history(p, 'customer_id,amount')).toEqual([
      ['1', '12345678901234567.89'],
      ['2', '0.50'],
    ])
  })

  it('1e400 (Infinity as a DOUBLE) is refused naming the line, the column and the value', async () => {
    const p = await project()
    const error = await runError(p, 'customer_id,amount', ['1,1.5', '2,1e400'], JAN)
    expect(error).toBeInstanceOf(SourceError)
    expect(error.message).toBe(
      'customers: customers.csv line 3: column amount holds 1e400, which neither a DOUBLE nor a ' +
        'DECIMAL(38,s) holds exactly; nothing was staged. Fix the value, or declare the ' +
        "column's type in the source of table customers: columns: { amount: VARCHAR }",
    )
    expect(await p.deps.staging.listBatches('customers')).toEqual([])
  })

  it('integers wider than 38 digits are refused naming the column', async () => {
    const p = await project()
    const wide = '1'.repeat(40)
    const error = await runError(p, 'customer_id,n', ['1,5', `2,${wide}`], JAN)
    expect(error.message).toContain(
      `customers.csv line 3: column n holds ${wide}, which is an integer of 40 digits`,
    )
  })
})

describe('dates', () => {
  it('a date column whose values read day first and month first is refused naming two of them', async () => {
    const p = await project()
    const error = await runError(p, 'customer_id,d', ['1,01/02/2024', '2,03/04/2024'], JAN)
    expect(error).toBeInstanceOf(SourceError)
    expect(error.message).toBe(
      'customers: column d of customers.csv holds dates that read two ways: 01/02/2024 and 03/04/2024 are ' +
        '2024-02-01 and 2024-04-03 as %d/%m/%Y, but 2024-01-02 and 2024-03-04 as %m/%d/%Y; nothing was ' +
        "staged. Declare the format in the source of table customers: columns: { d: { type: DATE, format: '%d/%m/%Y' } } " +
        "(or { type: DATE, format: '%m/%d/%Y' })",
    )
  })

  it('a date column with a day-first value that only reads one way is loaded day first', async () => {
    const p = await project()
    await run(p, 'customer_id,d', ['1,01/02/2024', '2,13/04/2024'], JAN)
    expect(await history(p, 'customer_id,d')).toEqual([
      ['1', '2024-02-01'],
      ['2', '2024-04-13'],
    ])
  })

  it('one value that is not a date in a column of dates is refused naming its line, on a first load', async () => {
    const p = await project()
    const error = await runError(p, 'customer_id,d', ['1,2024-02-01', '2,2024-02-30', '3,2024-03-01'], JAN)
    expect(error.message).toBe(
      'customers: customers.csv line 3: column d holds 2024-02-30, which is not a DATE written YYYY-MM-DD like ' +
        "its other values (2024-02-01); nothing was staged. Fix the value, or declare the column's type in " +
        'the source of table customers: columns: { d: VARCHAR }',
    )
  })

  it('on a DATE dimension, a value that is not a date names its line instead of a change of type', async () => {
    const p = await project()
    await run(p, 'customer_id,d', ['1,2024-02-01', '2,2024-02-02', '3,2024-03-01'], JAN)
    const error = await runError(p, 'customer_id,d', ['1,2024-02-01', '2,2024-02-30', '3,2024-03-01'], FEB)
    expect(error).not.toBeInstanceOf(BatchRejectedError)
    expect(error.message).toMatch(
      /^customers: customers\.csv line 3: column d holds 2024-02-30, which is not a DATE/,
    )
    expect(await history(p, 'customer_id,d')).toEqual([
      ['1', '2024-02-01'],
      ['2', '2024-02-02'],
      ['3', '2024-03-01'],
    ])
  })

  it('timestamps with more than microseconds are refused naming the line, not truncated', async () => {
    const p = await project()
    const error = await runError(
      p,
      'customer_id,t',
      ['1,2024-02-01 10:00:00', '2,2024-02-01 11:00:00.1234567'],
      JAN,
    )
    expect(error.message).toMatch(
      /^customers: customers\.csv line 3: column t holds "2024-02-01 11:00:00\.1234567", which is not a TIMESTAMP written/,
    )
  })
})

describe('declared column types (source.columns)', () => {
  it('a declared date format reads ambiguous dates one way, and a later value in the other is refused', async () => {
    const p = await declaring(`{ d: { type: DATE, format: '%d/%m/%Y' } }`)
    await run(p, 'customer_id,d', ['1,01/02/2024', '2,03/04/2024'], JAN)
    expect(await history(p, 'customer_id,d')).toEqual([
      ['1', '2024-02-01'],
      ['2', '2024-04-03'],
    ])
    const error = await runError(p, 'customer_id,d', ['1,01/02/2024', '2,03/04/2024', '3,02/13/2024'], FEB)
    expect(error.message).toBe(
      'customers: customers.csv line 4: column d holds 02/13/2024, which is not a DATE written as %d/%m/%Y ' +
        "(its type declared in columns:); nothing was staged. Fix the value, or declare the column's type in " +
        'the source of table customers: columns: { d: VARCHAR }',
    )
    expect(await history(p, 'customer_id,d')).toEqual([
      ['1', '2024-02-01'],
      ['2', '2024-04-03'],
    ])
  })

  it('a declared DECIMAL(38,0) key holds small keys first and 20-digit ones later, without a change of type', async () => {
    const p = await declaring(`{ customer_id: 'DECIMAL(38,0)' }`)
    await run(p, 'customer_id,name', ['1,Ana'], JAN)
    expect(await columnType(p, 'customer_id')).toBe('DECIMAL(38,0)')
    await run(p, 'customer_id,name', ['1,Ana', '12345678901234567891,Bruno'], FEB)
    expect(await history(p, 'customer_id,name')).toEqual([
      ['1', 'Ana'],
      ['12345678901234567891', 'Bruno'],
    ])
  })

  it('a column declared VARCHAR keeps its text as written', async () => {
    const p = await declaring(`{ code: VARCHAR, amount: VARCHAR }`)
    await run(p, 'customer_id,code,amount', ['1,007,1e400', '2,12,12345678901234567.89'], JAN)
    expect(await history(p, 'customer_id,code,amount')).toEqual([
      ['1', '007', '1e400'],
      ['2', '12', '12345678901234567.89'],
    ])
  })

  it('a declared column the file does not have is refused naming the columns it has', async () => {
    const p = await declaring(`{ acct: BIGINT }`)
    const error = await runError(p, 'customer_id,name', ['1,Ana'], JAN)
    expect(error.message).toBe(
      'customers: column acct of columns: is not a column of customers.csv; its columns are customer_id, name',
    )
  })
})

describe('the types of the first load are recorded and kept', () => {
  it('dates read day first on the first load stay day first when a later file alone would read both ways', async () => {
    const p = await project()
    await run(p, 'customer_id,d', ['1,13/02/2024', '2,01/02/2024'], JAN)
    expect(await p.deps.state.getSourceTypes('customers')).toEqual({
      version: 1,
      columns: [
        { name: 'customer_id', type: 'BIGINT' },
        { name: 'd', type: 'DATE', format: '%d/%m/%Y' },
      ],
    })
    const second = await run(p, 'customer_id,d', ['2,01/02/2024', '3,03/04/2024'], FEB)
    expect(second.merge.counts).toMatchObject({ insertedVersions: 1, closedVersions: 0 })
    expect(await history(p, 'customer_id,d')).toEqual([
      ['1', '2024-02-13'],
      ['2', '2024-02-01'],
      ['3', '2024-04-03'],
    ])
    const error = await runError(p, 'customer_id,d', ['2,01/02/2024', '3,03/04/2024', '4,02/13/2024'], MAR)
    expect(error.message).toBe(
      'customers: customers.csv line 4: column d holds 02/13/2024, which is not a DATE written as %d/%m/%Y ' +
        "(the type the column was first loaded as); nothing was staged. Fix the value, or declare the column's " +
        'type in the source of table customers: columns: { d: VARCHAR }',
    )
    expect(await history(p, 'customer_id,d')).toHaveLength(3)
  })

  it('a DOUBLE column stays DOUBLE when a later file holds whole numbers only', async () => {
    const p = await project()
    await run(p, 'customer_id,amount', ['1,1.5', '2,2.25'], JAN)
    const second = await run(p, 'customer_id,amount', ['1,2', '2,3'], FEB)
    expect(second.merge.counts).toMatchObject({ insertedVersions: 2, closedVersions: 2 })
    expect(await columnType(p, 'amount')).toBe('DOUBLE')
  })

  it('an offset in a TIMESTAMP column is refused at its line instead of a change of type', async () => {
    const p = await project()
    await run(p, 'customer_id,t', ['1,2024-02-01 10:00:00', '2,2024-02-01 11:00:00'], JAN)
    const error = await runError(
      p,
      'customer_id,t',
      ['1,2024-02-01 10:00:00', '2,2024-02-01 11:00:00+02'],
      FEB,
    )
    expect(error.message).toMatch(
      /^customers: customers\.csv line 3: column t holds "2024-02-01 11:00:00\+02", which is not a TIMESTAMP written/,
    )
  })

  it('a column new to the table gets its type from its values, and is recorded beside the others', async () => {
    const p = await project()
    await run(p, 'customer_id,d', ['1,13/02/2024'], JAN)
    await run(p, 'customer_id,d,n', ['1,13/02/2024,12345678901234567891'], FEB)
    expect((await p.deps.state.getSourceTypes('customers'))?.columns).toEqual([
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'd', type: 'DATE', format: '%d/%m/%Y' },
      { name: 'n', type: 'DECIMAL(38,0)' },
    ])
  })

  it('nothing is recorded until a batch is merged: a refused first load leaves the choice to the next one', async () => {
    const p = await project()
    const refused = await runError(p, 'customer_id,n', ['1,5', '1,6'], JAN)
    expect(refused).toBeInstanceOf(BatchRejectedError)
    expect(await p.deps.state.getSourceTypes('customers')).toBeUndefined()
  })

  it('with the record lost, a dimension of dates is not read another way: ambiguous values are refused', async () => {
    const p = await project()
    await run(p, 'customer_id,d', ['1,13/02/2024', '2,01/02/2024'], JAN)
    rmSync(join(p.project.state.path, 'customers', 'source-types.json'))
    const error = await runError(p, 'customer_id,d', ['2,01/02/2024', '3,03/04/2024'], APR)
    expect(error.message).toMatch(/^customers: column d of customers\.csv holds dates that read two ways/)
    expect(await history(p, 'customer_id,d')).toEqual([
      ['1', '2024-02-13'],
      ['2', '2024-02-01'],
    ])
  })
})
