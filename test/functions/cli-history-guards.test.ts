import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/**
 * Edits and accidents that used to bend history silently, through the real CLI in embedded mode (DuckDB): each
 * one either applies without a version per key or stops the run, naming what changed and the way out.
 */

const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-guards-'))
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsync(...args: string[]): { code: number | null; out: string; err: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: work,
    encoding: 'utf8',
    env: { ...process.env, CI: '1' },
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

/** dimsync.yaml with one table `c`, read from c.csv; `lines` are its further options (indented by this). */
function config(lines: readonly string[], warehouse = ''): void {
  const table = ['  - name: c', '    source: { type: file, path: c.csv }', ...lines.map((l) => `    ${l}`)]
  writeFileSync(join(work, 'dimsync.yaml'), ['version: 1', warehouse, 'tables:', ...table, ''].join('\n'))
}

function csv(header: string, ...rows: string[]): void {
  writeFileSync(join(work, 'c.csv'), [header, ...rows].join('\n') + '\n')
}

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
