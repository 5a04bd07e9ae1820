import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-'))
  cpSync(join(ROOT, 'examples', 'quickstart'), work, {
    recursive: true,
    filter: (p) => !p.includes('.dimsync'),
  })
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsync(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: work,
    encoding: 'utf8',
    env: { ...process.env, CI: '1' },
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}
const BACKFILL = ['--files', 'data/customers_*.csv', '--time-from-name', 'customers_%Y-%m-%dT%H%M.csv']

describe('dimsync CLI (real process, quickstart data)', () => {
  it('backfill then history prints the quickstart timeline: five versions, surrogate keys 1-5', () => {
    expect(dimsync('backfill', '--table', 'customers', ...BACKFILL).code).toBe(0)
    const history = dimsync('history', 'customers')
    expect(history.code).toBe(0)
    expect(history.out).toBe(
      [
        'dim_customer: 5 versions of 4 keys',
        'customer_id=101',
        '  #1      2024-01-01 09:00:00 → 2024-03-10 14:30:00  name="Ana" region="South"',
        '  #4      2024-03-10 14:30:00 → current              name="Ana" region="North"',
        'customer_id=102',
        '  #2      2024-01-01 09:00:00 → current              name="Bruno" region="North"',
        'customer_id=103',
        '  #3      2024-01-01 09:00:00 → current              name="Carla" region="South"',
        'customer_id=104',
        '  #5      2024-03-10 14:30:00 → current              name="Diego" region="West"',
        '',
      ].join('\n'),
    )
  })

  it('history --format json/csv, --key and --as-of', () => {
    dimsync('backfill', '--table', 'customers_invalidate', ...BACKFILL)
    const json = dimsync('history', 'customers_invalidate', '--key', '103', '--format', 'json')
    expect(
      json.out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toMatchObject([{ customer_id: 103, valid_to: '2024-03-10 14:30:00+00', is_current: false }])
    const csv = dimsync('history', 'customers_invalidate', '--as-of', '2024-02-01', '--format', 'csv')
    expect(csv.out.split('\n')[0]).toBe(
      'dimsync_sk,customer_id,name,region,valid_from,valid_to,is_current,is_deleted,dimsync_row_hash,dimsync_batch_id',
    )
    expect(csv.out.trim().split('\n')).toHaveLength(4)
  })

  it('run --extracted-at makes runs reproducible; plan reports changes and writes nothing', () => {
    writeFileSync(
      join(work, 'data', 'customers_2024-01-01T0900.csv'),
      'customer_id,name,region\n1,A,x\n2,B,y\n',
    )
    rmSync(join(work, 'data', 'customers_2024-03-10T1430.csv'))
    expect(dimsync('run', '--table', 'customers', '--extracted-at', '2024-01-01T00:00:00Z').code).toBe(0)
    writeFileSync(
      join(work, 'data', 'customers_2024-01-01T0900.csv'),
      'customer_id,name,region\n1,A,z\n2,B,y\n3,C,w\n',
    )
    const plan = dimsync('plan', '--table', 'customers', '--sql')
    expect(plan.code).toBe(0)
    expect(plan.out).toContain(
      'customers: 3 rows extracted; would add 1 new keys, change 1, delete 0, leave 1 unchanged',
    )
    expect(plan.out).toContain('-- close changed current versions')
    expect(dimsync('history', 'customers').out).toContain('dim_customer: 2 versions of 2 keys\n')
  })

  it('errors are one clear line and a non-zero exit code', () => {
    const unknown = dimsync('history', 'nope')
    expect(unknown.code).toBe(1)
    expect(unknown.err).toMatch(
      /^dimsync: table nope is not in .*dimsync\.yaml \(tables: customers, customers_invalidate\)\n$/,
    )
    writeFileSync(
      join(work, 'dimsync.yaml'),
      readFileSync(join(work, 'dimsync.yaml'), 'utf8').replace('key: customer_id', 'key: custmer_id'),
    )
    const bad = dimsync('validate')
    expect(bad.code).toBe(1)
    expect(bad.err).toContain(
      'tables[0].key[0]: column "custmer_id" is not in the source; did you mean "customer_id"?',
    )
    const missing = dimsync('run', '--config', 'missing.yaml')
    expect(missing.err).toMatch(
      /^dimsync: .*missing\.yaml: config file not found \(give another with --config\)\n$/,
    )
  })

  it('--help lists every command', () => {
    const help = dimsync('--help')
    for (const command of ['run', 'backfill', 'plan', 'history', 'validate'])
      expect(help.out).toContain(command)
  })
})
