import { existsSync, globSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { IO_MODULES, SLOW_TESTS, UNIT_TESTS } from '../test-tiers.ts'
import { PROCESS_STATE_WRITE, processStateWrites, reachedTestFiles } from './process-state.ts'

/**
 * The unit tier does no I/O: no unit test file, and no test helper it imports (followed transitively through
 * test/), imports a module that reaches files, processes, sockets or databases. A test that needs one belongs to
 * the integration tier (test/test-tiers.ts). Type-only imports are erased and do not count; what a test
 * calls in lib/ is the test's business (lib/config/index.ts re-exports the config file loader, for instance).
 */
function ioImports(file: string): string[] {
  return [...reachedTestFiles(file).values()].flatMap(({ chain, modules }) =>
    modules
      .filter((spec) => IO_MODULES.some((pattern) => pattern.test(spec)))
      .map((spec) => `${chain.join(' → ')} imports ${spec}`),
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

  // A unit test is a pure function of its code: not even the environment or the directory, which
  // restore-process-state.ts would put back after the file, but which its other tests would see first.
  it.each(files)('%s writes no process state', (file) => {
    expect(processStateWrites(file)).toEqual([])
  })
})
