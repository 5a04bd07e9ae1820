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
 * `dimsync run` whose disk fills up while it folds the run's committed merge into the DuckDB file at its end. The
 * disk is full for real: the torn-write library's disk-full mode makes every write to the warehouse file fail
 * with ENOSPC while a flag file exists (test/support/torn-write.ts). The run must not exit 0, must say what became
 * of its commit, and the next runs must find every committed version once, nothing merged twice.
 */
const TORN_LIBRARY = tornWriteLibrary()
const KEYS = 2_000

let full: EmbeddedProject
let clean: EmbeddedProject
afterEach(async () => {
  await Promise.all([full.dispose(), clean.dispose()])
})

describe.skipIf(TORN_LIBRARY === undefined)('dimsync run on a disk that fills up while it folds', () => {
  beforeEach(async () => {
    ;[full, clean] = await Promise.all([
      makeEmbeddedProject(customersYaml('deletes: invalidate'), 'dimsync-full-disk-'),
      makeEmbeddedProject(customersYaml('deletes: invalidate'), 'dimsync-full-disk-clean-'),
    ])
  })

  it('fails naming the file and its log, keeps the commit; once there is room, readers and runs find it, merged once', async () => {
    const spec = full.project.warehouse
    if (spec.type !== 'duckdb') throw new Error('the project of this test writes a DuckDB file')
    const warehouse = resolve(full.dir, spec.path)
    const flag = join(full.dir, 'disk-is-full')
    const diskFull = tornWriteEnvironment(TORN_LIBRARY!, { diskFull: warehouse, whileExists: flag })
    const snapshot = writeCustomersSnapshots([full, clean], KEYS, seeded(20_261_207))
    const args = (n: number) => ['run', '--extracted-at', new Date(Date.UTC(2024, n, 1)).toISOString()]
    for (const n of [0, 1, 2]) {
      snapshot(n)
      await runTable(clean.deps, clean.project.tables[0]!, { extractedAt: new Date(Date.UTC(2024, n, 1)) })
      await clean.deps.releaseWarehouse?.()
      if (n === 1) {
        writeFileSync(flag, '')
        const failed = await dimsync(full.dir, args(n), undefined, diskFull)
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
        const read = runDimsync(full.dir, ['history', 'customers', '--format', 'json'])
        expect(read, read.err).toMatchObject({ code: 0 })
        expect(read.out.trim().split('\n').length).toBe((await history(clean)).length)
      }
      const run = await dimsync(full.dir, args(n))
      expect(run, `run of snapshot ${n}: ${run.err}`).toMatchObject({ code: 0 })
      expect(await history(full), `after snapshot ${n}`).toEqual(await history(clean))
      await full.deps.releaseWarehouse?.()
    }
    await expectNothingLeft(full, 'customers')
    expect(filesBeside(warehouse), 'files left beside the warehouse').toEqual([])
  })
})
