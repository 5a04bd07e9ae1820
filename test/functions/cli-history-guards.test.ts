import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runDimsync } from '../support/cli-process.ts'

/**
 * Edits and accidents that used to bend history silently, through the real CLI in embedded mode (DuckDB): each
 * one either applies without a version per key or stops the run, naming what changed and the way out.
 */

let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-guards-'))
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsync(...args: string[]): { code: number | null; out: string; err: string } {
  return runDimsync(work, args)
}

/** dimsync.yaml with one table `c`, read from c.csv; `lines` are its further options (indented by this). */
function config(lines: readonly string[], warehouse = ''): void {
  const table = ['  - name: c', '    source: { type: file, path: c.csv }', ...lines.map((l) => `    ${l}`)]
  writeFileSync(join(work, 'dimsync.yaml'), ['version: 1', warehouse, 'tables:', ...table, ''].join('\n'))
}

function csv(header: string, ...rows: string[]): void {
  writeFileSync(join(work, 'c.csv'), [header, ...rows].join('\n') + '\n')
}

/** The versions of table c as `history --format json` gives them. */
function versions(): Record<string, unknown>[] {
  const history = dimsync('history', 'c', '--format', 'json')
  expect(history.code, history.err).toBe(0)
  return history.out
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

/** `dimsync run` of table c that succeeds; its summary line. */
function runs(at: string): string {
  const run = dimsync('run', '--table', 'c', '--extracted-at', at)
  expect(run.code, run.err).toBe(0)
  return run.out
}

/** `dimsync run` of table c that is refused with one line; that line. */
function refused(at: string): string {
  const run = dimsync('run', '--table', 'c', '--extracted-at', at)
  expect(run.code, run.out).toBe(1)
  const lines = run.err.split('\n').filter((line) => line.startsWith('dimsync: '))
  expect(lines).toHaveLength(1)
  return lines[0]!
}

describe('a change of key', () => {
  it('is refused before anything is written, naming the change and the way out; the key put back loads on', () => {
    config(['key: id'])
    csv('id,name', '1,a')
    runs('2024-01-01')
    const before = versions()

    config(['key: [id, name]'])
    csv('id,name', '1,z')
    expect(refused('2024-01-02')).toBe(
      'dimsync: table c: key (id) → (id, name) since dim_c was built (recorded by batch ' +
        `${String(before[0]!.dimsync_batch_id)}); the versions already written cannot be read that way, so ` +
        'nothing was written. Put key back to (id) in the config, or load table c into a new target ' +
        '(target: dim_c_v2) to start its history over (see docs/errors.md#the-config-changed-under-a-loaded-table)',
    )
    expect(versions()).toEqual(before)

    config(['key: id'])
    expect(runs('2024-01-03')).toMatch(/1 versions inserted, 1 closed, 0 keys deleted, 0 unchanged/)
    const after = versions()
    expect(after.map((v) => [v.id, v.name, v.valid_from, v.valid_to, v.is_current])).toEqual([
      [1, 'a', '2024-01-01 00:00:00+00', '2024-01-03 00:00:00+00', false],
      [1, 'z', '2024-01-03 00:00:00+00', null, true],
    ])
  })

  it('a composite key shortened is refused too, and a key column the dimension lacks', () => {
    config(['key: [id, region]'])
    csv('id,region,name', '1,eu,a')
    runs('2024-01-01')
    const before = versions()
    config(['key: id'])
    expect(refused('2024-01-02')).toContain('table c: key (id, region) → (id) since dim_c was built')
    config(['key: [id, name]'])
    expect(refused('2024-01-02')).toContain('table c: key (id, region) → (id, name) since dim_c was built')
    expect(versions()).toEqual(before)
  })
})

describe('a change of what is tracked, or of the extract', () => {
  it('adding a tracked column rehashes the current versions once: no new version for unchanged data, and the run says so', () => {
    config(['key: id', 'tracked: [name]'])
    csv('id,name,price', '1,a,10', '2,b,20')
    runs('2024-01-01')
    const before = versions()
    config(['key: id', 'tracked: [name, price]'])
    expect(runs('2024-01-02')).toMatch(
      /0 versions inserted, 0 closed, 0 keys deleted, 2 unchanged, 0 late keys; config changed: tracked columns \[name\] → \[name, price\] \(current versions rehashed, no version opened by the change itself\)$/m,
    )
    expect(versions().map((v) => v.dimsync_sk)).toEqual(before.map((v) => v.dimsync_sk))
    // A real change of the newly tracked column opens a version; the next unchanged run says nothing of the config.
    csv('id,name,price', '1,a,11', '2,b,20')
    expect(runs('2024-01-03')).toMatch(
      /1 versions inserted, 1 closed, 0 keys deleted, 1 unchanged, 0 late keys$/m,
    )
    expect(runs('2024-01-04')).toMatch(
      /0 versions inserted, 0 closed, 0 keys deleted, 2 unchanged, 0 late keys$/m,
    )
    expect(versions()).toHaveLength(3)
  })

  it('removing a tracked column, or moving one to keep_first, opens no version either', () => {
    config(['key: id', 'tracked: [name, price]'])
    csv('id,name,price', '1,a,10', '2,b,20')
    runs('2024-01-01')
    config(['key: id', 'tracked: [name]'])
    expect(runs('2024-01-02')).toContain(
      '0 versions inserted, 0 closed, 0 keys deleted, 2 unchanged, 0 late keys; config changed: tracked columns [name, price] → [name]',
    )
    config(['key: id', 'tracked: { all_except: [] }', 'keep_first: [price]'])
    expect(runs('2024-01-03')).toContain('0 versions inserted, 0 closed, 0 keys deleted, 2 unchanged')
    expect(versions()).toHaveLength(2)
  })
})

describe('warehouse.schema', () => {
  it('a schema other than main is created in a fresh DuckDB warehouse', () => {
    config(['key: id'], 'warehouse: { type: duckdb, path: w.duckdb, schema: analytics }')
    csv('id,name', '1,a')
    const run = dimsync('run', '--extracted-at', '2024-01-01')
    expect(run.err).not.toContain('dimsync:')
    expect(run.code).toBe(0)
    expect(run.out).toContain('1 versions inserted')
    expect(dimsync('history', 'c').out).toContain('dim_c: 1 version of 1 key')
  })
})
