import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { PG_URL, postgresReachable } from '../integration/sources/support/db-services.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-messages-'))
  writeFileSync(
    join(work, 'dimsync.yaml'),
    `version: 1
tables:
  - name: customers
    source: { type: file, path: customers.csv }
    key: customer_id
`,
  )
  writeFileSync(join(work, 'customers.csv'), 'customer_id,region\n101,South\n')
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

function dimsyncWith(env: Record<string, string>, ...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: work,
    encoding: 'utf8',
    env: { ...process.env, CI: '1', ...env },
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}
/** The lines of stderr that are not progress logs (those start with a timestamp). */
const errorLines = (err: string) => err.split('\n').filter((l) => l !== '' && !/^\d{4}-\d\d-\d\dT/.test(l))
const stagedBatches = () => {
  const folder = join(work, '.dimsync', 'staging', 'customers')
  return existsSync(folder) ? readdirSync(folder) : []
}

describe('memory limits from the environment (real process)', () => {
  it.each([
    ['DIMSYNC_DUCKDB_MEMORY_LIMIT', 'abc'],
    ['DIMSYNC_DUCKDB_MEMORY_LIMIT', '-5MB'],
    ['DIMSYNC_SOURCE_MEMORY_LIMIT', '-5MB'],
    ['DIMSYNC_SOURCE_MEMORY_LIMIT', 'abc'],
  ])('%s=%s is refused in one line before anything is extracted', (variable, value) => {
    const r = dimsyncWith({ [variable]: value }, 'run')
    expect(r.code).toBe(1)
    expect(errorLines(r.err)).toEqual([
      `dimsync: environment: ${variable}: expected a memory size above 0 with a unit, such as 112MB or 1GB ` +
        `(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), got "${value}"`,
    ])
    expect(stagedBatches()).toEqual([])
  })
})

describe.runIf(await postgresReachable())('password masking (real process, PostgreSQL)', () => {
  it('names a table whose name contains the password as it is, and never prints the password', () => {
    writeFileSync(
      join(work, 'dimsync.yaml'),
      `version: 1
tables:
  - name: pgbad
    source: { type: postgres, url_env: SOURCE_URL, table: public.pgbad_missing }
    key: id
`,
    )
    // The test server trusts every password: this one is only there to be masked.
    const url = new URL(PG_URL)
    url.password = 'bad'
    const r = dimsyncWith({ SOURCE_URL: url.toString() }, 'run')
    expect(r.code).toBe(1)
    expect(errorLines(r.err)[0]).toMatch(
      /^dimsync: table pgbad: PostgreSQL at [^ ]+: source table public\.pgbad_missing does not exist/,
    )
    expect(r.err).not.toContain(':bad@')
  })
})
