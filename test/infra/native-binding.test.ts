import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

import {
  VERIFIED_MARKER,
  checkIntegrity,
  installLockedBinding,
  lockedPackage,
  type FetchTarball,
} from '../../infra/bundling/native-binding.ts'
import { ensureNativeBinding } from '../../infra/constructs/loader-function.ts'

const NAME = '@duckdb/node-bindings-linux-arm64'

/** A package tarball as the registry serves it (`package/` inside), holding a stand-in binary. */
function tarball(dir: string, binary: string): { file: string; integrity: string } {
  const root = mkdtempSync(path.join(dir, 'pkg-'))
  mkdirSync(path.join(root, 'package'))
  writeFileSync(path.join(root, 'package', 'package.json'), JSON.stringify({ name: NAME, version: '1.0.0' }))
  writeFileSync(path.join(root, 'package', 'duckdb.node'), binary)
  const file = path.join(root, 'binding.tgz')
  expect(spawnSync('tar', ['-czf', file, '-C', root, 'package']).status).toBe(0)
  const integrity = `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`
  return { file, integrity }
}

/** `integrity` with its first hash character changed: what a tampered or wrong tarball would hash to. */
const corrupt = (integrity: string) =>
  integrity.replace(/^sha512-(.)/, (_, c: string) => `sha512-${c === 'A' ? 'B' : 'A'}`)

/** A project whose lockfile pins the binding with `integrity`. */
function project(integrity: string, version = '1.0.0'): string {
  const root = mkdtempSync(path.join(tmpdir(), 'dimsync-native-test-'))
  const packages = {
    [`node_modules/${NAME}`]: {
      version,
      resolved: `https://registry.npmjs.org/${NAME}/-/node-bindings-linux-arm64-${version}.tgz`,
      integrity,
      os: ['linux'],
      cpu: ['arm64'],
    },
  }
  writeFileSync(path.join(root, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages }))
  return root
}

/** A fetch that serves `file` and counts its calls (the registry, offline). */
function serving(file: string): FetchTarball & { calls: number } {
  const fetch = Object.assign(
    (_pkg: unknown, folder: string) => {
      fetch.calls++
      const target = path.join(folder, 'fetched.tgz')
      copyFileSync(file, target)
      return target
    },
    { calls: 0 },
  )
  return fetch
}

describe("the Lambda platform's DuckDB binding, fetched at the lockfile's integrity and cached", () => {
  it('fetches once, verifies the hash, unpacks and reuses it on every later synth', () => {
    const scratch = mkdtempSync(path.join(tmpdir(), 'dimsync-tgz-'))
    const { file, integrity } = tarball(scratch, 'ELF arm64 stand-in')
    const root = project(integrity)
    const fetch = serving(file)

    const first = installLockedBinding(root, NAME, fetch)
    expect(first.fetched).toBe(true)
    expect(readFileSync(path.join(first.dir, 'duckdb.node'), 'utf8')).toBe('ELF arm64 stand-in')
    expect(readFileSync(path.join(first.dir, VERIFIED_MARKER), 'utf8')).toBe(integrity)
    expect(installLockedBinding(root, NAME, fetch)).toEqual({ dir: first.dir, fetched: false })
    expect(fetch.calls).toBe(1)
  })

  it('refuses a tarball whose hash differs from the lockfile, installing nothing and keeping the verified one', () => {
    const scratch = mkdtempSync(path.join(tmpdir(), 'dimsync-tgz-'))
    const good = tarball(scratch, 'the real binary')
    const tampered = tarball(scratch, 'something else')
    const root = project(corrupt(tampered.integrity))
    expect(() => installLockedBinding(root, NAME, serving(tampered.file))).toThrow(
      `${NAME}@1.0.0: the fetched tarball does not match package-lock.json ` +
        `(expected ${corrupt(tampered.integrity)}, got ${tampered.integrity}); nothing was installed`,
    )
    expect(existsSync(path.join(root, '.lambda-native', 'node_modules', NAME))).toBe(false)

    // A cached binding stays until a fetch for the new lockfile entry verifies.
    const verified = project(good.integrity)
    installLockedBinding(verified, NAME, serving(good.file))
    const lock = path.join(verified, 'package-lock.json')
    writeFileSync(lock, readFileSync(lock, 'utf8').replace(good.integrity, corrupt(tampered.integrity)))
    expect(ensureNativeBinding('arm64', verified, serving(tampered.file))).toMatch(
      /^@duckdb\/node-bindings-linux-arm64 is not installed, .*at the version and integrity hash of package-lock\.json.*does not match/s,
    )
    expect(
      readFileSync(path.join(verified, '.lambda-native', 'node_modules', NAME, 'duckdb.node'), 'utf8'),
    ).toBe('the real binary')
  })

  it('fetches again when the lockfile pins another version (the cached one was verified against the old hash)', () => {
    const scratch = mkdtempSync(path.join(tmpdir(), 'dimsync-tgz-'))
    const older = tarball(scratch, 'v1')
    const newer = tarball(scratch, 'v2')
    const root = project(older.integrity)
    installLockedBinding(root, NAME, serving(older.file))
    writeFileSync(
      path.join(root, 'package-lock.json'),
      readFileSync(path.join(root, 'package-lock.json'), 'utf8').replace(older.integrity, newer.integrity),
    )
    const fetch = serving(newer.file)
    expect(installLockedBinding(root, NAME, fetch).fetched).toBe(true)
    expect(fetch.calls).toBe(1)
  })

  it("reads the project's own lockfile pin of the arm64 binding, and checks SRI hashes of every algorithm npm writes", () => {
    const pinned = lockedPackage(readFileSync('package-lock.json', 'utf8'), NAME)
    expect(pinned.integrity).toMatch(/^sha512-[A-Za-z0-9+/]{86}==$/)
    expect(pinned.version).toBe(
      (
        JSON.parse(readFileSync('node_modules/@duckdb/node-bindings/package.json', 'utf8')) as {
          version: string
        }
      ).version,
    )
    expect(() => lockedPackage('{"packages": {}}', NAME)).toThrow(/package-lock\.json pins no @duckdb/)
    const bytes = Buffer.from('x')
    const sha1 = `sha1-${createHash('sha1').update(bytes).digest('base64')}`
    expect(() => checkIntegrity(bytes, `sha512-nope ${sha1}`, 'x')).not.toThrow()
    expect(() => checkIntegrity(bytes, 'md5-abc', 'x')).toThrow(/got no supported hash/)
  })
})
