import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Browser, chromiumAvailable, type OpenedPage } from '../support/chromium.ts'
import { cliEnvironment } from '../support/cli-process.ts'

/**
 * `dimsync report` and `history --format html` written by the real CLI and opened in headless Chromium: the page
 * says what the tables hold, draws its charts, logs no error, requests nothing, and runs no script a value
 * carried in. Screenshots are kept in .ci/out/report-*.png.
 */

const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
const SCREENSHOTS = join(ROOT, '.ci', 'out')
const available = chromiumAvailable()

let browser: Browser | undefined
const folders: string[] = []
beforeAll(async () => {
  if (available) browser = await Browser.start()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

/** A project folder (a copy of `example`, or empty with `yaml`). */
function project(yaml?: string, example?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dimsync-report-'))
  folders.push(dir)
  if (example !== undefined) cpSync(join(ROOT, 'examples', example), dir, { recursive: true })
  if (yaml !== undefined) writeFileSync(join(dir, 'dimsync.yaml'), yaml)
  mkdirSync(join(dir, 'data'), { recursive: true })
  return dir
}

function dimsync(dir: string, ...args: string[]): string {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: cliEnvironment(),
    maxBuffer: 16 * 1024 * 1024,
  })
  if (r.status !== 0) throw new Error(`dimsync ${args.join(' ')} failed (${r.status}): ${r.stderr}`)
  return r.stdout
}

const csv = (dir: string, name: string, lines: readonly string[]) =>
  writeFileSync(join(dir, 'data', name), `${lines.join('\n')}\n`)

/** Opens a page and requires what every page must be: no error, no request, no dialog. */
async function open(file: string, name: string): Promise<OpenedPage> {
  const page = await browser!.open(file, join(SCREENSHOTS, `report-${name}.png`))
  expect(page.errors).toEqual([])
  expect(page.requests).toEqual([])
  expect(page.dialogs).toEqual([])
  // Every chart container got its canvas (uPlot draws one per chart).
  expect(page.canvases).toBe(page.chartContainers)
  return page
}

/** The page's text with runs of white space as one space. */
const flat = (page: OpenedPage) => page.text.replace(/\s+/g, ' ')

describe.runIf(available)('dimsync report in Chromium', () => {
  it('the quickstart: both tables, their changes per day, depth and runs; a key timeline', async () => {
    const dir = project(undefined, 'quickstart')
    rmSync(join(dir, '.dimsync'), { recursive: true, force: true })
    for (const table of ['customers', 'customers_invalidate'])
      dimsync(
        dir,
        'backfill',
        '--table',
        table,
        '--files',
        'data/customers_*.csv',
        '--time-from-name',
        'customers_%Y-%m-%dT%H%M.csv',
      )
    expect(dimsync(dir, 'report')).toMatch(
      /^report written to report\.html: 2 table\(s\), 0 fact table\(s\), \d+ KB$/m,
    )
    const page = flat(await open(join(dir, 'report.html'), 'quickstart'))
    expect(page).toContain('customers → dim_customer')
    expect(page).toContain('customers_invalidate → dim_customer_invalidate')
    expect(page).toContain('Versions opened and closed per day')
    // dim_customer: 5 versions of 4 keys (Ana twice); the invalidate table closed Carla on 2024-03-10.
    expect(page).toMatch(/5 versions 4 keys 4 live keys 0 deleted keys now 1 \/ 2 \/ 2 depth/)
    expect(page).toMatch(/5 versions 4 keys 3 live keys 1 deleted keys now/)
    expect(page).toContain('day deleted keys restored 2024-03-10 1 0 all days 1 0')
    expect(page).toContain('This table deletes no key (deletes: ignore).')
    expect(page).toMatch(/Last runs .* succeeded/)

    dimsync(dir, 'report', '--table', 'customers', '--key', '101', '--out', 'key.html')
    const key = flat(await open(join(dir, 'key.html'), 'quickstart-key'))
    expect(key).toContain('customers → dim_customer, key 101')
    expect(key).toContain('#1 2024-01-01 09:00:00 2024-03-10 14:30:00 Ana South')
    expect(key).toContain('#4 2024-03-10 14:30:00 current Ana North')

    writeFileSync(
      join(dir, 'history.html'),
      dimsync(dir, 'history', 'customers', '--key', '101', '--format', 'html'),
    )
    const history = flat(await open(join(dir, 'history.html'), 'quickstart-history'))
    expect(history).toContain('Versions and attribute values over business time')
    expect(history).toContain('#4 2024-03-10 14:30:00 current Ana North')
  })

  it('a change feed with late events: the late keys and the correction on the day of their batch', async () => {
    const dir = project(`version: 1
tables:
  - name: customers
    source: { type: file, path: data/changes.csv }
    target: dim_customer
    key: customer_id
    extract: { mode: changes, sequence: seq }
    valid_from: { column: changed_at }
`)
    const header = 'Op,seq,changed_at,customer_id,region'
    csv(dir, 'changes.csv', [
      header,
      'I,1,2024-01-01T00:00:00Z,1,South',
      'U,2,2024-01-05T00:00:00Z,1,North',
      'I,3,2024-01-01T00:00:00Z,2,East',
      'U,4,2024-01-05T00:00:00Z,2,West',
    ])
    dimsync(dir, 'run', '--extracted-at', '2024-02-01T00:00:00Z')
    // Late: key 1 was in the middle on day 3; key 2's move of day 5 was to South, not West.
    csv(dir, 'changes.csv', [header, 'U,5,2024-01-03T00:00:00Z,1,Middle', 'U,6,2024-01-05T00:00:00Z,2,South'])
    dimsync(dir, 'run', '--extracted-at', '2024-02-02T00:00:00Z')
    dimsync(dir, 'report', '--key', '1')
    const page = flat(await open(join(dir, 'report.html'), 'change-feed'))
    expect(page).toContain('Late events and corrections per day')
    expect(page).toContain('day late keys corrected versions 2024-02-02 2 0 all days 2 0')
    expect(page).toContain('day opened closed 2024-01-05 2 2 2024-01-03 1 1 2024-01-01 2 0 all days 5 3')
    expect(page).toContain('customers → dim_customer, key 1')
    expect(page).toMatch(/#\d+ 2024-01-03 00:00:00 2024-01-05 00:00:00 Middle/)
  })

  it('a bitemporal table: the superseded row, and the key drawn on both time axes', async () => {
    const dir = project(undefined, 'bitemporal')
    csv(dir, 'customer_changes.csv', [
      'Op,seq,changed_at,customer_id,city',
      'I,1,2023-12-01T00:00:00Z,1,Paris',
      'U,2,2024-01-01T00:00:00Z,1,Lyon',
    ])
    dimsync(dir, 'run', '--extracted-at', '2024-01-02T00:00:00Z')
    csv(dir, 'customer_changes.csv', [
      'Op,seq,changed_at,customer_id,city',
      'U,3,2024-01-01T00:00:00Z,1,Lille',
    ])
    dimsync(dir, 'run', '--extracted-at', '2024-01-03T00:00:00Z')
    dimsync(dir, 'report', '--key', '1')
    const page = flat(await open(join(dir, 'report.html'), 'bitemporal'))
    expect(page).toContain('customers → dim_customer (bitemporal)')
    // The second run's correction recomputed key 1 and superseded its row Lyon.
    expect(page).toContain('day late keys corrected versions 2024-01-03 1 1 all days 1 1')
    expect(page).toContain('2 version(s), and 1 row(s) superseded in system time')
    expect(page).toContain('Business time across, system time down')
    expect(page).toMatch(/#\d+ 2024-01-01 00:00:00 current \S+ \S+ now Lille/)
  })

  it('a fact: facts per event day, the share on the unknown member; a value that is a script stays text', async () => {
    const evil = '<script>alert(1)</script>'
    const dir = project(`version: 1
tables:
  - name: customers
    source: { type: file, path: data/customers.csv }
    key: customer_id
facts:
  - name: orders
    source: { type: file, path: data/orders.csv }
    grain: order_id
    event_time: ordered_at
    measures: [amount]
    references:
      - { dimension: customers, key: customer_id, as: customer }
`)
    csv(dir, 'customers.csv', ['customer_id,name', `101,"${evil}"`, '102,Bruno'])
    csv(dir, 'orders.csv', [
      'order_id,customer_id,ordered_at,amount',
      '1,101,2024-02-01T10:00:00Z,10',
      '2,999,2024-02-01T11:00:00Z,5',
      '3,102,2024-02-03T09:00:00Z,7',
      '4,102,2024-02-03T10:00:00Z,7',
    ])
    dimsync(dir, 'run', '--extracted-at', '2024-01-01T00:00:00Z')
    dimsync(dir, 'report', '--out', 'all.html')
    const page = flat(await open(join(dir, 'all.html'), 'fact'))
    expect(page).toContain('orders → fact_orders (fact)')
    expect(page).toContain('4 facts 2 event days 25% on the unknown customers (key 0)')
    expect(page).toContain('event day facts unknown customers 2024-02-03 2 0 2024-02-01 2 1 all days 4 1')

    dimsync(dir, 'report', '--table', 'customers', '--key', '101', '--out', 'evil.html')
    const key = flat(await open(join(dir, 'evil.html'), 'escaped-value'))
    expect(key).toContain(`#1 2024-01-01 00:00:00 current ${evil}`)
  })
})
