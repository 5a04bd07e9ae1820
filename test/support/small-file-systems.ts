import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const REQUIRED = process.env.DIMSYNC_REQUIRE_SERVICES === '1'

/**
 * Small file systems of their own (tmpfs mounts), to meet a full disk or a read-only folder for real. Mounting
 * needs root (CI runs as root on its machine). Where it is not allowed, the tests that need it are skipped with a
 * line saying why, unless DIMSYNC_REQUIRE_SERVICES=1 (CI), where that fails the run instead.
 */
export function canMountTmpfs(): boolean {
  const probe = mkdtempSync(join(tmpdir(), 'dimsync-tmpfs-probe-'))
  try {
    const mounted = mount(probe, 'size=64k')
    if (mounted.ok) {
      unmount(probe)
      return true
    }
    if (REQUIRED)
      throw new Error(
        `mounting a tmpfs is required (DIMSYNC_REQUIRE_SERVICES=1) but failed: ${mounted.error}`,
      )
    console.warn(
      `skipping full-disk and read-only folder tests: mounting a tmpfs failed (${mounted.error}); run as root, or set DIMSYNC_REQUIRE_SERVICES=1 to fail instead`,
    )
    return false
  } finally {
    rmSync(probe, { recursive: true, force: true })
  }
}

/** A tmpfs of `kib` KiB mounted on a new folder `dir` (created), read-only when asked. */
export function mountTmpfs(dir: string, kib: number, options: { readOnly?: boolean } = {}): void {
  mkdirSync(dir, { recursive: true })
  const mounted = mount(dir, `size=${kib}k${options.readOnly ? ',ro' : ''}`)
  if (!mounted.ok) throw new Error(`mount tmpfs on ${dir}: ${mounted.error}`)
}

/** Makes a mounted tmpfs read-only, keeping what it holds. */
export function remountReadOnly(dir: string): void {
  const r = spawnSync('mount', ['-o', 'remount,ro', dir], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`remount ${dir} read-only: ${r.stderr.trim() || r.error?.message}`)
}

/** Unmounts `dir` if something is mounted there (lazily: a process that still has a file open cannot hold it). */
export function unmount(dir: string): void {
  spawnSync('umount', ['-l', dir])
}

function mount(dir: string, options: string): { ok: true } | { ok: false; error: string } {
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { encoding: 'utf8' })
  if (r.status === 0) return { ok: true }
  return { ok: false, error: r.stderr?.trim() || r.error?.message || `exit code ${r.status}` }
}

/** The user `nobody` (uid and gid 65534), for a process that meets a folder it may not write: root only. */
export function otherUser(): { readonly uid: number; readonly gid: number } | undefined {
  if (process.getuid?.() === 0) return { uid: 65534, gid: 65534 }
  if (REQUIRED)
    throw new Error('running a process as another user is required (DIMSYNC_REQUIRE_SERVICES=1): run as root')
  console.warn(
    'skipping permission tests: starting a process as another user needs root; set DIMSYNC_REQUIRE_SERVICES=1 to fail instead',
  )
  return undefined
}
