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

function ioImports(file: string, seen = new Set<string>(), via: string[] = []): string[] {
  if (seen.has(file)) return []
  seen.add(file)
  const found: string[] = []
  for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const spec = match[1] ?? match[2]!
    if (spec.startsWith('.')) {
      const target = normalize(join(dirname(file), spec))
      if (target.startsWith('test/') && target.endsWith('.ts'))
        found.push(...ioImports(target, seen, [...via, file]))
    } else if (IO_MODULES.some((pattern) => pattern.test(spec))) {
      found.push(`${[...via, file].join(' → ')} imports ${spec}`)
    }
  }
  return found
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
})
