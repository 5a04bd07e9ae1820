import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runDimsync } from '../support/cli-process.ts'

let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-mirror-'))
  writeFileSync(
    join(work, 'dimsync.yaml'),
    `version: 1
tables:
  - name: customers
    source: { type: file, path: customers.csv }
    key: customer_id
    mode: mirror
`,
  )
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsync(...args: string[]) {
  return runDimsync(work, args)
}
const writeCustomers = (rows: string[]) =>
  writeFileSync(join(work, 'customers.csv'), ['customer_id,region', ...rows, ''].join('\n'))

describe('a mirror table (real process)', () => {
  it('plan and run count a row overwritten in place as overwritten, not unchanged', () => {
    writeCustomers(['101,South', '102,North'])
    expect(dimsync('run', '--extracted-at', '2024-01-01T00:00:00Z').code).toBe(0)

    writeCustomers(['101,West', '102,North', '103,East'])
    const plan = dimsync('plan')
    expect(plan.code).toBe(0)
    expect(plan.out).toBe(
      'customers: 3 rows extracted; would add 1 new keys, change 0, overwrite 1, delete 0, leave 1 unchanged, ' +
        'recompute 0 late keys (1 versions inserted, 0 closed)\n',
    )
    const run = dimsync('run', '--extracted-at', '2024-02-01T00:00:00Z')
    expect(run.code).toBe(0)
    expect(run.out).toMatch(
      /^customers → dim_customers: batch \S+, 3 rows; 1 versions inserted, 0 closed, 1 overwritten, 0 keys deleted, 1 unchanged, 0 late keys$/m,
    )

    // The same snapshot again overwrites nothing; a key absent from a full extract is removed.
    writeCustomers(['101,West', '103,East'])
    expect(dimsync('run', '--extracted-at', '2024-03-01T00:00:00Z').out).toMatch(
      /; 0 versions inserted, 1 closed, 0 overwritten, 1 keys deleted, 2 unchanged, 0 late keys$/m,
    )
  }, 120_000)
})
