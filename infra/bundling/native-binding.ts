/**
 * DuckDB's native binding for the Lambda's platform. `npm ci` installs only the binding of the machine running
 * cdk; the Lambda's (linux arm64 by default) is fetched once, at the exact version and integrity hash the
 * lockfile records, into `.lambda-native/node_modules` beside the project (node_modules stays as `npm ci` left
 * it), and reused by every later synth until the lockfile changes.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

/** A package as package-lock.json pins it. */
export interface LockedPackage {
  readonly name: string
  readonly version: string
  /** The tarball's URL in the registry, when the lockfile records it (npm leaves it out for some optional packages). */
  readonly resolved?: string
  /** Subresource-integrity hash of the tarball (`sha512-<base64>`). */
  readonly integrity: string
}

/** Fetches the tarball of `pkg` into `folder` and returns its path (npm pack, through npm's own cache). */
export type FetchTarball = (pkg: LockedPackage, folder: string) => string

/** Written next to a fetched binding: the integrity it was verified against. */
export const VERIFIED_MARKER = '.dimsync-integrity'

export const bindingName = (nodeArch: 'x64' | 'arm64') => `@duckdb/node-bindings-linux-${nodeArch}`

/** The lockfile's entry for `name`, or an error saying the lockfile does not pin it. */
export function lockedPackage(lockfileText: string, name: string): LockedPackage {
  const lock = JSON.parse(lockfileText) as {
    packages?: Record<string, { version?: string; resolved?: string; integrity?: string }>
  }
  const entry = lock.packages?.[`node_modules/${name}`]
  if (entry?.version === undefined || entry.integrity === undefined)
    throw new Error(
      `package-lock.json pins no ${name} (version and integrity); run npm install once to record it`,
    )
  return {
    name,
    version: entry.version,
    integrity: entry.integrity,
    ...(entry.resolved !== undefined ? { resolved: entry.resolved } : {}),
  }
}

/**
 * Throws unless `bytes` match one of the hashes of the SRI string `integrity` (`sha512-…`, several separated by
 * spaces), naming the package, the expected and the actual hash.
 */
export function checkIntegrity(bytes: Buffer, integrity: string, what: string): void {
  const hashes = integrity.trim().split(/\s+/)
  const computed: string[] = []
  for (const hash of hashes) {
    const dash = hash.indexOf('-')
    const algorithm = hash.slice(0, dash)
    if (!['sha512', 'sha384', 'sha256', 'sha1'].includes(algorithm)) continue
    const actual = `${algorithm}-${createHash(algorithm).update(bytes).digest('base64')}`
    if (actual === hash) return
    computed.push(actual)
  }
  throw new Error(
    `${what}: the fetched tarball does not match package-lock.json (expected ${integrity}, got ` +
      `${computed.join(' ') || 'no supported hash'}); nothing was installed`,
  )
}

/** `npm pack <name>@<version>`: the registry npm is configured for, and npm's cache (fetched once). */
export const npmPack: FetchTarball = (pkg, folder) => {
  const result = spawnSync(
    'npm',
    ['pack', `${pkg.name}@${pkg.version}`, '--pack-destination', folder, '--json', '--silent'],
    { encoding: 'utf8' },
  )
  if (result.status !== 0)
    throw new Error(`npm pack ${pkg.name}@${pkg.version} failed: ${(result.stderr || '').trim()}`)
  const [packed] = JSON.parse(result.stdout) as { filename: string }[]
  return path.join(folder, packed!.filename)
}

/** Where the binding for another platform is kept. */
export function cachedBindingDir(projectRoot: string, name: string): string {
  return path.join(projectRoot, '.lambda-native', 'node_modules', name)
}

/** Whether the cached binding was verified against `integrity` (the lockfile's current one). */
export function isCachedBindingCurrent(dir: string, integrity: string): boolean {
  const marker = path.join(dir, VERIFIED_MARKER)
  return (
    existsSync(path.join(dir, 'duckdb.node')) &&
    existsSync(marker) &&
    readFileSync(marker, 'utf8') === integrity
  )
}

/**
 * Makes the lockfile's binding `name` available in `.lambda-native`: nothing to do when it is there, verified
 * against the lockfile's integrity; otherwise fetches the tarball, checks its hash, unpacks it and records what
 * it was verified against. Throws (nothing installed) on a hash mismatch or a failed fetch.
 */
export function installLockedBinding(
  projectRoot: string,
  name: string,
  fetchTarball: FetchTarball = npmPack,
): { readonly dir: string; readonly fetched: boolean } {
  const pkg = lockedPackage(readFileSync(path.join(projectRoot, 'package-lock.json'), 'utf8'), name)
  const dir = cachedBindingDir(projectRoot, name)
  if (isCachedBindingCurrent(dir, pkg.integrity)) return { dir, fetched: false }
  const scratch = mkdtempSync(path.join(tmpdir(), 'dimsync-native-'))
  try {
    const tarball = fetchTarball(pkg, scratch)
    checkIntegrity(readFileSync(tarball), pkg.integrity, `${name}@${pkg.version}`)
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    const unpacked = spawnSync('tar', ['-xzf', tarball, '-C', dir, '--strip-components=1'], {
      encoding: 'utf8',
    })
    if (unpacked.status !== 0) {
      rmSync(dir, { recursive: true, force: true })
      throw new Error(`unpacking ${name}@${pkg.version} failed: ${unpacked.stderr.trim()}`)
    }
    writeFileSync(path.join(dir, VERIFIED_MARKER), pkg.integrity)
    return { dir, fetched: true }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
