import { globSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { processStateWrites, UNRESTORED_PROCESS_STATE_WRITE } from './process-state.ts'

/**
 * The test files run in shared worker processes (`isolate: false` in vitest.config.ts). The environment
 * and working directory a file changes are put back after it (test/support/restore-process-state.ts); a global
 * stubbed or a umask set would reach the next file, so no test file or helper it imports writes one.
 * test/lint/ is left out: its tests plant such writes as text to see them caught.
 */
describe('test files share worker processes', () => {
  const files = globSync('test/**/*.test.ts', { exclude: ['test/lint/**'] }).sort()

  it('the check sees a global stubbed and a umask set, not a read', () => {
    for (const line of ["vi.stubGlobal('fetch', f)", 'globalThis.fetch = f', 'process.umask(0o77)'])
      expect(line.match(UNRESTORED_PROCESS_STATE_WRITE), line).not.toBeNull()
    for (const line of ['const f = globalThis.fetch', 'if (globalThis.fetch === f) {}'])
      expect(line.match(UNRESTORED_PROCESS_STATE_WRITE), line).toBeNull()
  })

  it.each(files)('%s stubs no global and sets no umask', (file) => {
    expect(processStateWrites(file, UNRESTORED_PROCESS_STATE_WRITE)).toEqual([])
  })
})
