import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cliInTemporaryFolder } from '../support/cli-process.ts'

/* change_detection: { version_column } end to end (real CLI processes, DuckDB). */

const cli = cliInTemporaryFolder('dimsync-cli-version-column-')

const config = (onSameVersion: string, deletes = 'ignore') =>
  writeFileSync(
    join(cli.work, 'dimsync.yaml'),
    'version: 1\ntables:\n  - name: customers\n    source: { type: file, path: customers.csv }\n' +
      `    key: customer_id\n    deletes: ${deletes}\n` +
      `    change_detection: { version_column: updated_at, on_same_version: ${onSameVersion} }\n`,
  )
const customers = (rows: string[]) =>
  writeFileSync(join(cli.work, 'customers.csv'), ['customer_id,region,updated_at', ...rows, ''].join('\n'))

describe('change_detection (real process)', () => {
  it('refuses a change at the same updated_at with nothing written; with overwrite the version takes it in place', () => {
    config('refuse')
    customers(['101,South,2024-01-01T00:00:00Z'])
    expect(cli.dimsync('run', '--extracted-at', '2024-02-01T00:00:00Z').code).toBe(0)
    customers(['101,North,2024-01-01T00:00:00Z'])
    const refused = cli.dimsync('run', '--extracted-at', '2024-02-02T00:00:00Z')
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(
      /table customers: batch \S+: key customer_id=101: version column updated_at is 2024-01-01 00:00:00.* \(stored\) then 2024-01-01 00:00:00.* \(this batch\): the row changed .* on_same_version: overwrite/,
    )
    expect(cli.dimsync('history', 'customers').out).toMatch(/region="South"/)

    config('overwrite')
    // The refused batch stays staged and is merged first by the next run.
    const run = cli.dimsync('run', '--extracted-at', '2024-02-03T00:00:00Z')
    expect(run.code, run.err).toBe(0)
    const history = cli.dimsync('history', 'customers').out
    expect(history).toMatch(/^dim_customers: 1 version of 1 key$/m)
    expect(history).toMatch(/#1 +2024-02-01 00:00:00 → current +region="North"/)
  }, 120_000)

  it.each(['invalidate', 'new_record'])(
    'overwrite never rewrites a version a delete ended (deletes: %s): a key back at the same version with other content is refused',
    (deletes) => {
      config('overwrite', deletes)
      customers(['101,South,2024-01-01T00:00:00Z', '102,North,2024-01-01T00:00:00Z'])
      expect(cli.dimsync('run', '--extracted-at', '2024-02-01T00:00:00Z').code).toBe(0)
      customers(['102,North,2024-01-01T00:00:00Z'])
      expect(cli.dimsync('run', '--extracted-at', '2024-02-02T00:00:00Z').code).toBe(0)
      const before = cli.dimsync('history', 'customers').out
      customers(['101,North,2024-01-01T00:00:00Z', '102,North,2024-01-01T00:00:00Z'])
      const back = cli.dimsync('run', '--extracted-at', '2024-02-03T00:00:00Z')
      expect(back.code).toBe(1)
      expect(back.err).toMatch(
        /table customers: batch \S+: key customer_id=101: version column updated_at is 2024-01-01 00:00:00.* \(stored\) then .* \(this batch\): .*a row after a delete ended that version.*nothing was written/,
      )
      // The version the delete ended still says what the source said while it was current.
      expect(cli.dimsync('history', 'customers').out).toBe(before)
      expect(before).toMatch(/#1 +2024-02-01 00:00:00 → 2024-02-02 00:00:00 +region="South"/)
    },
    120_000,
  )

  it('plan and run count a version overwritten in place (it is not unchanged)', () => {
    config('overwrite')
    customers(['101,South,2024-01-01T00:00:00Z', '102,North,2024-01-01T00:00:00Z'])
    expect(cli.dimsync('run', '--extracted-at', '2024-02-01T00:00:00Z').code).toBe(0)
    customers(['101,North,2024-01-01T00:00:00Z', '102,North,2024-01-01T00:00:00Z'])
    const plan = cli.dimsync('plan')
    expect(plan.code, plan.err).toBe(0)
    expect(plan.out).toMatch(
      /^customers: 2 rows extracted; would add 0 new keys, change 0, overwrite 1, delete 0, leave 1 unchanged/m,
    )
    const run = cli.dimsync('run', '--extracted-at', '2024-02-02T00:00:00Z')
    expect(run.code, run.err).toBe(0)
    expect(run.out).toMatch(
      /; 0 versions inserted, 0 closed, 1 overwritten, 0 keys deleted, 1 unchanged, 0 late keys$/m,
    )
    expect(cli.dimsync('history', 'customers').out).toMatch(
      /#1 +2024-02-01 00:00:00 → current +region="North"/,
    )
  }, 120_000)

  it('refuses a text version column with nothing written: "v10" sorts before "v9" as text, so growth cannot be told', () => {
    writeFileSync(
      join(cli.work, 'dimsync.yaml'),
      'version: 1\ntables:\n  - name: customers\n    source: { type: file, path: customers.csv }\n' +
        '    key: customer_id\n    change_detection: { version_column: revision }\n',
    )
    writeFileSync(join(cli.work, 'customers.csv'), 'customer_id,region,revision\n101,South,v9\n')
    const refused = cli.dimsync('run', '--extracted-at', '2024-02-01T00:00:00Z')
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(
      /table customers: version column "revision" is VARCHAR: change_detection compares versions as numbers, dates or times/,
    )
    expect(cli.dimsync('history', 'customers').out).not.toMatch(/region=/)
  }, 120_000)
})
