import { resolve } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { runTable } from '../../lib/use-cases/run-table.ts'
import { runDimsync } from '../support/cli-process.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../support/embedded-project.ts'
import {
  dimsyncKilledAt as dimsync,
  expectNothingLeft,
  filesBeside,
  historyOf as history,
  seeded,
  writeCustomersSnapshots,
} from '../support/killed-runs.ts'
import { tornWriteEnvironment, tornWriteLibrary } from '../support/torn-write.ts'

/**
 * `dimsync run` killed while DuckDB checkpoints the warehouse file. A DuckDB checkpoint rewrites the file's first
 * metadata block in place (byte 12,288 of a small database), a block the file's last durable header still points
 * at; a process killed in the middle of that write leaves a torn block, and DuckDB then refuses the whole file
 * ("Corrupt database file: computed checksum … does not match stored checksum … in block at location 12288").
 */
const TORN_LIBRARY = tornWriteLibrary()
const FIRST_METADATA_BLOCK = 12_288
const KEYS = 2_000

let killed: EmbeddedProject
let clean: EmbeddedProject
afterEach(async () => {
  await Promise.all([killed.dispose(), clean.dispose()])
})

describe.skipIf(TORN_LIBRARY === undefined)(
  'dimsync run killed while DuckDB rewrites a block of the warehouse file in place (a torn write)',
  () => {
    beforeEach(async () => {
      ;[killed, clean] = await Promise.all([
        makeEmbeddedProject(customersYaml('deletes: invalidate'), 'dimsync-torn-'),
        makeEmbeddedProject(customersYaml('deletes: invalidate'), 'dimsync-torn-clean-'),
      ])
    })

    it('the same command again exits 0, twice torn in a row or killed before DuckDB removes its log, and leaves the history of runs never killed', async () => {
      const spec = killed.project.warehouse
      if (spec.type !== 'duckdb') throw new Error('the project of this test writes a DuckDB file')
      const warehouse = resolve(killed.dir, spec.path)
      const tornBlock = tornWriteEnvironment(TORN_LIBRARY!, { path: warehouse, offset: FIRST_METADATA_BLOCK })
      // The checkpoint wrote the new header; its log is still there.
      const logLeft = tornWriteEnvironment(TORN_LIBRARY!, { unlink: `${warehouse}.wal` })
      const kills: Record<number, readonly NodeJS.ProcessEnv[]> = { 1: [tornBlock, tornBlock], 2: [logLeft] }
      const snapshot = writeCustomersSnapshots([killed, clean], KEYS, seeded(20_261_207))
      for (const n of [0, 1, 2, 3]) {
        snapshot(n)
        const extractedAt = new Date(Date.UTC(2024, n, 1))
        const args = ['run', '--extracted-at', extractedAt.toISOString()]
        await runTable(clean.deps, clean.project.tables[0]!, { extractedAt })
        await clean.deps.releaseWarehouse?.()
        for (const [attempt, env] of (kills[n] ?? []).entries()) {
          const stopped = await dimsync(killed.dir, args, undefined, env)
          expect(stopped.signal, `attempt ${attempt + 1} of snapshot ${n}: ${stopped.err}`).toBe('SIGKILL')
          // The second attempt found the copy the first one left, and says what it did.
          if (attempt > 0)
            expect(stopped.err).toContain(
              `warehouse ${warehouse}: a run stopped while DuckDB folded its transactions into the file; ` +
                'the copy made before was put back',
            )
        }
        if (kills[n] !== undefined) {
          // A reader first: it too finds the file as the killed run's commit left it.
          const read = runDimsync(killed.dir, ['history', 'customers', '--format', 'json'])
          expect(read, read.err).toMatchObject({ code: 0 })
          expect(read.out.trim().split('\n').length).toBe((await history(clean)).length)
        }
        const rerun = await dimsync(killed.dir, args)
        expect(rerun, `run of snapshot ${n}: ${rerun.err}`).toMatchObject({ code: 0 })
      }
      expect(await history(killed)).toEqual(await history(clean))
      await expectNothingLeft(killed, 'customers')
      expect(filesBeside(warehouse), 'files left beside the warehouse').toEqual([])
    })
  },
)
