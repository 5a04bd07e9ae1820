import { existsSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { JEMALLOC_LIBRARIES, workerPreload } from './worker-allocator.ts'

const JEMALLOC = JEMALLOC_LIBRARIES[0]!
const installed = (path: string) => path === JEMALLOC

describe('the allocator the test workers start on', () => {
  it('is jemalloc when it is installed, after the preloads the environment already has', () => {
    expect(workerPreload({}, installed)).toBe(JEMALLOC)
    expect(workerPreload({ LD_PRELOAD: '/opt/a.so /opt/b.so' }, installed)).toBe(
      `/opt/a.so:/opt/b.so:${JEMALLOC}`,
    )
    expect(workerPreload({ LD_PRELOAD: `/opt/a.so:${JEMALLOC}` }, installed)).toBeUndefined()
  })

  it("is glibc's malloc when jemalloc is not installed or DIMSYNC_TEST_ALLOCATOR=glibc asks for it", () => {
    expect(workerPreload({}, () => false)).toBeUndefined()
    expect(workerPreload({ DIMSYNC_TEST_ALLOCATOR: 'glibc' }, installed)).toBeUndefined()
    expect(workerPreload({ DIMSYNC_TEST_ALLOCATOR: 'jemalloc' }, installed)).toBe(JEMALLOC)
  })

  it('refuses an allocator it does not know, naming the variable and the choices', () => {
    expect(() => workerPreload({ DIMSYNC_TEST_ALLOCATOR: 'mimalloc' }, installed)).toThrow(
      "DIMSYNC_TEST_ALLOCATOR is jemalloc (the default) or glibc, not 'mimalloc'",
    )
  })

  it('is the one this worker runs on (vitest.config.ts sets it before the workers start)', () => {
    const expected = JEMALLOC_LIBRARIES.find((path) => existsSync(path))
    const mapped = readFileSync('/proc/self/maps', 'utf8')
    if (expected === undefined || process.env.DIMSYNC_TEST_ALLOCATOR === 'glibc')
      expect(mapped).not.toMatch(/libjemalloc\.so/)
    else expect(mapped).toContain(expected)
  })
})
