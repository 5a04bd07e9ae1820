import { globSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  FAST_FORBIDDEN_LIB,
  FAST_IO_MODULES,
  FAST_TESTS,
  INFRA_TESTS,
  IO_MODULES,
  UNIT_TESTS,
} from '../test-tiers.ts'
import { processStateWrites } from './process-state.ts'

/**
 * The fast tier runs on the in-memory ports: no fast test file, and no test helper it imports (followed
 * transitively through test/), imports a module that reaches files, processes, sockets or servers other than
 * DuckDB (FAST_IO_MODULES), imports a lib/ adapter other than the in-memory ones or a composition root
 * (FAST_FORBIDDEN_LIB), or opens DuckDB anywhere but ':memory:'. Type-only imports are erased and do not count.
 */
const IMPORT = /^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'/gm
/** A DuckDB instance opened in a test file: its first argument must be ':memory:'. */
const DUCKDB_OPEN = /DuckDBInstance\s*\.\s*(?:create|fromCache)\s*\(\s*([^),]*)/g

type Read = (file: string) => string
const readFromTree: Read = (file) => readFileSync(file, 'utf8')

export function fastViolations(
  file: string,
  read: Read = readFromTree,
  seen = new Set<string>(),
  via: string[] = [],
): string[] {
  if (seen.has(file)) return []
  seen.add(file)
  const where = [...via, file].join(' → ')
  const text = read(file)
  const found: string[] = []
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2]!
    if (spec.startsWith('.')) {
      const target = normalize(join(dirname(file), spec))
      if (target.startsWith('test/') && target.endsWith('.ts'))
        found.push(...fastViolations(target, read, seen, [...via, file]))
      else if (FAST_FORBIDDEN_LIB.some((pattern) => pattern.test(target)))
        found.push(`${where} imports ${target}`)
    } else if (
      IO_MODULES.some((pattern) => pattern.test(spec)) &&
      !FAST_IO_MODULES.some((pattern) => pattern.test(spec))
    ) {
      found.push(`${where} imports ${spec}`)
    }
  }
  for (const [, argument] of text.matchAll(DUCKDB_OPEN))
    if (argument!.trim() !== `':memory:'`)
      found.push(`${where} opens DuckDB at ${argument!.trim() || '(nothing)'}`)
  return found
}

describe('fast tests use the in-memory ports only', () => {
  const files = FAST_TESTS.flatMap((pattern) => globSync(pattern)).sort()

  it('every fast test pattern matches a file, and no file is in two tiers', () => {
    for (const pattern of FAST_TESTS) expect(globSync(pattern), pattern).not.toEqual([])
    const elsewhere = new Set([...UNIT_TESTS, ...INFRA_TESTS].flatMap((pattern) => globSync(pattern)))
    expect(files.filter((file) => elsewhere.has(file))).toEqual([])
  })

  it.each([
    [
      'a file adapter',
      `import { LocalStagingStore } from '../../../lib/adapters/staging/local-staging-store.ts'`,
      /imports lib\/adapters\/staging\/local-staging-store\.ts/,
    ],
    [
      'the DuckDB warehouse itself (it opens files too)',
      `import { DuckDbWarehouse } from '../../../lib/adapters/warehouse/duckdb-warehouse.ts'`,
      /imports lib\/adapters\/warehouse\/duckdb-warehouse\.ts/,
    ],
    [
      'the file blob store',
      `import { FileBlobStore } from '../../../lib/adapters/staging/file-blob-store.ts'`,
      /imports lib\/adapters\/staging\/file-blob-store\.ts/,
    ],
    [
      'a composition root',
      `import { buildLocalDeps } from '../../../lib/runtime/local-deps.ts'`,
      /imports lib\/runtime\/local-deps\.ts/,
    ],
    ['the file system', `import { mkdtemp } from 'node:fs/promises'`, /imports node:fs\/promises/],
    ['a process', `import { spawn } from 'node:child_process'`, /imports node:child_process/],
    ['a server', `import pg from 'pg'`, /imports pg/],
    [
      'DuckDB on a file',
      `import { DuckDBInstance } from '@duckdb/node-api'\nawait DuckDBInstance.create(path)`,
      /opens DuckDB at path/,
    ],
    [
      'a helper that does I/O',
      `import { TestBatches } from '../../support/staged-batches.ts'`,
      /planted\.test\.ts → test\/support\/staged-batches\.ts imports node:fs\/promises/,
    ],
  ])('a planted fast test that reaches %s is refused', (_what, code, refusal) => {
    const planted = 'test/lib/use-cases/planted.test.ts'
    const read: Read = (file) => (file === planted ? `${code}\n` : readFromTree(file))
    expect(fastViolations(planted, read).join('\n')).toMatch(refusal)
  })

  it.each([
    `import { openMemoryWarehouse } from '../../../lib/adapters/warehouse/duckdb-memory-warehouse.ts'`,
    `import { MemoryStateStore } from '../../../lib/adapters/state/memory-state-store.ts'`,
    `import { BlobStagingStore } from '../../../lib/adapters/staging/blob-staging-store.ts'`,
    `import type { DuckDbWarehouse } from '../../../lib/adapters/warehouse/duckdb-warehouse.ts'`,
    `import { DuckDBInstance } from '@duckdb/node-api'\nawait DuckDBInstance.create(':memory:')`,
  ])('a planted fast test may: %s', (code) => {
    const planted = 'test/lib/use-cases/planted.test.ts'
    const read: Read = (file) => (file === planted ? `${code}\n` : readFromTree(file))
    expect(fastViolations(planted, read)).toEqual([])
  })

  it.each(files)('%s uses the in-memory ports only', (file) => {
    expect(fastViolations(file)).toEqual([])
  })

  // Fast tests run side by side (describe.concurrent) in a worker shared with other files: an environment variable
  // or directory one test set would reach its neighbours before restore-process-state.ts puts it back after the file.
  it.each(files)('%s writes no process state', (file) => {
    expect(processStateWrites(file)).toEqual([])
  })
})
