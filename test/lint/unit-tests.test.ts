import { existsSync, globSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { describe, expect, it } from 'vitest'
import { IO_MODULES, SLOW_TESTS, UNIT_TESTS } from '../test-projects.ts'

/**
 * The unit project does no I/O: no unit test file, and no test helper it imports (followed transitively through
 * test/), imports a module that reaches files, processes, sockets or databases. A test that needs one belongs to
 * the integration project (test/test-projects.ts). Type-only imports are erased and do not count; what a test
 * calls in lib/ is the test's business (lib/config/index.ts re-exports the config file loader, for instance).
 */
const IMPORT = /^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'/gm

/** A test file a walk of relative imports reached: the chain of files it was first reached through (itself last). */
interface Reached {
  readonly chain: readonly string[]
  /** The packages and node: modules it imports (not its relative imports). */
  readonly modules: readonly string[]
}

/** The test files `file` reaches through its relative imports (itself included), in the order first reached. */
function reachedTestFiles(
  file: string,
  reached = new Map<string, Reached>(),
  via: readonly string[] = [],
): Map<string, Reached> {
  if (reached.has(file)) return reached
  const chain = [...via, file]
  const modules: string[] = []
  reached.set(file, { chain, modules })
  for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const spec = match[1] ?? match[2]!
    if (!spec.startsWith('.')) {
      modules.push(spec)
      continue
    }
    const target = normalize(join(dirname(file), spec))
    if (target.startsWith('test/') && target.endsWith('.ts')) reachedTestFiles(target, reached, chain)
  }
  return reached
}

function ioImports(file: string): string[] {
  return [...reachedTestFiles(file).values()].flatMap(({ chain, modules }) =>
    modules
      .filter((spec) => IO_MODULES.some((pattern) => pattern.test(spec)))
      .map((spec) => `${chain.join(' → ')} imports ${spec}`),
  )
}

/**
 * Writes to the process's shared state: the unit project shares one worker's modules and process between files
 * (`isolate: false` in vitest.config.ts), so an environment variable set, a directory changed or a global stubbed
 * by one file would reach the files after it.
 */
const PROCESS_STATE_WRITE =
  /process\.env(?:\.\w+|\[[^\]]+\])\s*(?:=(?!=)|\?\?=|\|\|=)|delete\s+process\.env|Object\.assign\(\s*process\.env|process\.chdir\(|process\.umask\(|vi\.stub(?:Env|Global)\(|globalThis\.\w+\s*=(?!=)/g

function processStateWrites(file: string): string[] {
  return [...reachedTestFiles(file).keys()].flatMap((reached) =>
    [...readFileSync(reached, 'utf8').matchAll(PROCESS_STATE_WRITE)].map((m) => `${reached}: ${m[0]}`),
  )
}

describe('unit tests do no I/O', () => {
  const files = UNIT_TESTS.flatMap((pattern) => globSync(pattern)).sort()

  it('every unit test pattern matches a file', () => {
    for (const pattern of UNIT_TESTS) expect(globSync(pattern), pattern).not.toEqual([])
  })

  it('every file the sequencer starts first (SLOW_TESTS) is a test file', () => {
    for (const file of Object.keys(SLOW_TESTS)) expect(existsSync(file), file).toBe(true)
  })

  it('the check sees an I/O import, also through a test helper', () => {
    expect(ioImports('test/support/fact-harness.ts').join('\n')).toMatch(/staged-batches\.ts imports node:fs/)
  })

  it.each(files)('%s imports nothing that does I/O', (file) => {
    expect(ioImports(file)).toEqual([])
  })

  it('the check sees each kind of write to the process’s state', () => {
    const planted = [
      "process.env.TZ = 'UTC'",
      "process.env['AWS_REGION'] = 'x'",
      'process.env.X ??= "1"',
      'delete process.env.HOME',
      'Object.assign(process.env, extra)',
      "process.chdir('/tmp')",
      "vi.stubEnv('TZ', 'UTC')",
      "vi.stubGlobal('fetch', f)",
      'globalThis.fetch = f',
    ]
    for (const line of planted) expect(line.match(PROCESS_STATE_WRITE), line).not.toBeNull()
    for (const line of ["if (process.env.TZ === 'UTC') {}", 'const tz = process.env.TZ'])
      expect(line.match(PROCESS_STATE_WRITE), line).toBeNull()
  })

  it.each(files)('%s changes no process state other unit files would see', (file) => {
    expect(processStateWrites(file)).toEqual([])
  })
})
