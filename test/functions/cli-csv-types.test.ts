import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

/** CSV values through the real CLI process: what `dimsync run` stores is what `dimsync history` finds. */

const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-csv-'))
  writeFileSync(
    join(work, 'dimsync.yaml'),
    'version: 1\ntables:\n  - name: cards\n    source: { type: file, path: cards.csv }\n    key: iccid\n',
  )
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

describe('dimsync run and history on a CSV of 20-digit keys', () => {
  it(
    'two keys that differ in their last digit stay two keys, and history --key finds each',
    { timeout: 120_000 },
    () => {
      writeFileSync(
        join(work, 'cards.csv'),
        'iccid,plan\n89310410106543789301,basic\n89310410106543789302,pro\n',
      )
      const run = dimsync('run', '--table', 'cards')
      expect(run.code, run.err).toBe(0)
      const history = dimsync('history', 'cards', '--key', '89310410106543789301', '--format', 'json')
      expect(history.code).toBe(0)
      expect(
        history.out
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .map((row) => [String(row.iccid), row.plan]),
      ).toEqual([['89310410106543789301', 'basic']])
    },
  )
})
