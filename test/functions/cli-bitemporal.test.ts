import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runDimsync } from '../support/cli-process.ts'

let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-bitemporal-'))
  mkdirSync(join(work, 'data'))
  writeFileSync(
    join(work, 'dimsync.yaml'),
    [
      'version: 1',
      'warehouse: { type: duckdb, path: .dimsync/warehouse.duckdb }',
      'staging: { type: local, path: .dimsync/staging }',
      'state: { type: local, path: .dimsync/state }',
      'tables:',
      '  - name: customers',
      '    source: { type: file, path: data/customers.csv }',
      '    key: customer_id',
      '    system_time: true',
      '  - name: accounts',
      '    source: { type: file, path: data/accounts.csv }',
      '    key: account_id',
      '',
    ].join('\n'),
  )
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsync(...args: string[]) {
  return runDimsync(work, args)
}
const csv = (name: string, text: string) => writeFileSync(join(work, 'data', name), text)
const jsonLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)

describe('the CLI on a bitemporal table and on a column whose type changed', () => {
  it('history --as-of B --known-at S: what the table said then, and what it says now', () => {
    csv('customers.csv', 'customer_id,region\n101,South\n')
    expect(dimsync('run', '--table', 'customers', '--extracted-at', '2024-01-01T09:00:00Z').code).toBe(0)
    const between = new Date().toISOString()
    csv('customers.csv', 'customer_id,region\n101,North\n')
    expect(dimsync('run', '--table', 'customers', '--extracted-at', '2024-03-10T14:30:00Z').code).toBe(0)

    const regions = (...args: string[]) => {
      const r = dimsync('history', 'customers', '--format', 'json', ...args)
      expect(r.err).toBe('')
      return jsonLines(r.out).map((row) => row.region)
    }
    expect(regions()).toEqual(['South', 'North'])
    expect(regions('--known-at', between)).toEqual(['South'])
    expect(regions('--as-of', '2024-03-11', '--known-at', between)).toEqual(['South'])
    expect(regions('--as-of', '2024-03-11')).toEqual(['North'])
    const timeline = dimsync('history', 'customers').out
    expect(timeline).toMatch(
      /#1 +2024-01-01 09:00:00 → 2024-03-10 14:30:00 +region="South" +\(known \S+ \S+ → now\)/,
    )

    const refused = dimsync('history', 'accounts', '--known-at', between)
    expect(refused.code).toBe(1)
    expect(refused.err).toContain('--known-at: table accounts keeps no system time')
  })

  it('evolve names the values that would be lost and changes nothing', () => {
    csv('accounts.csv', 'account_id,code\n1,x7\n2,8\n')
    expect(dimsync('run', '--table', 'accounts', '--extracted-at', '2024-01-01T09:00:00Z').code).toBe(0)
    csv('accounts.csv', 'account_id,code\n1,7\n2,8\n')
    // A CSV column keeps the type its first load recorded; declaring another one changes it.
    const config = join(work, 'dimsync.yaml')
    writeFileSync(
      config,
      readFileSync(config, 'utf8').replace(
        'source: { type: file, path: data/accounts.csv }',
        'source: { type: file, path: data/accounts.csv, columns: { code: BIGINT } }',
      ),
    )
    const run = dimsync('run', '--table', 'accounts', '--extracted-at', '2024-02-01T09:00:00Z')
    expect(run.code).toBe(1)
    expect(run.err).toContain(
      'column "code" changed type from VARCHAR (dimension dim_accounts) to BIGINT (source)',
    )
    const evolve = dimsync('evolve', '--table', 'accounts', '--column', 'code')
    expect(evolve.code).toBe(1)
    expect(evolve.err).toContain(
      'dimsync evolve: table accounts, column code: 1 value(s) cannot become BIGINT without loss (from VARCHAR): ' +
        'account_id=1 (version 1) holds "x7". Nothing was changed.',
    )
    expect(jsonLines(dimsync('history', 'accounts', '--format', 'json').out).map((r) => r.code)).toEqual([
      'x7',
      '8',
    ])
  })
})
