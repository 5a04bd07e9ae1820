import { existsSync } from 'node:fs'

/**
 * Where Debian's libjemalloc2 installs jemalloc (by architecture). The test workers run on it: DuckDB parses, binds
 * and plans each statement with C++ `new`, which goes to glibc's malloc (its own jemalloc holds only its data), and
 * the tests run tens of thousands of statements on tiny tables, so glibc's malloc, free and the page faults of the
 * memory it hands back were about a fifth of a property test's CPU. The whole suite on jemalloc: 1266 -> 1064 CPU-s of
 * the machine, 723 -> 612 s (docs/architecture.md, "Test tiers").
 */
export const JEMALLOC_LIBRARIES: readonly string[] = [
  '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
  '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2',
]

/**
 * The LD_PRELOAD the test workers start with: the environment's own, plus jemalloc when it is installed, unless
 * DIMSYNC_TEST_ALLOCATOR=glibc asks for glibc's malloc. undefined: leave LD_PRELOAD as it is.
 */
export function workerPreload(
  env: NodeJS.ProcessEnv,
  installed: (path: string) => boolean = existsSync,
): string | undefined {
  const choice = env.DIMSYNC_TEST_ALLOCATOR ?? 'jemalloc'
  if (choice !== 'jemalloc' && choice !== 'glibc')
    throw new Error(`DIMSYNC_TEST_ALLOCATOR is jemalloc (the default) or glibc, not '${choice}'`)
  if (choice === 'glibc') return undefined
  const jemalloc = JEMALLOC_LIBRARIES.find(installed)
  if (jemalloc === undefined) return undefined
  // ld.so reads LD_PRELOAD's entries separated by spaces or colons.
  const own = (env.LD_PRELOAD ?? '').split(/[\s:]+/).filter((entry) => entry !== '')
  if (own.includes(jemalloc)) return undefined
  return [...own, jemalloc].join(':')
}
