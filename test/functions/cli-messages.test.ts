import { spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { PG_URL, postgresReachable } from '../integration/sources/support/db-services.ts'
import {
  canMountTmpfs,
  mountTmpfs,
  otherUser,
  remountReadOnly,
  unmount,
} from '../support/small-file-systems.ts'
import { cliEnvironment } from '../support/cli-process.ts'

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
/** Folders a test mounted a tmpfs on, unmounted before the work folder is removed. */
const mounted: string[] = []
afterEach(() => {
  for (const dir of mounted.splice(0)) unmount(dir)
  rmSync(work, { recursive: true, force: true })
})

function dimsyncWith(env: Record<string, string>, ...args: string[]) {
  return dimsyncAs(undefined, env, ...args)
}
function dimsyncAs(
  user: { uid: number; gid: number } | undefined,
  env: Record<string, string>,
  ...args: string[]
) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: work,
    encoding: 'utf8',
    env: cliEnvironment(env),
    ...user,
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
        `(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), got "${value}" (see docs/errors.md#the-config-is-invalid)`,
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

describe.runIf(canMountTmpfs())(
  'staging and state folders on a full or read-only disk (real process, tmpfs)',
  () => {
    const mountIn = (name: string, kib: number, options: { readOnly?: boolean } = {}) => {
      const dir = join(work, name)
      mountTmpfs(dir, kib, options)
      mounted.push(dir)
      return dir
    }
    const STAGING_WAY_OUT = 'use another folder (staging.path in dimsync.yaml, or --staging)'
    const STAGING_DOCS = '\\(see docs/errors\\.md#staging-cannot-be-written-or-read\\)'
    const STATE_WAY_OUT = 'use another folder (state.path in dimsync.yaml, or --state)'

    it('a full staging disk: one line saying the disk is full; the run after space is freed merges', () => {
      const staging = mountIn('staging', 64)
      // Fill the file system to the last byte.
      spawnSync('dd', ['if=/dev/zero', `of=${join(staging, 'filler')}`, 'bs=4k'], { encoding: 'utf8' })
      const full = dimsyncWith({}, 'run', '--staging', staging)
      expect(full.code).toBe(1)
      expect(errorLines(full.err)).toEqual([
        expect.stringMatching(
          new RegExp(
            `^dimsync: table customers: batch \\S+: the disk of the staging folder ${staging} is full ` +
              `\\(writing ${staging}/customers/\\S+\\); free disk space and run again ${STAGING_DOCS}$`,
          ),
        ),
      ])
      rmSync(join(staging, 'filler'))
      const freed = dimsyncWith({}, 'run', '--staging', staging)
      expect(freed.code).toBe(0)
      expect(freed.out).toMatch(/^customers → dim_customers: batch \S+, 1 rows; 1 versions inserted/m)
    })

    it('a read-only staging folder: one line naming the read-only file system, not a missing folder', () => {
      const staging = mountIn('staging', 64, { readOnly: true })
      const r = dimsyncWith({}, 'run', '--staging', staging)
      expect(r.code).toBe(1)
      expect(errorLines(r.err)[0]).toBe(
        `dimsync: table customers: batch ${/batch (\S+?):/.exec(r.err)?.[1]}: the staging folder ${staging} is on a ` +
          `read-only file system (creating ${staging}/customers); make it writable, or ${STAGING_WAY_OUT} ` +
          '(see docs/errors.md#staging-cannot-be-written-or-read)',
      )
    })

    it('a read-only state folder, new or holding a table: one line naming the read-only file system', () => {
      const state = mountIn('state', 64, { readOnly: true })
      const fresh = dimsyncWith({}, 'run', '--state', state)
      expect(fresh.code).toBe(1)
      expect(errorLines(fresh.err)[0]).toBe(
        `dimsync: table customers: the state folder ${state} is on a read-only file system ` +
          `(creating ${state}/customers); make it writable, or ${STATE_WAY_OUT}`,
      )
      unmount(state)
      mountTmpfs(state, 64)
      expect(dimsyncWith({}, 'run', '--state', state).code).toBe(0)
      remountReadOnly(state)
      const held = dimsyncWith({}, 'run', '--state', state)
      expect(held.code).toBe(1)
      expect(errorLines(held.err)[0]).toBe(
        `dimsync: table customers: the state folder ${state} is on a read-only file system ` +
          `(creating ${state}/customers/.mutex); make it writable, or ${STATE_WAY_OUT}`,
      )
    })

    it('a full state disk: one line saying the disk is full', () => {
      const state = mountIn('state', 64)
      spawnSync('dd', ['if=/dev/zero', `of=${join(state, 'filler')}`, 'bs=4k'], { encoding: 'utf8' })
      const r = dimsyncWith({}, 'run', '--state', state)
      expect(r.code).toBe(1)
      expect(errorLines(r.err)[0]).toMatch(
        new RegExp(
          `^dimsync: table customers: the disk of the state folder ${state} is full ` +
            `\\((creating ${state}/customers\\S*|writing in ${state}/customers)\\); free disk space and run again$`,
        ),
      )
    })
  },
)

const nobody = otherUser()
describe.runIf(nobody !== undefined)(
  'staging and state folders the user may not write (real process as nobody)',
  () => {
    /** The work folder and what it holds belong to nobody, but for `owned by root` folders made after. */
    const handOver = () => {
      for (const name of ['', 'dimsync.yaml', 'customers.csv'])
        chownSync(join(work, name), nobody!.uid, nobody!.gid)
    }
    const rootFolder = (path: string) => mkdirSync(path, { recursive: true, mode: 0o755 })

    it('a staging folder owned by another user: one line saying there is no permission, and the way out', () => {
      handOver()
      const staging = join(work, 'staging')
      rootFolder(staging)
      const r = dimsyncAs(nobody, {}, 'run', '--staging', staging)
      expect(r.code).toBe(1)
      expect(errorLines(r.err)[0]).toBe(
        `dimsync: table customers: batch ${/batch (\S+?):/.exec(r.err)?.[1]}: no permission in the staging folder ` +
          `${staging} (creating ${staging}/customers); give this user read and write access to it, or use another ` +
          'folder (staging.path in dimsync.yaml, or --staging) (see docs/errors.md#staging-cannot-be-written-or-read)',
      )
    })

    it("a state folder whose table folder is another user's: one line saying there is no permission", () => {
      handOver()
      const state = join(work, 'state')
      mkdirSync(state)
      chownSync(state, nobody!.uid, nobody!.gid)
      rootFolder(join(state, 'customers'))
      const r = dimsyncAs(nobody, {}, 'run', '--state', state)
      expect(r.code).toBe(1)
      expect(errorLines(r.err)[0]).toBe(
        `dimsync: table customers: no permission in the state folder ${state} (creating ${state}/customers/.mutex); ` +
          'give this user read and write access to it, or use another folder (state.path in dimsync.yaml, or --state)',
      )
    })
  },
)
