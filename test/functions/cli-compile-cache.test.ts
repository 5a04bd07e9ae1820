import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { PG_URL, postgresReachable } from '../integration/sources/support/db-services.ts'
import { descendantsOf } from '../support/processes.ts'

/**
 * bin/dimsync.mjs runs the CLI from a compiled cache of its TypeScript (bin/compile-cache.mjs) that follows every
 * change of a source file, so a user never builds anything and never runs stale code. Exercised on a copy of the
 * package (its own node_modules folder linking the real packages, so the cache lands in the copy).
 */
const ROOT = join(import.meta.dirname, '..', '..')
let copy: string

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), 'dimsync-compile-cache-'))
  for (const part of ['bin', 'functions', 'lib', 'package.json', 'tsconfig.json'])
    cpSync(join(ROOT, part), join(copy, part), { recursive: true })
  mkdirSync(join(copy, 'node_modules'))
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name !== '.cache') symlinkSync(join(ROOT, 'node_modules', name), join(copy, 'node_modules', name))
  }
})
afterAll(() => rmSync(copy, { recursive: true, force: true }))

function dimsync(...args: string[]) {
  const r = spawnSync(process.execPath, [join(copy, 'bin', 'dimsync.mjs'), ...args], {
    cwd: copy,
    encoding: 'utf8',
    env: { ...process.env, CI: '1' },
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}
const cacheFolder = () => join(copy, 'node_modules', '.cache', 'dimsync-cli')
const edit = (path: string, from: string, to: string) => {
  const text = readFileSync(join(copy, path), 'utf8')
  expect(text).toContain(from)
  writeFileSync(join(copy, path), text.replace(from, to))
}

describe('the compiled cache of the CLI', () => {
  it('is written by the first run and follows every edit of a source file, eagerly or lazily imported', () => {
    expect(dimsync('--help').out).toContain('extract every table (or one)')
    expect(existsSync(cacheFolder())).toBe(true)

    edit('functions/local/cli.ts', 'extract every table (or one)', 'extract each table (or one)')
    expect(dimsync('--help').out).toContain('extract each table (or one)')

    // The commands' work is in a module cli.ts imports when a command runs.
    writeFileSync(join(copy, 'customers.csv'), 'id,name\n1,Ana\n')
    writeFileSync(
      join(copy, 'dimsync.yaml'),
      'version: 1\ntables:\n  - { name: customers, source: { type: file, path: customers.csv }, key: id }\n',
    )
    const before = dimsync('validate')
    expect(before.code).toBe(0)
    expect(before.out).toMatch(/^customers/)
    edit('functions/local/commands.ts', 'reporter.summary(line)', 'reporter.summary(`edited: ${line}`)')
    const after = dimsync('validate')
    expect(after.out).toBe(`edited: ${before.out}`)
  })

  it("gives a CommonJS package's exports to a static and a dynamic import as Node's import does", () => {
    // The compiled CLI requires CommonJS packages (DuckDB's API, yaml) instead of importing them.
    writeFileSync(join(copy, 'customers.csv'), 'id,name\n1,Ana\n')
    writeFileSync(
      join(copy, 'dimsync.yaml'),
      'version: 1\ntables:\n  - { name: customers, source: { type: file, path: customers.csv }, key: id }\n',
    )
    const validate = 'export async function validate(opts: { config: string }): Promise<void> {'
    edit(
      'functions/local/commands.ts',
      validate,
      `${validate}
  const dynamic = await import('@duckdb/node-api')
  const yaml = await import('yaml')
  process.stdout.write(
    \`exports: \${[typeof dynamic.DuckDBInstance?.create, typeof dynamic.default?.DuckDBInstance, typeof yaml.parse, typeof yaml.default?.parse, typeof staticYaml.parse, typeof StaticInstance.create].join(' ')}\\n\`,
  )`,
    )
    edit(
      'functions/local/commands.ts',
      "import { resolve } from 'node:path'",
      "import { resolve } from 'node:path'\nimport { DuckDBInstance as StaticInstance } from '@duckdb/node-api'\nimport staticYaml from 'yaml'",
    )
    const run = dimsync('validate')
    expect(run.err).toBe('')
    expect(run.out.split('\n')[0]).toBe(`exports: ${Array(6).fill('function').join(' ')}`)
  })

  it('compiles again when a package it requires becomes an ES module (an upgrade)', () => {
    // A package of the copy's own: CommonJS first, then an ES module with top-level await, which require() refuses.
    const folder = join(copy, 'node_modules', 'dimsync-test-package')
    mkdirSync(folder)
    const publish = (version: string, type: string, code: string) => {
      writeFileSync(
        join(folder, 'package.json'),
        JSON.stringify({ name: 'dimsync-test-package', version, type, main: 'index.js' }),
      )
      writeFileSync(join(folder, 'index.js'), code)
    }
    publish('1.0.0', 'commonjs', 'exports.answer = 1\n')
    const validate = 'export async function validate(opts: { config: string }): Promise<void> {'
    edit(
      'functions/local/commands.ts',
      validate,
      `${validate}\n  process.stdout.write(\`answer \${answer}\\n\`)`,
    )
    edit(
      'functions/local/commands.ts',
      "import { resolve } from 'node:path'",
      "import { resolve } from 'node:path'\nimport { answer } from 'dimsync-test-package'",
    )
    expect(dimsync('validate').out.split('\n')[0]).toBe('answer 1')

    publish('2.0.0', 'module', 'export const answer = await Promise.resolve(2)\n')
    const upgraded = dimsync('validate')
    expect(upgraded.err).toBe('')
    expect(upgraded.out.split('\n')[0]).toBe('answer 2')
  })

  it('a source that does not compile is reported as tsx reports it; the next good source runs compiled again', () => {
    edit(
      'functions/local/cli.ts',
      "import { readFileSync } from 'node:fs'",
      "import { readFileSync } from 'node:fs'\nconst = 1",
    )
    // --help runs the CLI (--version alone is answered by the launcher).
    const broken = dimsync('--help')
    expect(broken.code).not.toBe(0)
    expect(broken.err).toMatch(/Expected identifier|Unexpected/)
    edit('functions/local/cli.ts', '\nconst = 1', '')
    expect(dimsync('--help')).toMatchObject({ code: 0, err: '' })
    const current = JSON.parse(
      readFileSync(join(cacheFolder(), readdirSync(cacheFolder())[0]!, 'current.json'), 'utf8'),
    )
    expect(Object.keys(current.inputs)).toContain('functions/local/cli.ts')
  })
})

const postgres = process.platform === 'linux' && (await postgresReachable())

describe.skipIf(!postgres)('the compiler while the CLI runs', () => {
  it('a run that compiled the CLI first keeps no compiler process beside it', async () => {
    // An edit makes the next start compile; a source query that sleeps keeps the run going while it is looked at.
    appendFileSync(join(copy, 'lib', 'core', 'errors.ts'), '// edited\n')
    const marker = `dimsync_compile_${randomBytes(4).toString('hex')}`
    writeFileSync(
      join(copy, 'dimsync.yaml'),
      'version: 1\ntables:\n  - name: slow\n' +
        `    source: { type: postgres, url_env: DB_URL, query: 'SELECT 1 AS id, pg_sleep(60) IS NULL AS ${marker}' }\n` +
        '    key: id\n',
    )
    const run = spawn(process.execPath, [join(copy, 'bin', 'dimsync.mjs'), 'run'], {
      cwd: copy,
      env: { ...process.env, CI: '1', DB_URL: PG_URL },
      stdio: 'ignore',
    })
    const client = new pg.Client({ connectionString: PG_URL })
    await client.connect()
    try {
      for (let waited = 0; ; waited += 100) {
        const { rows } = await client.query(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()',
          [`%AS ${marker}%`],
        )
        if (rows[0].n > 0) break
        if (waited > 60_000 || run.exitCode !== null) throw new Error('the run did not reach its extract')
        await sleep(100)
      }
      const commands = descendantsOf(run.pid!).map((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim())
      expect(commands).not.toContain('esbuild')
    } finally {
      run.kill('SIGKILL')
      await client.end()
    }
  }, 90_000)
})
