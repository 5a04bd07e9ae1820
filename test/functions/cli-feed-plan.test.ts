import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cliInTemporaryFolder } from '../support/cli-process.ts'

/*
 * `dimsync plan` on a change feed (real CLI processes, DuckDB): the plan says what the batch's events would do
 * in words, changes nothing, and `--keys` shows those keys' versions before and after.
 */

const cli = cliInTemporaryFolder('dimsync-cli-feed-plan-', (work) => {
  mkdirSync(join(work, 'feed'))
  writeFileSync(
    join(work, 'dimsync.yaml'),
    `version: 1
tables:
  - name: customers
    source: { type: file, path: 'feed/*.csv' }
    key: customer_id
    extract: { mode: changes, sequence: seq, ops: { truncate: T } }
    valid_from: { column: changed_at }
`,
  )
})

const writeFeed = (name: string, rows: string[]) =>
  writeFileSync(
    join(cli.work, 'feed', name),
    ['Op,seq,changed_at,customer_id,region', ...rows, ''].join('\n'),
  )

describe('dimsync plan on a change feed (real process)', () => {
  it('says what the events would do, changes nothing, and --keys shows those keys before and after', () => {
    writeFeed('1.csv', [
      'I,1,2024-01-01T00:00:00Z,101,South',
      'I,2,2024-01-01T00:00:00Z,102,North',
      'U,3,2024-03-01T00:00:00Z,101,West',
    ])
    const first = cli.dimsync('run')
    expect(first.code, first.err).toBe(0)
    writeFeed('2.csv', [
      'U,4,2024-02-01T00:00:00Z,101,East', // late: between 101's versions
      'U,5,2024-01-01T00:00:00Z,102,Northeast', // a correction of 102's state at its change time
      'D,6,2024-04-01T00:00:00Z,102,',
      'I,7,2024-04-01T00:00:00Z,103,Central',
      'T,8,2024-05-01T00:00:00Z,,',
    ])
    const history = () => cli.dimsync('history', 'customers').out
    const before = history()

    const plan = cli.dimsync('plan', '--keys', '101,102')
    expect(plan.code, plan.err).toBe(0)
    const [line, ...keys] = plan.out.split('\n')
    expect(line).toBe(
      'customers: 8 events read, 3 keys touched; would open 2 versions and close 0, re-fold 2 late keys, ' +
        'correct 1 event in place, delete 1 key (1 delete event), apply 1 truncate; 3 events change nothing',
    )
    expect(keys.join('\n')).toMatch(
      new RegExp(
        [
          'key customer_id=101',
          '  before:',
          '    #\\d+ +2024-01-01 00:00:00 → 2024-03-01 00:00:00  region="South"',
          '    #\\d+ +2024-03-01 00:00:00 → current +region="West"',
          '  after:',
          '    #\\d+ +2024-01-01 00:00:00 → 2024-02-01 00:00:00  region="South"',
          '    #\\d+ +2024-02-01 00:00:00 → 2024-03-01 00:00:00  region="East"',
          '    #\\d+ +2024-03-01 00:00:00 → 2024-05-01 00:00:00  region="West"',
          'key customer_id=102',
          '  before:',
          '    #\\d+ +2024-01-01 00:00:00 → current +region="North"',
          '  after:',
          '    #\\d+ +2024-01-01 00:00:00 → 2024-04-01 00:00:00  region="Northeast"',
          '',
        ].join('\n'),
      ),
    )
    expect(history(), 'plan wrote nothing').toBe(before)

    // The run does what the plan said.
    const run = cli.dimsync('run')
    expect(run.code, run.err).toBe(0)
    expect(run.out).toMatch(/; 2 versions inserted, 0 closed, 1 keys deleted, 3 unchanged, 2 late keys$/m)
    // What plan showed after the merge is what the run wrote.
    const planned101 = keys.slice(keys.indexOf('  after:') + 1, keys.indexOf('key customer_id=102'))
    const written101 = cli.dimsync('history', 'customers', '--key', '101').out.split('\n').slice(2, 5)
    expect(written101.map((l) => l.trim())).toEqual(planned101.map((l) => l.trim()))
  }, 120_000)
})
