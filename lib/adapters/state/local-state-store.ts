import { randomBytes } from 'node:crypto'
import { link, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises'
import { hostname as osHostname } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

import type { Watermark } from '../../core/batch.ts'
import { DimsyncError, WatermarkConflictError } from '../../core/errors.ts'
import {
  assertLeaseHeld,
  isLeaseExpired,
  handedOverLease,
  isSameLease,
  leaseLostError,
  leaseRefusal,
  renewedLease,
  takenLease,
  type Lease,
  type StoredLease,
} from '../../core/lease.ts'
import type { RunRecord } from '../../core/run-record.ts'
import { parseSourceTypes, type SourceTypes } from '../../core/source-types.ts'
import type { StateStore } from '../../ports/state-store.ts'
import { isProcessAlive } from '../process-liveness.ts'
import {
  assertSafeId,
  describeFolderTrouble,
  folderTrouble,
  instantSortKey,
  isErrnoCode,
  makeFolder,
  readJsonIfExists,
  writeFileAtomic,
  type StoreFolder,
} from '../staging/local-files.ts'

export interface LocalStateStoreOptions {
  /** Folder holding `<table>/watermark.json`, `lease.json` and `runs/`; created on first use. */
  readonly root: string
  /** How long to wait for the per-table mutex before giving up. Default 5000 ms. */
  readonly mutexTimeoutMs?: number
  /** Age after which a mutex file is considered left by a crashed process and broken. Default 30000 ms. */
  readonly staleMutexMs?: number
  /** Process id recorded as the lease holder. Default `process.pid` (tests pass another one). */
  readonly pid?: number
  /** Host name recorded as the lease holder. Default `os.hostname()`. */
  readonly hostname?: string
}

/** lease.json. `owner` is absent once released: the file stays to keep the fencing counter rising. */
/** `lease.json`: the lease, and which process of which host holds it (a dead local holder frees it). */
interface LeaseFile extends StoredLease {
  readonly table: string
  readonly pid?: number
  readonly hostname?: string
}

interface MutexContent {
  readonly nonce: string
  readonly pid: number
  readonly hostname: string
  readonly createdAt: string
}

const MUTEX = '.mutex'
const SOURCE_TYPES_FILE = 'source-types.json'
/** How long a mutex file without its content may be its creator's, still writing it. */
const UNWRITTEN_MUTEX_GRACE_MS = 1000

/**
 * State in a local folder (embedded mode): one folder per table with `watermark.json`, `lease.json`,
 * `source-types.json` and `runs/<startedAt>_<runId>.json`. Every read-modify-write runs under a per-table mutex file created with
 * `O_EXCL`, so the lease rules hold across processes on one machine (not across machines sharing a network
 * folder: use the DynamoDB store there).
 */
export class LocalStateStore implements StateStore {
  readonly #root: string
  readonly #mutexTimeoutMs: number
  readonly #staleMutexMs: number
  readonly #pid: number
  readonly #hostname: string

  constructor(options: LocalStateStoreOptions) {
    this.#root = resolve(options.root)
    this.#mutexTimeoutMs = options.mutexTimeoutMs ?? 5000
    this.#staleMutexMs = options.staleMutexMs ?? 30_000
    this.#pid = options.pid ?? process.pid
    this.#hostname = options.hostname ?? osHostname()
  }

  /** The table's committed watermark, or undefined before the first commit. */
  async getWatermark(table: string): Promise<Watermark | undefined> {
    return (await readJsonIfExists(join(this.#tableDir(table), 'watermark.json'))) as Watermark | undefined
  }

  /**
   * Stores `next` only if the stored watermark deep-equals `expected` (undefined: none stored yet); otherwise
   * throws `DimsyncError` naming both, so two runs can never both advance from the same position.
   */
  async commitWatermark(table: string, next: Watermark, expected: Watermark | undefined): Promise<void> {
    await this.#withMutex(table, async (dir) => {
      const path = join(dir, 'watermark.json')
      const found = (await readJsonIfExists(path)) as Watermark | undefined
      if (!jsonEqual(found, expected)) {
        throw new WatermarkConflictError(
          table,
          `table ${table}: watermark changed since it was read ` +
            `(expected ${describeJson(expected)}, found ${describeJson(found)})`,
        )
      }
      await writeFileAtomic(path, `${JSON.stringify(next)}\n`)
    })
  }

  /** Sets (or with undefined removes) the watermark if the stored one deep-equals `expected`, backwards too. */
  async resetWatermark(
    table: string,
    next: Watermark | undefined,
    expected: Watermark | undefined,
  ): Promise<void> {
    await this.#withMutex(table, async (dir) => {
      const path = join(dir, 'watermark.json')
      const found = (await readJsonIfExists(path)) as Watermark | undefined
      if (!jsonEqual(found, expected)) {
        throw new WatermarkConflictError(
          table,
          `table ${table}: watermark changed since it was read ` +
            `(expected ${describeJson(expected)}, found ${describeJson(found)})`,
        )
      }
      if (next !== undefined) await writeFileAtomic(path, `${JSON.stringify(next)}\n`)
      else
        await unlink(path).catch((error: unknown) =>
          isErrnoCode(error, 'ENOENT') ? undefined : Promise.reject(error),
        )
    })
  }

  /**
   * Takes the table's lease for `ttlMs` from `now`. Throws `LockHeldError` (holder, since = its acquiredAt)
   * when another owner holds an unexpired lease. A lease that expired, or whose holder was a process on this
   * host that no longer runs, is taken over. The new token is the stored token + 1: it never decreases, also
   * across releases. The same owner acquiring again gets a fresh lease with a higher token.
   */
  async acquireLease(table: string, owner: string, ttlMs: number, now: Date): Promise<Lease> {
    return await this.#withMutex(table, async (dir) => {
      const path = join(dir, 'lease.json')
      const stored = await readLease(table, path)
      const refusal = leaseRefusal(table, stored, owner, now)
      if (refusal !== undefined && !this.#holderIsDead(stored!)) throw refusal
      const lease = takenLease(table, stored, owner, ttlMs, now)
      await this.#writeLease(path, lease)
      return lease
    })
  }

  /**
   * Extends `lease` to `now + ttlMs`. Throws `LeaseLostError` when the stored lease has another owner or token
   * (it was taken over, or released). A lease that expired but was not taken over is still renewed.
   */
  async renewLease(lease: Lease, ttlMs: number, now: Date): Promise<Lease> {
    return await this.#withMutex(lease.table, async (dir) => {
      const path = join(dir, 'lease.json')
      const stored = await readLease(lease.table, path)
      if (!isSameLease(lease, stored)) throw leaseLostError(lease, stored)
      const renewed = renewedLease(lease, ttlMs, now)
      await this.#writeLease(path, renewed)
      return renewed
    })
  }

  /**
   * Hands `lease` over to its run until `now + ttlMs` if it is still the stored one (else `LeaseLostError`). The
   * handed-over lease names no process: it outlives the one that handed it over, by design.
   */
  async handOverLease(lease: Lease, ttlMs: number, now: Date): Promise<Lease> {
    return await this.#withMutex(lease.table, async (dir) => {
      const path = join(dir, 'lease.json')
      const stored = await readLease(lease.table, path)
      if (!isSameLease(lease, stored)) throw leaseLostError(lease, stored)
      const handedOver = handedOverLease(lease, ttlMs, now)
      await this.#writeLease(path, handedOver, { process: false })
      return handedOver
    })
  }

  /**
   * Throws `LeaseLostError` unless `lease` is the stored lease (same owner and token) and has not expired at
   * `now`: a step must not commit on an expired lease, which another run may take at any moment.
   */
  async assertLeaseHeld(lease: Lease, now: Date): Promise<void> {
    const stored = await readLease(lease.table, join(this.#tableDir(lease.table), 'lease.json'))
    assertLeaseHeld(lease, stored, now)
  }

  /** Releases `lease` if it is still the stored one; the token counter is kept. A no-op otherwise. */
  async releaseLease(lease: Lease): Promise<void> {
    await this.#withMutex(lease.table, async (dir) => {
      const path = join(dir, 'lease.json')
      const stored = await readLease(lease.table, path)
      if (!isSameLease(lease, stored)) return
      const released: LeaseFile = { table: lease.table, token: stored!.token }
      await writeFileAtomic(path, `${JSON.stringify(released)}\n`)
    })
  }

  /** Inserts or replaces (by `runId`) the record of one run. */
  async recordRun(run: RunRecord): Promise<void> {
    const fileName = runFileName(run)
    await this.#withMutex(run.table, async (dir) => {
      const runsDir = join(dir, 'runs')
      await makeFolder(runsDir)
      await writeFileAtomic(join(runsDir, fileName), `${JSON.stringify(run)}\n`)
      // The same run recorded with another startedAt must not leave its older record behind.
      const suffix = `_${encodeURIComponent(run.runId)}.json`
      for (const name of await readdir(runsDir)) {
        if (name !== fileName && name.endsWith(suffix) && !name.startsWith('.')) {
          await unlink(join(runsDir, name)).catch(() => {})
        }
      }
    })
  }

  /** The table's run records, most recent `startedAt` first, at most `limit`. */
  async listRuns(table: string, limit: number): Promise<readonly RunRecord[]> {
    const runsDir = join(this.#tableDir(table), 'runs')
    let names: string[]
    try {
      names = await readdir(runsDir)
    } catch (error) {
      if (isErrnoCode(error, 'ENOENT')) return []
      throw error
    }
    // File names start with a fixed-width sortable instant, so sorting names sorts runs without reading them.
    const selected = names
      .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
      .sort()
      .reverse()
      .slice(0, Math.max(0, limit))
    const runs: RunRecord[] = []
    for (const name of selected) {
      const run = (await readJsonIfExists(join(runsDir, name))) as RunRecord | undefined
      if (run !== undefined) runs.push(run)
    }
    return runs
  }

  /** `<table>/source-types.json`: how the last merged batch read the table's CSV columns. */
  async getSourceTypes(table: string): Promise<SourceTypes | undefined> {
    const path = join(this.#tableDir(table), SOURCE_TYPES_FILE)
    // Text that is not JSON is damaged like JSON that is not a record.
    const stored = await readJsonIfExists(path).catch((error: unknown) => {
      if (error instanceof SyntaxError) return null
      throw error
    })
    if (stored === undefined) return undefined
    const types = parseSourceTypes(stored)
    if (types === undefined) {
      throw new DimsyncError(
        `table ${table}: ${path} is damaged; remove it, and the next load chooses the CSV column types ` +
          'again from its values (or declare them with columns: in the source)',
      )
    }
    return types
  }

  async recordSourceTypes(table: string, types: SourceTypes): Promise<void> {
    await this.#withMutex(table, async (dir) => {
      await writeFileAtomic(join(dir, SOURCE_TYPES_FILE), `${JSON.stringify(types)}\n`)
    })
  }

  /**
   * The unexpired leases held by process `pid` of this host, over every table: which runs a process is doing, to
   * name it when it holds something else another process waits for (the warehouse file).
   */
  async leasesOfProcess(pid: number, now: Date): Promise<readonly Lease[]> {
    let tables: string[]
    try {
      tables = await readdir(this.#root)
    } catch (error) {
      if (isErrnoCode(error, 'ENOENT')) return []
      throw error
    }
    const leases: Lease[] = []
    for (const table of tables.filter((name) => !name.startsWith('.')).sort()) {
      const stored = await readLease(table, join(this.#root, table, 'lease.json')).catch(() => undefined)
      if (stored?.owner === undefined || stored.pid !== pid || stored.hostname !== this.#hostname) continue
      if (isLeaseExpired(stored, now)) continue
      const { owner, token, acquiredAt, expiresAt } = stored
      leases.push({ table, owner, token, acquiredAt: acquiredAt ?? '', expiresAt: expiresAt ?? '' })
    }
    return leases
  }

  async #writeLease(path: string, lease: Lease, options: { process?: boolean } = {}): Promise<void> {
    const { table, owner, token, acquiredAt, expiresAt } = lease
    const stored: LeaseFile = {
      table,
      owner,
      token,
      acquiredAt,
      expiresAt,
      ...(options.process === false ? {} : { pid: this.#pid, hostname: this.#hostname }),
    }
    await writeFileAtomic(path, `${JSON.stringify(stored)}\n`)
  }

  /** A holder on this host whose process is gone will never renew or release: its lease is as good as expired. */
  #holderIsDead(stored: LeaseFile): boolean {
    if (stored.hostname !== this.#hostname || stored.pid === undefined) return false
    return !isProcessAlive(stored.pid)
  }

  #tableDir(table: string): string {
    assertSafeId('table', table)
    return join(this.#root, table)
  }

  /**
   * Runs `action` while holding the table's mutex file. The mutex only guards a few file operations, so it is
   * held for milliseconds; waiting is a short randomized backoff, and a mutex older than `staleMutexMs`, or held
   * by a process of this host that is gone, was left by a crashed process and is broken.
   */
  async #withMutex<T>(table: string, action: (dir: string) => Promise<T>): Promise<T> {
    try {
      return await this.#underMutex(table, action)
    } catch (error) {
      throw this.#folderError(table, error)
    }
  }

  /**
   * A full disk, a read-only file system or a missing permission, as one line naming the state folder and the
   * way out; any other error as it is.
   */
  #folderError(table: string, error: unknown): unknown {
    const trouble = folderTrouble(error)
    if (trouble === undefined) return error
    const failed = error as NodeJS.ErrnoException
    const doing =
      failed.syscall === 'mkdir' || failed.syscall === 'open'
        ? `creating ${failed.path}`
        : `writing in ${join(this.#root, table)}`
    const folder: StoreFolder = {
      name: `state folder ${this.#root}`,
      setting: 'state.path in dimsync.yaml, or --state',
    }
    return new DimsyncError(`table ${table}: ${describeFolderTrouble(trouble, folder, doing)}`, {
      cause: error,
    })
  }

  async #underMutex<T>(table: string, action: (dir: string) => Promise<T>): Promise<T> {
    const dir = this.#tableDir(table)
    await makeFolder(dir)
    const mutexPath = join(dir, MUTEX)
    const content: MutexContent = {
      nonce: randomBytes(8).toString('hex'),
      pid: this.#pid,
      hostname: this.#hostname,
      createdAt: new Date().toISOString(),
    }
    const deadline = Date.now() + this.#mutexTimeoutMs
    let delay = 5
    for (;;) {
      if (await tryCreate(mutexPath, content)) break
      await this.#breakIfStale(mutexPath)
      if (Date.now() >= deadline) {
        throw new DimsyncError(
          `table ${table}: state mutex ${mutexPath} is still held after ${this.#mutexTimeoutMs} ms ` +
            `(another dimsync process is writing state; if none runs, delete the file)`,
        )
      }
      await sleep(delay + Math.random() * delay)
      delay = Math.min(delay * 2, 100)
    }
    try {
      return await action(dir)
    } finally {
      await releaseMutex(mutexPath, content.nonce)
    }
  }

  async #breakIfStale(mutexPath: string): Promise<void> {
    let seen: MutexContent | undefined
    let mtimeMs: number
    try {
      mtimeMs = (await stat(mutexPath)).mtimeMs
    } catch {
      // Gone (released meanwhile): try again on the next round.
      return
    }
    try {
      seen = JSON.parse(await readFile(mutexPath, 'utf8')) as MutexContent
    } catch {
      // Caught half-written, or left empty by a process killed between creating and writing it: its creator
      // writes it at once, so one a second old was left by a crash.
      if (Date.now() - mtimeMs < UNWRITTEN_MUTEX_GRACE_MS) return
    }
    // A holder on this host whose process is gone (killed while writing state) will never release it either.
    const holderGone = seen === undefined || (seen.hostname === this.#hostname && !isProcessAlive(seen.pid))
    if (!holderGone && Date.now() - mtimeMs < this.#staleMutexMs) return
    // Break by renaming first, then check we moved the stale file and not a fresh one created meanwhile by a
    // process that broke it just before us; a fresh one is put back with link(), which never overwrites.
    const aside = `${mutexPath}.stale-${randomBytes(6).toString('hex')}`
    try {
      await rename(mutexPath, aside)
    } catch {
      return
    }
    let moved: MutexContent | undefined
    try {
      moved = JSON.parse(await readFile(aside, 'utf8')) as MutexContent
    } catch {
      moved = undefined
    }
    if (moved !== undefined && moved.nonce !== seen?.nonce) {
      await link(aside, mutexPath).catch(() => {})
    }
    await unlink(aside).catch(() => {})
  }
}

async function tryCreate(path: string, content: MutexContent): Promise<boolean> {
  let handle
  try {
    handle = await open(path, 'wx')
  } catch (error) {
    if (isErrnoCode(error, 'EEXIST')) return false
    throw error
  }
  try {
    await handle.writeFile(JSON.stringify(content), 'utf8')
  } finally {
    await handle.close()
  }
  return true
}

async function releaseMutex(path: string, nonce: string): Promise<void> {
  // Only remove our own mutex: if ours was broken as stale (we were paused for 30 s), another process owns it now.
  try {
    const current = JSON.parse(await readFile(path, 'utf8')) as MutexContent
    if (current.nonce === nonce) await unlink(path)
  } catch {
    // Already gone.
  }
}

async function readLease(table: string, path: string): Promise<LeaseFile | undefined> {
  const stored = (await readJsonIfExists(path)) as LeaseFile | undefined
  if (stored !== undefined && (typeof stored !== 'object' || !Number.isSafeInteger(stored.token))) {
    throw new DimsyncError(`table ${table}: lease file ${path} is damaged (no integer token)`)
  }
  return stored
}

/**
 * `<startedAt as 20240131T120000.123456Z>_<runId>.json`: fixed-width and sortable, free of ':' (not allowed
 * in Windows file names), and keeping microseconds so close runs keep their order.
 */
function runFileName(run: RunRecord): string {
  if (instantSortKey(run.startedAt) === undefined) {
    throw new DimsyncError(
      `table ${run.table}: run ${run.runId}: startedAt ${JSON.stringify(run.startedAt)} is not an ISO instant`,
    )
  }
  const iso = new Date(Date.parse(run.startedAt)).toISOString()
  const micros = (/T\d{2}:\d{2}:\d{2}\.(\d+)/.exec(run.startedAt)?.[1] ?? '').padEnd(6, '0').slice(3, 6)
  const compact = `${iso.slice(0, -1).replace(/[-:]/g, '')}${micros}Z`
  return `${compact}_${encodeURIComponent(run.runId)}.json`
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === undefined || b === undefined || a === null || b === null) return false
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, i) => jsonEqual(item, b[i]))
    )
  }
  if (typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined)
    const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined)
    return (
      ka.length === kb.length &&
      ka.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
    )
  }
  return false
}

function describeJson(value: unknown): string {
  return value === undefined ? 'none' : JSON.stringify(value)
}
