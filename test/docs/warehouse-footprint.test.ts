import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

import { WAREHOUSE_CONFIGS } from '../../lib/config/warehouse-configs.ts'
import { WAREHOUSE_BUNDLES } from '../../lib/runtime/warehouse-registry.ts'

/**
 * What a warehouse kind takes, read from the tree: its own files (the folders docs/architecture.md names) and the
 * shared files that know it (those that import one of its own files, and the file declaring its spec). The counts
 * docs/architecture.md gives for PostgreSQL, the model of a fourth warehouse, are checked against it.
 */
const ROOT = resolve(import.meta.dirname, '../..')
const CODE_FOLDERS = ['lib', 'functions', 'infra']

function codeFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = `${folder}/${entry.name}`
    if (entry.isDirectory()) return codeFiles(path)
    return /\.(ts|mjs)$/.test(entry.name) ? [path] : []
  })
}

const FILES = CODE_FOLDERS.flatMap(codeFiles).sort()
const TEXT = new Map(FILES.map((file) => [file, readFileSync(join(ROOT, file), 'utf8')]))

/** Where a kind's own files live. */
const ownFolders = (kind: string) => [
  `lib/sql/${kind}/`,
  `lib/adapters/warehouse/${kind}-`,
  `lib/config/warehouses/${kind}-`,
  `lib/runtime/warehouses/${kind}-`,
]

function ownFiles(kind: string): string[] {
  return FILES.filter((file) => ownFolders(kind).some((prefix) => file.startsWith(prefix)))
}

/** The files a file imports (static, type and `import()` with a literal path), as paths from the root. */
function importsOf(file: string): string[] {
  const text = TEXT.get(file)!
  const specifiers = [
    ...text.matchAll(/\bfrom\s+'([^']+)'/g),
    ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
    ...text.matchAll(/^import\s+'([^']+)'/gm),
  ].map((m) => m[1]!)
  return specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) => relative(ROOT, normalize(resolve(ROOT, dirname(file), s))))
}

/** The shared files that know `kind`: they import one of its own files, or declare its spec. */
function sharedFilesOf(kind: string): string[] {
  const own = new Set(ownFiles(kind))
  const spec = new RegExp(`export interface \\w+WarehouseSpec \\{[^}]*readonly type: '${kind}'`)
  return FILES.filter(
    (file) => !own.has(file) && (importsOf(file).some((i) => own.has(i)) || spec.test(TEXT.get(file)!)),
  )
}

const ARCHITECTURE = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8')

describe('a warehouse kind is one bundle', () => {
  it('the config parts and the bundles list the same kinds, in the same order', () => {
    expect(Object.keys(WAREHOUSE_BUNDLES)).toEqual(Object.keys(WAREHOUSE_CONFIGS))
    for (const [type, bundle] of Object.entries(WAREHOUSE_BUNDLES)) expect(bundle.type).toBe(type)
  })

  it('every kind has its bundle and its config part among its own files', () => {
    for (const kind of Object.keys(WAREHOUSE_BUNDLES))
      expect(ownFiles(kind)).toEqual(
        expect.arrayContaining([
          `lib/runtime/warehouses/${kind}-bundle.ts`,
          `lib/config/warehouses/${kind}-config.ts`,
        ]),
      )
  })

  it('no use-case, CLI command or CDK file knows a kind: only the registries, the composition roots and the spec do', () => {
    const own = new Set(Object.keys(WAREHOUSE_BUNDLES).flatMap(ownFiles))
    for (const kind of Object.keys(WAREHOUSE_BUNDLES))
      // Another kind's own files may use this one (PostgreSQL's adapter reads the parts with DuckDB).
      for (const file of sharedFilesOf(kind).filter((f) => !own.has(f)))
        expect(file, `${file} knows the ${kind} warehouse`).toMatch(/^lib\/(config|core|runtime)\//)
  })

  it("no file but a kind's own compares warehouse.type with a kind", () => {
    const own = new Set(Object.keys(WAREHOUSE_BUNDLES).flatMap(ownFiles))
    const branching = FILES.filter(
      (file) => !own.has(file) && /warehouse\.type\s*[!=]==?\s*'/.test(TEXT.get(file)!),
    )
    expect(branching).toEqual([])
  })

  it("PostgreSQL's footprint is the one docs/architecture.md gives for a warehouse", () => {
    const own = ownFiles('postgres')
    const shared = sharedFilesOf('postgres')
    expect(shared).toEqual([
      'lib/config/warehouse-configs.ts',
      'lib/core/table-spec.ts',
      'lib/runtime/warehouse-registry.ts',
    ])
    const stated =
      /PostgreSQL took (\d+) files of its own \(([^)]*)\) and edited (\d+) shared ones \(([^)]*)\)/.exec(
        ARCHITECTURE.replace(/\s+/g, ' '),
      )
    expect(stated, 'docs/architecture.md states what PostgreSQL took').not.toBeNull()
    const [, ownCount, ownList, sharedCount, sharedList] = stated!
    expect(Number(ownCount)).toBe(own.length)
    expect(Number(sharedCount)).toBe(shared.length)
    for (const file of own) expect(ownList, `${file} is listed`).toContain(file)
    for (const file of shared) expect(sharedList, `${file} is listed`).toContain(file)
  })
})
