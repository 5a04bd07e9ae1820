import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { LocalStagingStore } from '../../lib/adapters/staging/local-staging-store.ts'
import { runDimsync } from '../support/cli-process.ts'

const ROOT = join(import.meta.dirname, '..', '..')
let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-'))
  cpSync(join(ROOT, 'examples', 'quickstart'), work, {
    recursive: true,
    filter: (p) => !p.includes('.dimsync'),
  })
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsyncWith(env: Record<string, string>, ...args: string[]) {
  return runDimsync(work, args, env)
}
const dimsync = (...args: string[]) => dimsyncWith({}, ...args)
/** A config of its own in the work folder: `tables` is the YAML list of tables. */
function writeConfig(tables: string): void {
  writeFileSync(join(work, 'dimsync.yaml'), `version: 1\ntables:\n${tables}`)
}
const ONE_SNAPSHOT = 'data/customers_2024-01-01T0900.csv'
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
    // The quickstart's tables read the newest snapshot file.
    const newest = join(work, 'data', 'customers_2024-03-10T1430.csv')
    writeFileSync(newest, 'customer_id,name,region\n1,A,x\n2,B,y\n')
    expect(dimsync('run', '--table', 'customers', '--extracted-at', '2024-01-01T00:00:00Z').code).toBe(0)
    writeFileSync(newest, 'customer_id,name,region\n1,A,z\n2,B,y\n3,C,w\n')
    const plan = dimsync('plan', '--table', 'customers', '--sql')
    expect(plan.code).toBe(0)
    expect(plan.out).toContain(
      'customers: 3 rows extracted; would add 1 new keys, change 1, delete 0, leave 1 unchanged',
    )
    expect(plan.out).toContain('-- close changed current versions')
    // A guarded statement shows the condition it runs under: a run skips it otherwise.
    expect(plan.out).toMatch(
      /-- surrogate keys: record the highest key given out[^\n]*\n-- runs only if: NOT EXISTS \(SELECT 1 FROM "main"\."dim_customer_dimsync_keys"\)\n/,
    )
    expect(dimsync('history', 'customers').out).toContain('dim_customer: 2 versions of 2 keys\n')
  })

  it('plan says a batch an earlier run left staged is merged first by run and left out of its figures', () => {
    const newest = join(work, 'data', 'customers_2024-03-10T1430.csv')
    const table = ['--table', 'customers_invalidate']
    writeFileSync(newest, 'customer_id,name,region\n1,A,x\n2,B,y\n3,C,z\n')
    expect(dimsync('run', ...table, '--extracted-at', '2024-01-01T00:00:00Z').code).toBe(0)
    writeFileSync(newest, 'customer_id,name,region\n1,A,x\n')
    const refused = dimsync('run', ...table, '--extracted-at', '2024-02-01T00:00:00Z')
    expect(refused.code).toBe(1)
    const staged = /batch (\d{8}T\d{6}\.\d{3}Z-\w+) would delete/.exec(refused.err)?.[1]
    expect(staged, refused.err).toBeDefined()
    writeFileSync(newest, 'customer_id,name,region\n1,A,x\n2,B,y\n3,C,w\n')
    const plan = dimsync('plan', ...table)
    expect(plan.code, plan.err).toBe(0)
    expect(plan.out).toContain('customers_invalidate: 3 rows extracted; would add 0 new keys, change 1')
    expect(plan.out).toContain(
      `warning: batch ${staged} was staged by an earlier run and not merged: dimsync run merges it (or is refused by it) before this extract; these figures leave it out`,
    )
  })

  it(
    'run --extracted-at again on the same snapshot, and a finished backfill again, succeed as already applied',
    { timeout: 180_000 },
    () => {
      expect(dimsync('backfill', '--table', 'customers', ...BACKFILL).code).toBe(0)
      const history = dimsync('history', 'customers').out
      const backfill = dimsync('backfill', '--table', 'customers', ...BACKFILL)
      expect(backfill.code).toBe(0)
      expect(backfill.out).toMatch(
        /^customers: already applied: batch 20240101T090000\.000Z-\S+ is the same snapshot as batch 20240101T090000\.000Z-\S+, merged at the same extraction time; nothing changed\ncustomers: already applied: batch 20240310T143000/,
      )
      const run = dimsync('run', '--table', 'customers', '--extracted-at', '2024-03-10T14:30:00Z')
      expect(run.code).toBe(0)
      expect(run.out).toMatch(/^customers: already applied: batch \S+ is the same snapshot as batch \S+/)
      expect(dimsync('history', 'customers').out).toBe(history)
      expect(readdirSync(join(work, '.dimsync', 'staging', 'customers'))).toEqual([])
    },
  )

  it(
    'discard --list shows committed and uncommitted batches by id, and discard --batch removes one of each kind',
    { timeout: 120_000 },
    async () => {
      writeConfig(
        `  - name: customers\n    source: { type: file, path: ${ONE_SNAPSHOT} }\n    key: customer_id\n`,
      )
      const staging = new LocalStagingStore({ root: join(work, '.dimsync', 'staging') })
      const committed = await staging.beginBatch('customers', '20240101T000000.000Z-aaaaaa')
      await committed.commit({
        table: 'customers',
        batchId: committed.batchId,
        extractedAt: '2024-01-01T00:00:00.000Z',
        mode: 'full',
        rowCount: 0,
        columns: [],
        sourceDescription: 'test',
      })
      // What an extract killed before its commit leaves: a part and no manifest.
      const died = await staging.beginBatch('customers', '20240201T000000.000Z-bbbbbb')
      writeFileSync(join(died.scratchDir, 'part.parquet'), 'half a part')
      await died.addPart(join(died.scratchDir, 'part.parquet'), 1)

      const list = dimsync('discard', '--table', 'customers', '--list')
      expect(list.code).toBe(0)
      expect(list.out).toMatch(
        /^customers: 20240101T000000\.000Z-aaaaaa committed, not merged: extracted at 2024-01-01T00:00:00\.000Z, 0 rows\n/,
      )
      expect(list.out).toMatch(
        /\ncustomers: 20240201T000000\.000Z-bbbbbb uncommitted: an extract at work, or one that died \(last written at \S+\)\n$/,
      )
      for (const id of ['20240201T000000.000Z-bbbbbb', '20240101T000000.000Z-aaaaaa'])
        expect(dimsync('discard', '--table', 'customers', '--batch', id).out).toBe(
          `customers: discarded 1 staged batch(es): ${id}\n`,
        )
      expect(dimsync('discard', '--table', 'customers', '--list').out).toBe('customers: no staged batch\n')
    },
  )

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
      /^dimsync: .*missing\.yaml: config file not found \(give another with --config\) \(see docs\/errors\.md#the-config-is-invalid\)\n$/,
    )
  })

  it('--help lists every command', () => {
    const help = dimsync('--help')
    for (const command of ['run', 'backfill', 'plan', 'history', 'validate'])
      expect(help.out).toContain(command)
  })

  it('--extracted-at and --as-of take ISO 8601 only, with calendar dates; nothing is loaded otherwise', () => {
    writeConfig(
      `  - name: customers\n    source: { type: file, path: ${ONE_SNAPSHOT} }\n    key: customer_id\n`,
    )
    for (const [value, why] of [
      ['2024-02-30', '"2024-02-30" is not a date: 2024-02 has no day 30'],
      ['1', '"1" is not an ISO 8601 date or date-time'],
      ['March 7', '"March 7" is not an ISO 8601 date or date-time'],
    ]) {
      const refused = dimsync('run', '--extracted-at', value!)
      expect(refused.code).toBe(1)
      expect(refused.err).toMatch(
        new RegExp(`^dimsync: --extracted-at: ${why!.replace(/[()]/g, '\\$&')}[^\n]*\n$`),
      )
    }
    const asOf = dimsync('history', 'customers', '--as-of', '2024-02-30')
    expect(asOf.err).toBe(
      'dimsync: --as-of: "2024-02-30" is not a date: 2024-02 has no day 30 (see dimsync history --help)\n',
    )
    expect(dimsync('history', 'customers').err).toMatch(/dimension dim_customers does not exist yet/)
  })

  it('a date-time without a zone is UTC, and the run says so', () => {
    writeConfig(
      `  - name: customers\n    source: { type: file, path: ${ONE_SNAPSHOT} }\n    key: customer_id\n`,
    )
    const run = dimsync('run', '--extracted-at', '2024-01-01T09:00')
    expect(run.code).toBe(0)
    expect(run.err).toContain(
      '--extracted-at 2024-01-01T09:00 has no time zone: read as UTC, 2024-01-01T09:00:00.000Z',
    )
    expect(dimsync('history', 'customers', '--format', 'csv').out).toContain(',2024-01-01 09:00:00+00,')
  })

  it('an extraction time in the future (beyond DIMSYNC_CLOCK_SKEW_SECONDS) or at the open_end sentinel is refused', () => {
    writeConfig(
      `  - name: customers\n    source: { type: file, path: ${ONE_SNAPSHOT} }\n    key: customer_id\n` +
        `    open_end: '2200-01-01T00:00:00Z'\n`,
    )
    const future = dimsync('run', '--extracted-at', '2099-01-01')
    expect(future.code).toBe(1)
    expect(future.err).toMatch(
      /^dimsync: table customers: --extracted-at 2099-01-01T00:00:00.000Z is in the future \(now is \S+, 300 s of clock skew allowed\)[^\n]*\n$/,
    )
    const sentinel = dimsyncWith(
      { DIMSYNC_CLOCK_SKEW_SECONDS: String(500 * 365 * 86400) },
      'run',
      '--extracted-at',
      '2200-01-01T00:00:00Z',
    )
    expect(sentinel.err).toBe(
      'dimsync: table customers: --extracted-at 2200-01-01T00:00:00.000Z is not before the open_end sentinel ' +
        '2200-01-01T00:00:00.000Z: its versions would look open forever\n',
    )
    expect(dimsync('history', 'customers').err).toMatch(/does not exist yet/)
    const skew = dimsyncWith({ DIMSYNC_CLOCK_SKEW_SECONDS: 'soon' }, 'run')
    expect(skew.err).toBe(
      'dimsync: environment: DIMSYNC_CLOCK_SKEW_SECONDS: expected an integer from 0 to 31622400000, got "soon" ' +
        '(see docs/errors.md#the-config-is-invalid)\n',
    )
  })

  it('argument errors are one line', () => {
    expect(dimsync('run', '--bogus').err).toBe("dimsync: unknown option '--bogus' (see dimsync run --help)\n")
    expect(dimsync('frob').err).toBe("dimsync: unknown command 'frob' (see dimsync --help)\n")
    expect(dimsync('history').err).toBe(
      "dimsync: missing required argument 'table' (see dimsync history --help)\n",
    )
    expect(dimsync('plan', '--dialect', 'x').err).toBe(
      "dimsync: --dialect: 'x' is not one of duckdb, bigquery (see dimsync plan --help)\n",
    )
    expect(dimsync('--version').code).toBe(0)
    expect(dimsync('run', '--help').code).toBe(0)
  })

  it('run without --table goes on with the other tables when one fails, then exits 1 with one line per failed table', () => {
    writeConfig(
      [
        '  - name: broken',
        '    source: { type: file, path: data/nothing_*.csv }',
        '    key: customer_id',
        '  - name: customers',
        `    source: { type: file, path: ${ONE_SNAPSHOT} }`,
        '    key: customer_id',
        '  - name: wrong_key',
        `    source: { type: file, path: ${ONE_SNAPSHOT} }`,
        '    key: region',
        '',
      ].join('\n'),
    )
    const run = dimsync('run')
    expect(run.code).toBe(1)
    expect(run.out).toMatch(/^customers → dim_customers: batch \S+, 3 rows; 3 versions inserted/)
    // Off a terminal, stderr also carries the steps' log lines (timestamped).
    const lines = run.err
      .trimEnd()
      .split('\n')
      .filter((line) => !/^\d{4}-/.test(line))
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(/^dimsync: broken: no file matches data\/nothing_\*\.csv in /)
    expect(lines[1]).toMatch(/^dimsync: table wrong_key: batch \S+ has 1 duplicate keys .*region=South/)
    expect(lines[2]).toBe('dimsync: 2 of 3 tables failed: broken, wrong_key')
  })

  it('a warehouse.path that is not a DuckDB database is refused, and nothing is reported as loaded', () => {
    writeFileSync(
      join(work, 'dimsync.yaml'),
      `version: 1\nwarehouse: { type: duckdb, path: ${ONE_SNAPSHOT} }\ntables:\n` +
        `  - name: customers\n    source: { type: file, path: ${ONE_SNAPSHOT} }\n    key: customer_id\n`,
    )
    const run = dimsync('run')
    expect(run.code).toBe(1)
    expect(run.out).toBe('')
    expect(run.err).toMatch(
      /^dimsync: warehouse\.path \S+customers_2024-01-01T0900\.csv is not a DuckDB database \(it starts with "customer_id,name"\); [^\n]*\n$/,
    )
  })

  it("validate and run refuse a target that is another table's view, before anything is loaded", () => {
    writeConfig(
      [
        '  - name: customers',
        `    source: { type: file, path: ${ONE_SNAPSHOT} }`,
        '    key: customer_id',
        '    target: dim_cust',
        '  - name: current',
        `    source: { type: file, path: ${ONE_SNAPSHOT} }`,
        '    key: customer_id',
        '    target: dim_cust_current',
        '',
      ].join('\n'),
    )
    const line =
      'tables[1].target: "dim_cust_current" is the current-versions view of table customers (target dim_cust); choose another target'
    for (const command of ['validate', 'run']) {
      const refused = dimsync(command)
      expect(refused.code).toBe(1)
      expect(refused.err).toMatch(/^dimsync: \S+dimsync\.yaml: /)
      expect(refused.err).toContain(line)
      expect(refused.err.trimEnd().split('\n')).toHaveLength(1)
    }
    expect(dimsync('history', 'customers').err).toContain(line)
  })

  it('the quickstart answers every command of the README\'s "Using it" section', () => {
    const commands = [
      ['validate'],
      ['plan', '--table', 'customers', '--sql'],
      ['backfill', '--table', 'customers', ...BACKFILL],
      ['run'],
      ['history', 'customers', '--key', '101', '--as-of', '2024-02-01', '--format', 'table'],
      ['discard', '--table', 'customers'],
    ]
    const outputs = commands.map((args) => {
      const result = dimsync(...args)
      expect({ args, code: result.code, err: result.code === 0 ? '' : result.err }).toEqual({
        args,
        code: 0,
        err: '',
      })
      return result.out
    })
    expect(outputs[1]).toContain('customers: 3 rows extracted; would add 3 new keys')
    expect(outputs[3]).toMatch(
      /customers → dim_customer: batch \S+, 3 rows; 0 versions inserted, 0 closed, 0 keys deleted, 3 unchanged/,
    )
    expect(outputs[4]).toContain(
      '  #1      2024-01-01 09:00:00 → 2024-03-10 14:30:00  name="Ana" region="South"',
    )
    expect(outputs[5]).toBe('customers: discarded 0 staged batch(es)\n')
  })

  it('a valid_from column holding text fails run and validate in one line naming the row', () => {
    writeFileSync(join(work, 'data', 'changes.csv'), 'id,name,changed\n1,a,yesterday\n2,b,2024-01-01\n')
    writeConfig(
      '  - name: changes\n    source: { type: file, path: data/changes.csv }\n    key: id\n' +
        '    valid_from: { column: changed }\n',
    )
    const line =
      'changes: valid_from column changed of data/changes.csv is VARCHAR, not dates or timestamps (for example ' +
      'the row with id=1 holds yesterday); fix the values, or choose another valid_from column'
    const run = dimsync('run')
    expect(run.code).toBe(1)
    expect(run.err.split('\n').filter((l) => l.startsWith('dimsync:'))).toEqual([
      `dimsync: ${line} (see docs/errors.md#a-source-cannot-be-read)`,
    ])
    const validate = dimsync('validate')
    expect(validate.err).toMatch(
      new RegExp(
        `^dimsync: \\S+dimsync\\.yaml: tables\\[0\\] \\(changes\\): ${line.replace(/[()[\]]/g, '\\$&')}` +
          ' \\(see docs/errors\\.md#the-config-is-invalid\\)\\n$',
      ),
    )
  })

  it('backfill refuses a file dated in the future before applying any snapshot', () => {
    writeFileSync(join(work, 'data', 'customers_2099-01-01T0000.csv'), 'customer_id,name,region\n1,A,x\n')
    const backfill = dimsync('backfill', '--table', 'customers', ...BACKFILL)
    expect(backfill.code).toBe(1)
    expect(backfill.err).toMatch(
      /^dimsync: table customers: file customers_2099-01-01T0000\.csv: its time 2099-01-01T00:00:00\.000Z is in the future \(now is \S+, 300 s of clock skew allowed\)/,
    )
    expect(dimsync('history', 'customers').err).toMatch(/does not exist yet/)
  })
})
