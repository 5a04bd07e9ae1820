import { Socket } from 'node:net'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { tableSpec } from '../../support/table-spec-builder.ts'
import { KITS, sourceSpec, type DbScratch } from './support/db-kits.ts'
import { ExtractHarness } from './support/extract-harness.ts'

/**
 * glibc's mmap threshold, as the launcher fixes it (lib/runtime/allocator-environment.mjs): a buffer of this size or more is
 * an mmap and, once freed, a munmap. Node reads a socket into a fresh 64 KiB buffer by default, so an extract that
 * lets it pays two system calls and fresh pages per read (half again the extract's CPU, bench/results/log.md).
 */
const MMAP_THRESHOLD = 64 << 10

/** The memory behind every chunk a socket emitted as 'data' while `work` ran, in order. */
async function socketReadMemory(
  work: () => Promise<unknown>,
): Promise<{ memory: ArrayBufferLike[]; bytes: number }> {
  const memory: ArrayBufferLike[] = []
  let bytes = 0
  const emit = Socket.prototype.emit
  Socket.prototype.emit = function (this: Socket, event: string | symbol, ...args: unknown[]) {
    if (event === 'data' && Buffer.isBuffer(args[0])) {
      memory.push(args[0].buffer)
      bytes += args[0].length
    }
    return Reflect.apply(emit, this, [event, ...args]) as boolean
  } as typeof emit
  try {
    await work()
  } finally {
    Socket.prototype.emit = emit
  }
  return { memory, bytes }
}

describe.each(KITS)('$kit.label source: how the connection reads its socket', ({ kit, available }) => {
  describe.skipIf(!available)(kit.name, () => {
    let db: DbScratch
    let harness: ExtractHarness
    const pg = kit.name === 'postgres'

    beforeAll(async () => {
      db = await kit.create()
      harness = await ExtractHarness.create()
      const series = pg
        ? `SELECT i FROM generate_series(1, 4000) AS s(i)`
        : `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 4000) SELECT i FROM s`
      if (!pg) await db.sql(`SET SESSION max_recursive_iterations = 4001`)
      await db.sql(`CREATE TABLE ${db.table('wide')} (id BIGINT PRIMARY KEY, note ${pg ? 'text' : 'TEXT'})`)
      await db.sql(
        `INSERT INTO ${db.table('wide')} SELECT i, ${pg ? `repeat('x', 1000)` : `REPEAT('x', 1000)`} FROM (${series}) AS n`,
      )
    })
    afterAll(async () => {
      await db?.drop()
      await harness?.close()
    })

    it('reads a 4 MB table without allocating a buffer at glibc mmap threshold per read', async () => {
      const spec = tableSpec({ name: 'wide', key: ['id'], source: sourceSpec(kit, db.table('wide')) })
      let rows = 0
      const { memory, bytes } = await socketReadMemory(async () => {
        rows = (await harness.extract(kit.source(db.env), spec)).result.rows
      })
      expect(rows).toBe(4000)
      expect(bytes).toBeGreaterThan(4_000_000)
      // PostgreSQL reads COPY into one reused buffer; MySQL into fresh buffers below the threshold.
      const large = new Set(memory.filter((m) => m.byteLength >= MMAP_THRESHOLD))
      expect(large.size, `reads into ${large.size} distinct buffers of 64 KiB or more`).toBeLessThanOrEqual(2)
    })
  })
})
