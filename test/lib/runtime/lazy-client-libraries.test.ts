import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

/**
 * Every client library a process loads stays in its memory until it ends (10-20 MB each): the composition roots
 * of the CLI load a database driver, the AWS SDK or the BigQuery client only when a run uses them.
 */
const ROOT = resolve(import.meta.dirname, '../../..')
const CLIENT_LIBRARIES = [
  'pg',
  'pg-copy-streams',
  'mysql2',
  '@google-cloud/bigquery',
  'google-auth-library',
  '@aws-sdk/client-s3',
  '@aws-sdk/client-dynamodb',
  '@aws-sdk/client-secrets-manager',
  '@aws-sdk/lib-storage',
]

// Appends every bare specifier resolved in the process to a file, synchronously, so what the main thread reads
// after an import settled includes everything that import loaded.
const TRACE_HOOK = `
import { appendFileSync } from 'node:fs'
let log
export function initialize(data) { log = data.log }
export async function resolve(specifier, context, next) {
  if (!/^(\\.|\\/|node:|file:|data:)/.test(specifier)) appendFileSync(log, specifier + '\\n')
  return next(specifier, context)
}`

const work = mkdtempSync(join(tmpdir(), 'dimsync-lazy-clients-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))

/** Runs `steps` (module code, top-level await) in a fresh process and returns the libraries loaded at each mark. */
function librariesLoadedAt(steps: string): Map<string, Set<string>> {
  const log = join(work, `trace-${Math.floor(process.hrtime()[1])}.log`)
  writeFileSync(log, '')
  const script = `
import { register } from 'node:module'
import { appendFileSync } from 'node:fs'
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(TRACE_HOOK)}), { data: { log: ${JSON.stringify(log)} } })
const mark = (name) => appendFileSync(${JSON.stringify(log)}, '#' + name + '\\n')
${steps}`
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  })
  expect(run.stderr).toBe('')
  expect(run.status).toBe(0)
  const marks = new Map<string, Set<string>>()
  const loaded = new Set<string>()
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    if (line.startsWith('#')) marks.set(line.slice(1), new Set(loaded))
    else if (line !== '') loaded.add(line.startsWith('@') ? line.split('/').slice(0, 2).join('/') : line)
  }
  return marks
}

const clientsIn = (loaded: Set<string> | undefined) =>
  CLIENT_LIBRARIES.filter((library) => loaded?.has(library))

describe('client libraries are loaded when a run uses them', () => {
  it('building the embedded deps and opening a PostgreSQL, a MySQL and a file source loads none; using the PostgreSQL source loads pg', () => {
    const config = join(work, 'dimsync.yaml')
    writeFileSync(
      config,
      [
        'version: 1',
        'tables:',
        '  - { name: pg_customers, source: { type: postgres, url_env: LAZY_PG_URL, table: customers }, key: id }',
        '  - { name: my_customers, source: { type: mysql, url_env: LAZY_MYSQL_URL, table: customers }, key: id }',
        '  - { name: file_customers, source: { type: file, path: customers.csv }, key: id }',
        '',
      ].join('\n'),
    )
    const marks = librariesLoadedAt(`
const { loadProject } = await import('./lib/config/index.ts')
const { buildLocalDeps } = await import('./lib/runtime/local-deps.ts')
const project = await loadProject(${JSON.stringify(config)})
const deps = await buildLocalDeps(project)
const sources = project.tables.map((table) => deps.openSource(table))
mark('opened')
const [pg] = project.tables
await sources[0].describe(pg).catch(() => undefined)
mark('used')
for (const source of sources) await source.close()
await deps.close()
`)
    // The trace works: the config's YAML parser was loaded by then.
    expect(marks.get('opened')?.has('yaml')).toBe(true)
    expect(clientsIn(marks.get('opened'))).toEqual([])
    expect(clientsIn(marks.get('used'))).toEqual(['pg'])
  })

  it('the CLI loads none of them before it runs a command', () => {
    const marks = librariesLoadedAt(`
process.argv = [process.argv[0], 'dimsync', '--version']
await import('./functions/local/cli.ts')
mark('started')
`)
    expect(marks.get('started')?.has('commander')).toBe(true)
    expect(clientsIn(marks.get('started'))).toEqual([])
  })
})
