import { spawn, spawnSync } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { LocalStateStore } from '../../../../lib/adapters/state/local-state-store.ts'
import { LockHeldError } from '../../../../lib/core/errors.ts'
import { describeStateStoreContract } from '../../../contract/state-store.contract.ts'

const here = dirname(fileURLToPath(import.meta.url))
const projectDir = join(here, '..', '..', '..', '..')

describeStateStoreContract('local folder', async () => {
  const root = await mkdtemp(join(tmpdir(), 'dimsync-state-'))
  return { store: new LocalStateStore({ root }), cleanup: () => rm(root, { recursive: true, force: true }) }
})

interface ChildOutcome {
  readonly ok: boolean
  readonly lease?: { owner: string; token: number; acquiredAt: string }
  readonly name?: string
  readonly message?: string
}

interface RacingChild {
  /** The child's outcome, printed once it tried to take the lease (the child then stays alive). */
  readonly outcome: Promise<ChildOutcome>
  /** Lets the child exit (without releasing) and resolves when it has. */
  exit(): Promise<void>
}

function startChild(root: string, table: string, owner: string, startAt: number): RacingChild {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(here, 'fixtures', 'acquire-lease.ts'), root, table, owner, String(startAt)],
    { cwd: projectDir, stdio: ['pipe', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  const closed = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', resolve)
  })
  const outcome = new Promise<ChildOutcome>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('\n')) resolve(JSON.parse(out.trim()) as ChildOutcome)
    })
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
    void closed.then((code) => reject(new Error(`child ${owner} exited with ${code} before trying: ${err}`)))
  })
  return {
    outcome,
    async exit() {
      child.stdin.end()
      const code = await closed
      if (code !== 0) throw new Error(`child ${owner} exited with ${code}: ${err}`)
    },
  }
}

describe('LocalStateStore (local specifics)', () => {
  let root: string

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'dimsync-state-'))
  })
  afterEach(async () => {
    await rm(root, { recursive: true, force: true })
  })

  it('two processes racing for one lease: exactly one wins, the other gets LockHeldError', async () => {
    for (let round = 0; round < 2; round++) {
      const table = 'customers'
      await rm(join(root, table), { recursive: true, force: true })
      // Start both at the same instant, after tsx has loaded in each, so they really race.
      const startAt = Date.now() + 2000
      const children = [
        startChild(root, table, `run-a${round}`, startAt),
        startChild(root, table, `run-b${round}`, startAt),
      ]
      // Both stay alive until both have tried, however slowly either of them started: the loser meets a live holder.
      const outcomes = await Promise.all(children.map((c) => c.outcome))
      await Promise.all(children.map((c) => c.exit()))
      const winners = outcomes.filter((o) => o.ok)
      const losers = outcomes.filter((o) => !o.ok)
      expect(winners).toHaveLength(1)
      expect(losers).toHaveLength(1)
      const lease = winners[0]!.lease!
      expect(losers[0]!.name).toBe('LockHeldError')
      expect(losers[0]!.message).toBe(
        `table customers is locked by run ${lease.owner} since ${lease.acquiredAt}`,
      )
      expect(lease.token).toBe(1)

      // The winner exited without releasing: its lease (TTL 10 min) is taken over at once, with a higher token.
      const store = new LocalStateStore({ root })
      const taken = await store.acquireLease(table, 'run-parent', 60_000, new Date())
      expect(taken.token).toBe(2)
    }
  })

  it('a lease held by a dead process on this host is taken over before its TTL', async () => {
    const deadPid = await exitedPid()
    const crashed = new LocalStateStore({ root, pid: deadPid })
    const now = new Date()
    const old = await crashed.acquireLease('customers', 'run-crashed', 3_600_000, now)
    const store = new LocalStateStore({ root })
    const lease = await store.acquireLease('customers', 'run-new', 60_000, new Date(now.getTime() + 1000))
    expect(lease.token).toBe(old.token + 1)
    await expect(crashed.renewLease(old, 60_000, new Date())).rejects.toThrow(
      /was lost: it is now held by run run-new/,
    )
  })

  it('a lease held by a live process, or by a process on another host, waits for its TTL', async () => {
    const now = new Date()
    const elsewhere = new LocalStateStore({ root, pid: await exitedPid(), hostname: 'some-other-host' })
    await elsewhere.acquireLease('customers', 'run-remote', 60_000, now)
    const store = new LocalStateStore({ root })
    await expect(store.acquireLease('customers', 'run-b', 60_000, now)).rejects.toBeInstanceOf(LockHeldError)
    await new LocalStateStore({ root }).acquireLease('suppliers', 'run-live', 60_000, now)
    await expect(
      new LocalStateStore({ root }).acquireLease('suppliers', 'run-c', 60_000, now),
    ).rejects.toBeInstanceOf(LockHeldError)
  })

  it('release keeps the token counter in lease.json and records pid and host while held', async () => {
    const store = new LocalStateStore({ root, hostname: 'host-1', pid: process.pid })
    const lease = await store.acquireLease('customers', 'run-a', 60_000, new Date('2024-01-01T00:00:00Z'))
    const held = JSON.parse(await readFile(join(root, 'customers', 'lease.json'), 'utf8'))
    expect(held).toMatchObject({ owner: 'run-a', token: 1, pid: process.pid, hostname: 'host-1' })
    await store.releaseLease(lease)
    expect(JSON.parse(await readFile(join(root, 'customers', 'lease.json'), 'utf8'))).toEqual({
      table: 'customers',
      token: 1,
    })
  })

  it('breaks a mutex file left by a crashed process once it is stale, and waits for a fresh one', async () => {
    await mkdir(join(root, 'customers'), { recursive: true })
    const mutex = join(root, 'customers', '.mutex')
    await writeFile(
      mutex,
      JSON.stringify({ nonce: 'dead', pid: 1, hostname: 'x', createdAt: '2024-01-01T00:00:00Z' }),
    )
    const fresh = new LocalStateStore({ root, mutexTimeoutMs: 300 })
    await expect(fresh.acquireLease('customers', 'run-a', 60_000, new Date())).rejects.toThrow(
      /table customers: state mutex .* is still held after 300 ms/,
    )
    const old = new Date(Date.now() - 60_000)
    await utimes(mutex, old, old)
    const lease = await fresh.acquireLease('customers', 'run-a', 60_000, new Date())
    expect(lease.token).toBe(1)
  })

  it('breaks at once a mutex file whose process on this host is gone (a run killed while writing state)', async () => {
    await mkdir(join(root, 'customers'), { recursive: true })
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!
    await writeFile(
      join(root, 'customers', '.mutex'),
      JSON.stringify({ nonce: 'dead', pid: dead, hostname: hostname(), createdAt: new Date().toISOString() }),
    )
    const fresh = new LocalStateStore({ root, mutexTimeoutMs: 300 })
    const lease = await fresh.acquireLease('customers', 'run-a', 60_000, new Date())
    expect(lease.token).toBe(1)
  })

  it('breaks an empty mutex file (a run killed between creating it and writing it) once it is a second old', async () => {
    await mkdir(join(root, 'customers'), { recursive: true })
    const mutex = join(root, 'customers', '.mutex')
    await writeFile(mutex, '')
    const old = new Date(Date.now() - 2000)
    await utimes(mutex, old, old)
    const fresh = new LocalStateStore({ root, mutexTimeoutMs: 300 })
    const lease = await fresh.acquireLease('customers', 'run-a', 60_000, new Date())
    expect(lease.token).toBe(1)
  })

  it('serializes concurrent writers in one process: one lease winner, one watermark winner', async () => {
    const stores = Array.from({ length: 8 }, () => new LocalStateStore({ root }))
    const now = new Date()
    const leases = await Promise.allSettled(
      stores.map((store, i) => store.acquireLease('customers', `run-${i}`, 60_000, now)),
    )
    expect(leases.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    const start = { cursor: 0, key: [] }
    await stores[0]!.commitWatermark('customers', start, undefined)
    // Every writer advances from the same position it read: exactly one may win, the others are told.
    const commits = await Promise.allSettled(
      stores.map((store, i) => store.commitWatermark('customers', { cursor: i + 1, key: [] }, start)),
    )
    expect(commits.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
  })

  it('refuses table ids that could escape the root', async () => {
    const store = new LocalStateStore({ root })
    await expect(store.getWatermark('../x')).rejects.toThrow(/invalid table id/)
  })
})

/** The pid of a process that has exited (pids are not reused that quickly). */
function exitedPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
    child.on('error', reject)
    child.on('close', () => resolve(child.pid!))
  })
}
