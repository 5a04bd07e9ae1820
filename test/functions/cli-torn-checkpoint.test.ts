import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
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
 * `dimsync run` stopped while DuckDB checkpoints the warehouse file (folds the run's committed merges into it).
 * Killed: a DuckDB checkpoint rewrites the file's first metadata block in place (byte 12,288 of a small database),
 * a block the file's last durable header still points at; a process killed in the middle of that write leaves a
 * torn block, and DuckDB then refuses the whole file ("Corrupt database file: computed checksum … does not match
 * stored checksum … in block at location 12288"). A full disk, for real: the torn-write library's disk-full mode
 * makes every write to the warehouse file fail with ENOSPC while a flag file exists; the run must not exit 0, must
 * say what became of its commit, and the next runs must find every committed version once.
 */
const TORN_LIBRARY = tornWriteLibrary()
const FIRST_METADATA_BLOCK = 12_288
const KEYS = 2_000

let stopped: EmbeddedProject
let clean: EmbeddedProject
afterEach(async () => {
  await Promise.all([stopped.dispose(), clean.dispose()])
})

describe.skipIf(TORN_LIBRARY === undefined)(
  'dimsync run stopped while DuckDB folds its transactions into the warehouse file',
  () => {
    beforeEach(async () => {
      ;[stopped, clean] = await Promise.all([
        makeEmbeddedProject(customersYaml('deletes: invalidate'), 'dimsync-fold-stopped-'),
        makeEmbeddedProject(customersYaml('deletes: invalidate'), 'dimsync-fold-clean-'),
      ])
    })

    it('killed while DuckDB rewrites a block of the file in place (a torn write): the same command again exits 0, twice torn in a row or killed before DuckDB removes its log, and leaves the history of runs never killed', async () => {
      const spec = stopped.project.warehouse
      if (spec.type !== 'duckdb') throw new Error('the project of this test writes a DuckDB file')
      const warehouse = resolve(stopped.dir, spec.path)
      const tornBlock = tornWriteEnvironment(TORN_LIBRARY!, { path: warehouse, offset: FIRST_METADATA_BLOCK })
      // The checkpoint wrote the new header; its log is still there.
      const logLeft = tornWriteEnvironment(TORN_LIBRARY!, { unlink: `${warehouse}.wal` })
      const kills: Record<number, readonly NodeJS.ProcessEnv[]> = { 1: [tornBlock, tornBlock], 2: [logLeft] }
      const snapshot = writeCustomersSnapshots([stopped, clean], KEYS, seeded(20_261_207))
      for (const n of [0, 1, 2, 3]) {
        snapshot(n)
        const extractedAt = new Date(Date.UTC(2024, n, 1))
        const args = ['run', '--extracted-at', extractedAt.toISOString()]
        await runTable(clean.deps, clean.project.tables[0]!, { extractedAt })
        await clean.deps.releaseWarehouse?.()
        for (const [attempt, env] of (kills[n] ?? []).entries()) {
          const killed = await dimsync(stopped.dir, args, undefined, env)
          expect(killed.signal, `attempt ${attempt + 1} of snapshot ${n}: ${killed.err}`).toBe('SIGKILL')
          // The second attempt found the copy the first one left, and says what it did.
          if (attempt > 0)
            expect(killed.err).toContain(
              `warehouse ${warehouse}: a run stopped while DuckDB folded its transactions into the file; ` +
                'the copy made before was put back',
            )
        }
        if (kills[n] !== undefined) {
          // A reader first: it too finds the file as the killed run's commit left it.
          const read = runDimsync(stopped.dir, ['history', 'customers', '--format', 'json'])
          expect(read, read.err).toMatchObject({ code: 0 })
          expect(read.out.trim().split('\n').length).toBe((await history(clean)).length)
        }
        const rerun = await dimsync(stopped.dir, args)
        expect(rerun, `run of snapshot ${n}: ${rerun.err}`).toMatchObject({ code: 0 })
      }
      expect(await history(stopped)).toEqual(await history(clean))
      await expectNothingLeft(stopped, 'customers')
      expect(filesBeside(warehouse), 'files left beside the warehouse').toEqual([])
    })

    it('on a disk that fills up (the torn-write library in its disk-full mode): fails naming the file and its log, keeps the commit; once there is room, readers and runs find it, merged once', async () => {
      const spec = stopped.project.warehouse
      if (spec.type !== 'duckdb') throw new Error('the project of this test writes a DuckDB file')
      const warehouse = resolve(stopped.dir, spec.path)
      const flag = join(stopped.dir, 'disk-is-full')
      const diskFull = tornWriteEnvironment(TORN_LIBRARY!, { diskFull: warehouse, whileExists: flag })
      const snapshot = writeCustomersSnapshots([stopped, clean], KEYS, seeded(20_261_207))
      const args = (n: number) => ['run', '--extracted-at', new Date(Date.UTC(2024, n, 1)).toISOString()]
      for (const n of [0, 1, 2]) {
        snapshot(n)
        await runTable(clean.deps, clean.project.tables[0]!, { extractedAt: new Date(Date.UTC(2024, n, 1)) })
        await clean.deps.releaseWarehouse?.()
        if (n === 1) {
          writeFileSync(flag, '')
          const failed = await dimsync(stopped.dir, args(n), undefined, diskFull)
          expect(failed.code, failed.err).not.toBe(0)
          expect(failed.err).toContain(
            `warehouse ${warehouse}: folding this run's committed transactions into the file failed (warehouse ` +
              'statement "checkpoint" failed: the disk is full: statement "checkpoint" needs room for the warehouse ' +
              'file, its log and temporary files; free disk space and run again); ',
          )
          expect(failed.err).toContain(
            `the file was put back as it was before and ${warehouse}.wal keeps them: the next run that opens the ` +
              'file folds them in. This run stops here; what it committed is kept',
          )
          expect(existsSync(`${warehouse}.wal`), 'the log of the committed merge').toBe(true)
          rmSync(flag)
          // A reader first: the committed merge is there.
          const read = runDimsync(stopped.dir, ['history', 'customers', '--format', 'json'])
          expect(read, read.err).toMatchObject({ code: 0 })
          expect(read.out.trim().split('\n').length).toBe((await history(clean)).length)
        }
        const run = await dimsync(stopped.dir, args(n))
        expect(run, `run of snapshot ${n}: ${run.err}`).toMatchObject({ code: 0 })
        expect(await history(stopped), `after snapshot ${n}`).toEqual(await history(clean))
        await stopped.deps.releaseWarehouse?.()
      }
      await expectNothingLeft(stopped, 'customers')
      expect(filesBeside(warehouse), 'files left beside the warehouse').toEqual([])
    })
  },
)
