import { spawnSync } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * bin/dimsync.mjs runs the CLI from a compiled cache of its TypeScript (bin/compile-cache.mjs) that follows every
 * change of a source file, so a user never builds anything and never runs stale code. Exercised on a copy of the
 * package (its own node_modules folder linking the real packages, so the cache lands in the copy).
 */
const ROOT = join(import.meta.dirname, '..', '..')
let copy: string

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), 'dimsync-compile-cache-'))
  for (const part of ['bin', 'functions', 'lib', 'package.json', 'tsconfig.json'])
    cpSync(join(ROOT, part), join(copy, part), { recursive: true })
  mkdirSync(join(copy, 'node_modules'))
  for (const name of readdirSync(join(ROOT, 'node_modules'))) {
    if (name !== '.cache') symlinkSync(join(ROOT, 'node_modules', name), join(copy, 'node_modules', name))
  }
})
afterAll(() => rmSync(copy, { recursive: true, force: true }))

function dimsync(...args: string[]) {
  const r = spawnSync(process.execPath, [join(copy, 'bin', 'dimsync.mjs'), ...args], {
    cwd: copy,
    encoding: 'utf8',
    env: { ...process.env, CI: '1' },
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}
const cacheFolder = () => join(copy, 'node_modules', '.cache', 'dimsync-cli')
const edit = (path: string, from: string, to: string) => {
  const text = readFileSync(join(copy, path), 'utf8')
  expect(text).toContain(from)
  writeFileSync(join(copy, path), text.replace(from, to))
}

describe('the compiled cache of the CLI', () => {
  it('is written by the first run and follows every edit of a source file, eagerly or lazily imported', () => {
    expect(dimsync('--help').out).toContain('extract every table (or one)')
    expect(existsSync(cacheFolder())).toBe(true)

    edit('functions/local/cli.ts', 'extract every table (or one)', 'extract each table (or one)')
    expect(dimsync('--help').out).toContain('extract each table (or one)')

    // The commands' work is in a module cli.ts imports when a command runs.
    writeFileSync(join(copy, 'customers.csv'), 'id,name\n1,Ana\n')
    writeFileSync(
      join(copy, 'dimsync.yaml'),
      'version: 1\ntables:\n  - { name: customers, source: { type: file, path: customers.csv }, key: id }\n',
    )
    const before = dimsync('validate')
    expect(before.code).toBe(0)
    expect(before.out).toMatch(/^customers/)
    edit('functions/local/commands.ts', 'reporter.summary(line)', 'reporter.summary(`edited: ${line}`)')
    const after = dimsync('validate')
    expect(after.out).toBe(`edited: ${before.out}`)
  })

  it('a source that does not compile is reported as tsx reports it; the next good source runs compiled again', () => {
    edit(
      'functions/local/cli.ts',
      "import { readFileSync } from 'node:fs'",
      "import { readFileSync } from 'node:fs'\nconst = 1",
    )
    const broken = dimsync('--version')
    expect(broken.code).not.toBe(0)
    expect(broken.err).toMatch(/Expected identifier|Unexpected/)
    edit('functions/local/cli.ts', '\nconst = 1', '')
    expect(dimsync('--version')).toMatchObject({ code: 0, err: '' })
    const current = JSON.parse(
      readFileSync(join(cacheFolder(), readdirSync(cacheFolder())[0]!, 'current.json'), 'utf8'),
    )
    expect(Object.keys(current.inputs)).toContain('functions/local/cli.ts')
  })
})
