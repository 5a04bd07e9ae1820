import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

/**
 * What a `dimsync` process loads is resident until it ends, and every module costs start-up time: `--version`
 * loads no package at all, `--help` no config parser and no engine, `validate` and a run on the embedded default
 * (a file source, local folders, DuckDB) no cloud or database client library; and only a command that may read
 * tables starts Node a second time (the allocator settings of lib/runtime/allocator-environment.mjs). The real CLI
 * (bin/dimsync.mjs, its launcher and worker process) runs with a resolve hook that logs every package it imports,
 * and each start of Node logs a line of its own. Nothing here is timed: bench/cli-startup.ts measures the times.
 */
const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')

/** Client libraries of the sources, stores and warehouses the embedded default does not use. */
const CLIENTS = [
  'pg',
  'pg-copy-streams',
  'mysql2',
  '@google-cloud/bigquery',
  'google-auth-library',
  '@aws-sdk/client-s3',
  '@aws-sdk/client-dynamodb',
  '@aws-sdk/client-secrets-manager',
  '@aws-sdk/lib-storage',
  '@aws-lambda-powertools/logger',
]
/** What a command that reads no config and opens nothing does without: the config parsers and the engine. */
const HEAVY = ['zod', 'yaml', '@duckdb/node-api', ...CLIENTS]

const work = mkdtempSync(join(tmpdir(), 'dimsync-startup-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))

const HOOK = join(work, 'trace-hook.mjs')
writeFileSync(
  HOOK,
  `import { appendFileSync } from 'node:fs'
export async function resolve(specifier, context, next) {
  if (!/^(\\.|\\/|node:|file:|data:)/.test(specifier)) appendFileSync(process.env.TRACE_LOG, specifier + '\\n')
  return next(specifier, context)
}
`,
)
const PRELOAD = join(work, 'trace.mjs')
/** The line each start of Node (the launcher's, the worker's) writes to the log before anything is imported. */
const STARTED = '#started'
// The compiled CLI loads CommonJS packages with require() (bin/compile-cache.mjs), which the resolve hook does not
// see: the packages of every CommonJS file the process loaded are logged when it ends.
writeFileSync(
  PRELOAD,
  `import { appendFileSync } from 'node:fs'
import { Module, register } from 'node:module'
appendFileSync(process.env.TRACE_LOG, ${JSON.stringify(`${STARTED}\n`)})
register(${JSON.stringify(`file://${HOOK}`)})
process.on('exit', () => {
  const packages = Object.keys(Module._cache).flatMap((file) => {
    const name = /.*node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(file)?.[1]
    return name === undefined || name.startsWith('.') ? [] : [name + '\\n']
  })
  appendFileSync(process.env.TRACE_LOG, packages.join(''))
})
`,
)

let runs = 0
/** Runs the CLI in `cwd` and returns its exit code, output and the packages it imported. */
function dimsync(cwd: string, ...args: string[]) {
  const log = join(work, `trace-${++runs}.log`)
  writeFileSync(log, '')
  const env: Record<string, string | undefined> = {
    ...process.env,
    CI: '1',
    TRACE_LOG: log,
    NODE_OPTIONS: `--import ${PRELOAD}`,
  }
  // The launcher re-executes itself to set MALLOC_ARENA_MAX: the worker it starts is what is traced.
  delete env.MALLOC_ARENA_MAX
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: 'utf8', env })
  const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean)
  const packages = new Set(
    lines
      .filter((line) => line !== STARTED)
      .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!)),
  )
  const nodeStarts = lines.filter((line) => line === STARTED).length
  return { code: r.status, out: r.stdout, err: r.stderr, packages, nodeStarts }
}
const loaded = (packages: Set<string>, names: readonly string[]) => names.filter((n) => packages.has(n))
/** Packages of a cloud, a database client or an engine's SDK, by scope: one added later is caught too. */
const CLIENT_SCOPES = /^(@aws-sdk|@smithy|@google-cloud|@aws-lambda-powertools)\//
const loadedClients = (packages: Set<string>) =>
  [...packages].filter((name) => CLIENT_SCOPES.test(name) || CLIENTS.includes(name))

describe('the CLI loads what its command needs', () => {
  it('--version starts Node once and loads no package, not even the CLI: the line commander would print', () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    for (const flag of ['--version', '-V']) {
      const versionRun = dimsync(work, flag)
      expect(versionRun).toMatchObject({ code: 0, out: `${version}\n`, err: '', nodeStarts: 1 })
      expect([...versionRun.packages]).toEqual([])
    }
    // The CLI's own answer (commander's, after another word) is the same line.
    const commanderRun = dimsync(work, '--version', '--version')
    expect(commanderRun).toMatchObject({ code: 0, out: `${version}\n` })
    expect(commanderRun.packages.has('commander')).toBe(true)
  })

  it('--help starts Node once and loads commander only: no config parser, no DuckDB, no client library', () => {
    const help = dimsync(work, '--help')
    expect(help).toMatchObject({ code: 0, nodeStarts: 1 })
    expect(help.out).toContain('Usage: dimsync [options] [command]')
    expect(help.out).toContain('validate')
    expect(loaded(help.packages, HEAVY)).toEqual([])

    const runHelp = dimsync(work, 'run', '--help')
    expect(runHelp).toMatchObject({ code: 0, nodeStarts: 1 })
    expect(runHelp.out).toContain('--extracted-at <iso>')
    expect(loaded(runHelp.packages, HEAVY)).toEqual([])

    const helpCommand = dimsync(work, 'help', 'validate')
    expect(helpCommand).toMatchObject({ code: 0, nodeStarts: 1 })
    expect(helpCommand.out).toContain('Usage: dimsync validate [options]')
    expect(loaded(helpCommand.packages, HEAVY)).toEqual([])
  })

  it('validate on the quickstart loads the config parsers and DuckDB (its CSV sources) but no client library', () => {
    const project = mkdtempSync(join(work, 'quickstart-'))
    cpSync(join(ROOT, 'examples', 'quickstart'), project, { recursive: true })
    const run = dimsync(project, 'validate')
    expect(run.code).toBe(0)
    expect(run.out).toContain('customers: ok')
    expect(['zod', 'yaml', '@duckdb/node-api'].filter((name) => !run.packages.has(name))).toEqual([])
    expect(loadedClients(run.packages)).toEqual([])
  })

  it('a run on the embedded default (file source, local folders, DuckDB) loads no cloud or database client', () => {
    const project = mkdtempSync(join(work, 'project-'))
    writeFileSync(join(project, 'customers.csv'), 'id,name\n1,Ana\n2,Bruno\n')
    writeFileSync(
      join(project, 'dimsync.yaml'),
      'version: 1\ntables:\n  - name: customers\n    source: { type: file, path: customers.csv }\n    key: id\n',
    )
    const run = dimsync(project, 'run')
    expect(run.err).toContain('2 rows')
    expect(run.code).toBe(0)
    // The launcher, then the worker it starts with the allocator settings (the same process where Node can execve).
    expect(run.nodeStarts).toBe(2)
    expect(run.packages.has('@duckdb/node-api')).toBe(true)
    expect(run.packages.has('zod')).toBe(true)
    expect(loadedClients(run.packages)).toEqual([])
  })

  it('a config error is reported before DuckDB or a source is loaded', () => {
    const project = mkdtempSync(join(work, 'bad-'))
    writeFileSync(
      join(project, 'dimsync.yaml'),
      'version: 1\ntables:\n  - name: customers\n    source: { type: postgres, url_env: NO_SUCH_URL, table: c }\n',
    )
    const run = dimsync(project, 'run')
    expect(run.code).toBe(1)
    expect(run.err).toMatch(/^dimsync: .*key/)
    expect(loaded(run.packages, ['@duckdb/node-api', ...CLIENTS])).toEqual([])
  })
})
