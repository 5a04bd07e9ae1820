import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cliInTemporaryFolder } from '../support/cli-process.ts'

/* renamed: { old: new } end to end (real CLI processes, DuckDB): the rename opens no version and says so. */

const cli = cliInTemporaryFolder('dimsync-cli-renamed-')

const config = (extra: string) =>
  writeFileSync(
    join(cli.work, 'dimsync.yaml'),
    `version: 1\ntables:\n  - name: customers\n    source: { type: file, path: customers.csv }\n    key: customer_id\n${extra}`,
  )
const customers = (header: string, rows: string[]) =>
  writeFileSync(join(cli.work, 'customers.csv'), [header, ...rows, ''].join('\n'))

describe('renamed (real process)', () => {
  it('a run after the source renamed a column keeps every version and says the tracked columns moved', () => {
    config('')
    customers('customer_id,region', ['101,South', '102,North'])
    expect(cli.dimsync('run', '--extracted-at', '2024-01-01T00:00:00Z').code).toBe(0)
    customers('customer_id,region', ['101,West', '102,North'])
    expect(cli.dimsync('run', '--extracted-at', '2024-02-01T00:00:00Z').code).toBe(0)
    const before = cli.dimsync('history', 'customers').out

    config('    renamed: { region: sales_area }\n')
    customers('customer_id,sales_area', ['101,West', '102,North'])
    const run = cli.dimsync('run', '--extracted-at', '2024-03-01T00:00:00Z')
    expect(run.code, run.err).toBe(0)
    expect(run.out).toMatch(/; 0 versions inserted, 0 closed, 0 keys deleted, 2 unchanged, 0 late keys/)
    expect(run.out).toContain('config changed: tracked columns [region] → [sales_area]')
    expect(cli.dimsync('history', 'customers').out).toBe(before.replaceAll('region=', 'sales_area='))

    // Running again with the same config is a no-op.
    const again = cli.dimsync('run', '--extracted-at', '2024-04-01T00:00:00Z')
    expect(again.code, again.err).toBe(0)
    expect(again.out).toMatch(/; 0 versions inserted, 0 closed, 0 keys deleted, 2 unchanged, 0 late keys$/m)
  }, 120_000)

  it('a rename with a type change in the same run: the refusal names evolve, and evolve renames then rewrites the column', () => {
    config('')
    customers('customer_id,code', ['101,1', '102,2'])
    expect(cli.dimsync('run', '--extracted-at', '2024-01-01T00:00:00Z').code).toBe(0)

    config('    renamed: { code: zone }\n')
    customers('customer_id,zone', ['101,1', '102,x20'])
    const refused = cli.dimsync('run', '--extracted-at', '2024-02-01T00:00:00Z')
    expect(refused.code).toBe(1)
    expect(refused.err).toContain('dimsync evolve --table customers --column zone')
    expect(cli.dimsync('history', 'customers').out).toMatch(/code=1/)

    const evolve = cli.dimsync('evolve', '--table', 'customers', '--column', 'zone')
    expect(evolve.code, evolve.err).toBe(0)
    const run = cli.dimsync('run', '--extracted-at', '2024-03-01T00:00:00Z')
    expect(run.code, run.err).toBe(0)
    const history = cli.dimsync('history', 'customers').out
    expect(history).toMatch(/#1 +2024-01-01 00:00:00 → current +zone="1"/)
    expect(history).toMatch(/#2 +2024-01-01 00:00:00 → 2024-02-01 00:00:00 +zone="2"/)
    expect(history).toMatch(/ +2024-02-01 00:00:00 → current +zone="x20"/)
  }, 120_000)
})
