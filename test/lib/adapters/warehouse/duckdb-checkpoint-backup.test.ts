import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import {
  checkpointWithBackup,
  processIdentity,
  recoverInterruptedCheckpoints,
} from '../../../../lib/adapters/warehouse/duckdb-checkpoint-backup.ts'
import { DuckDbWarehouse } from '../../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import type { Row } from '../../../../lib/ports/warehouse.ts'
import { DuckDBInstance } from '@duckdb/node-api'
import { tornWriteEnvironment, tornWriteLibrary } from '../../../support/torn-write.ts'

let dir: string
let file: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dimsync-checkpoint-backup-'))
  file = join(dir, 'warehouse.duckdb')
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** The identity of a process that has exited. */
function deadProcess(): string {
  const { pid } = spawnSync(process.execPath, ['-e', '0'])
  return `${pid}-0`
}

const copyOf = (owner: string) => `${file}.before-checkpoint.${owner}`

describe('recoverInterruptedCheckpoints: what a process that died while it checkpointed left', () => {
  it('puts the copy back while the log still holds transactions: the checkpoint did not finish', async () => {
    await writeFile(file, 'torn by the checkpoint')
    await writeFile(`${file}.wal`, 'transactions')
    await writeFile(copyOf(deadProcess()), 'as before the checkpoint')
    expect(await recoverInterruptedCheckpoints(file)).toEqual(['restored'])
    expect(await readFile(file, 'utf8')).toBe('as before the checkpoint')
    expect(await readFile(`${file}.wal`, 'utf8')).toBe('transactions')
    expect(await readdir(dir)).toEqual(['warehouse.duckdb', 'warehouse.duckdb.wal'])
  })

  it('removes the copy once the log is empty or gone: the checkpoint finished', async () => {
    for (const wal of ['', undefined]) {
      await writeFile(file, 'checkpointed')
      if (wal !== undefined) await writeFile(`${file}.wal`, wal)
      await writeFile(copyOf(deadProcess()), 'as before the checkpoint')
      expect(await recoverInterruptedCheckpoints(file)).toEqual(['discarded'])
      expect(await readFile(file, 'utf8')).toBe('checkpointed')
      expect(await readdir(dir)).toEqual(
        wal === undefined ? ['warehouse.duckdb'] : ['warehouse.duckdb', 'warehouse.duckdb.wal'],
      )
      await rm(`${file}.wal`, { force: true })
    }
  })

  it('removes a copy its process did not finish, and leaves the file', async () => {
    await writeFile(file, 'as it was')
    await writeFile(`${file}.wal`, 'transactions')
    await writeFile(`${copyOf(deadProcess())}.partial`, 'half a copy')
    expect(await recoverInterruptedCheckpoints(file)).toEqual([])
    expect(await readFile(file, 'utf8')).toBe('as it was')
    expect(await readdir(dir)).toEqual(['warehouse.duckdb', 'warehouse.duckdb.wal'])
  })

  it('leaves the copy of a process still alive (it holds the file: DuckDB makes the opener wait), and copies of other files', async () => {
    await writeFile(file, 'being checkpointed')
    await writeFile(`${file}.wal`, 'transactions')
    const alive = copyOf(processIdentity(process.pid))
    await writeFile(alive, 'as before the checkpoint')
    const otherFile = join(dir, 'other.duckdb.before-checkpoint.1-0')
    await writeFile(otherFile, 'another warehouse')
    expect(await recoverInterruptedCheckpoints(file)).toEqual([])
    expect(await readFile(file, 'utf8')).toBe('being checkpointed')
    expect(existsSync(alive) && existsSync(otherFile)).toBe(true)
  })

  it('does not take a new process given the same id for the one that made the copy', async () => {
    const [pid, started] = processIdentity(process.pid).split('-')
    expect(Number(started), 'this test needs /proc').toBeGreaterThan(0)
    await writeFile(file, 'torn by the checkpoint')
    await writeFile(`${file}.wal`, 'transactions')
    await writeFile(copyOf(`${pid}-${Number(started) - 1}`), 'as before the checkpoint')
    expect(await recoverInterruptedCheckpoints(file)).toEqual(['restored'])
  })

  it('finds nothing to do where the folder does not exist yet', async () => {
    expect(await recoverInterruptedCheckpoints(join(dir, 'new', 'warehouse.duckdb'))).toEqual([])
  })
})

describe('checkpointWithBackup', () => {
  it('does nothing while the log is empty: no copy, no checkpoint', async () => {
    await writeFile(file, 'database')
    let checkpoints = 0
    await checkpointWithBackup(
      file,
      async () => void checkpoints++,
      () => undefined,
    )
    expect(checkpoints).toBe(0)
    expect(await readdir(dir)).toEqual(['warehouse.duckdb'])
  })

  it('puts the copy back when the checkpoint fails after writing part of the file', async () => {
    await writeFile(file, 'as before the checkpoint')
    await writeFile(`${file}.wal`, 'transactions')
    const failing = async () => {
      await writeFile(file, 'half written')
      throw new Error('No space left on device')
    }
    let released = false
    const release = async () => {
      // The copy is still beside the file: it replaces the file only once nothing holds it open.
      expect((await readdir(dir)).some((name) => name.includes('.before-checkpoint.'))).toBe(true)
      released = true
    }
    await expect(checkpointWithBackup(file, failing, release)).rejects.toThrow('No space left on device')
    expect(released).toBe(true)
    expect(await readFile(file, 'utf8')).toBe('as before the checkpoint')
    expect(await readdir(dir)).toEqual(['warehouse.duckdb', 'warehouse.duckdb.wal'])
  })

  it('releases DuckDB before it puts the copy back: a session that went on would fold its log into the replaced file', async () => {
    const instance = await DuckDBInstance.create(file, { checkpoint_threshold: '1000TB' })
    const connection = await instance.connect()
    await connection.run('PRAGMA disable_checkpoint_on_shutdown')
    await connection.run('CREATE TABLE t (n INTEGER)')
    await connection.run('CHECKPOINT')
    await connection.run('INSERT INTO t SELECT * FROM range(1000)')
    const release = () => {
      connection.closeSync()
      instance.closeSync()
    }
    // A checkpoint refused before it wrote anything (interrupted): DuckDB stays usable, unlike after a failed write.
    const refused = async () => {
      throw new Error('INTERRUPT Error: Interrupted!')
    }
    await expect(checkpointWithBackup(file, refused, release)).rejects.toThrow('Interrupted')
    // Once the copy is back, the session cannot write on (into the file the copy replaced) nor fold again.
    await expect(connection.run('INSERT INTO t SELECT * FROM range(1000, 2000)')).rejects.toThrow()
    await expect(
      checkpointWithBackup(file, async () => void (await connection.run('CHECKPOINT')), release),
    ).rejects.toThrow()
    const reader = await DuckDbWarehouse.open({ path: file, readOnly: true })
    expect(await reader.query('SELECT count(*) AS n FROM t')).toEqual([{ n: 1000 }])
    await reader.close()
  })
})

describe('DuckDbWarehouse: a writing session checkpoints only when it closes', () => {
  it('keeps its commits in the log until it closes, then folds them into the file and leaves no copy', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: file })
    // A log past DuckDB's 16 MiB threshold: a session that checkpointed on its own would fold it in at COMMIT.
    await warehouse.transaction(
      (tx) =>
        tx.execute({
          label: 'create',
          sql: `CREATE TABLE t AS SELECT range AS n, repeat('x', 40) AS pad FROM range(600000)`,
        }),
      { commit: true },
    )
    await warehouse.transaction(
      (tx) => tx.execute({ label: 'update', sql: `UPDATE t SET n = n + 1, pad = repeat('y', 40)` }),
      { commit: true },
    )
    expect((await readFile(`${file}.wal`)).length).toBeGreaterThan(16 * 2 ** 20)
    await warehouse.close()
    expect(await readdir(dir)).toEqual(['warehouse.duckdb'])
    const reader = await DuckDbWarehouse.open({ path: file, readOnly: true })
    expect(
      await reader.query(`SELECT sum(n) AS total, count(*) FILTER (pad LIKE 'y%') AS changed FROM t`),
    ).toEqual([{ total: 180_000_300_000, changed: 600_000 }])
    await reader.close()
  })

  it('where the copy cannot be made, fails naming the file and keeps the transactions in the log for the next close', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: file })
    await warehouse.transaction(
      (tx) => tx.execute({ label: 'create', sql: 'CREATE TABLE t AS SELECT 42 AS n' }),
      {
        commit: true,
      },
    )
    // A folder where the copy would go stands for a disk with no room for it.
    const obstacle = `${copyOf(processIdentity(process.pid))}.partial`
    await mkdir(obstacle)
    await expect(warehouse.close()).rejects.toThrow(
      `warehouse ${file}: could not copy the file before folding this run's transactions into it (`,
    )
    await rm(obstacle, { recursive: true })
    expect((await readFile(`${file}.wal`)).length).toBeGreaterThan(0)
    const again = await DuckDbWarehouse.open({ path: file })
    expect(await again.query('SELECT n FROM t')).toEqual([{ n: 42 }])
    await again.close()
    expect(await readdir(dir)).toEqual(['warehouse.duckdb'])
  })

  it('folds the log in at a commit that leaves it past foldLogAtBytes, and keeps a shorter one until it closes', async () => {
    const warehouse = await DuckDbWarehouse.open({ path: file, foldLogAtBytes: 2 ** 20 })
    const update = (label: string, sql: string) =>
      warehouse.transaction((tx) => tx.execute({ label, sql }), { commit: true })
    await update('create', `CREATE TABLE t AS SELECT range AS n, repeat('x', 40) AS pad FROM range(200000)`)
    await update('one row', 'UPDATE t SET n = n + 1 WHERE n = 0')
    const short = (await readFile(`${file}.wal`)).length
    expect(short).toBeGreaterThan(0)
    expect(short).toBeLessThan(2 ** 20)
    await update('every row', `UPDATE t SET pad = repeat('y', 40)`)
    expect(existsSync(`${file}.wal`), 'the log after a commit past the threshold').toBe(false)
    expect(await readdir(dir)).toEqual(['warehouse.duckdb'])
    await warehouse.close()
    const reader = await DuckDbWarehouse.open({ path: file, readOnly: true })
    expect(await reader.query(`SELECT count(*) FILTER (pad LIKE 'y%') AS changed FROM t`)).toEqual([
      { changed: 200_000 },
    ])
    await reader.close()
  })
})

const TORN_LIBRARY = tornWriteLibrary()

describe.skipIf(TORN_LIBRARY === undefined)('DuckDbWarehouse: a fold that finds the disk full', () => {
  /** Runs fixtures/fold-on-full-disk.ts under the library's disk-full mode; answers what each step said. */
  function session(when: 'after-commit' | 'at-close'): Record<string, string> {
    const flag = join(dir, 'disk-is-full')
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'fixtures', 'fold-on-full-disk.ts'), file, flag, when],
      {
        encoding: 'utf8',
        env: {
          ...process.env,
          ...tornWriteEnvironment(TORN_LIBRARY!, { diskFull: file, whileExists: flag }),
        },
      },
    )
    expect(run.stderr).toBe('')
    return JSON.parse(run.stdout) as Record<string, string>
  }
  const stopped = () =>
    `warehouse ${file}: folding this run's committed transactions into the file failed (` +
    `warehouse statement "checkpoint" failed: the disk is full`
  const logKeepsThem = () => `${file}.wal keeps them: the next run that opens the file folds them in`

  async function committedRows(): Promise<Row[]> {
    expect((await readdir(dir)).filter((name) => name !== 'disk-is-full').sort()).toEqual([
      'warehouse.duckdb',
      'warehouse.duckdb.wal',
    ])
    const reader = await DuckDbWarehouse.open({ path: file, readOnly: true })
    try {
      return await reader.query('SELECT count(*) AS n, max(n) AS top FROM t')
    } finally {
      await reader.close()
    }
  }

  it('after a commit: the commit stands, the session stops with an error naming the file and its log', async () => {
    const answers = session('after-commit')
    expect(answers.first).toBe('committed')
    // Its fold found the disk full: DuckDB was closed, then the file put back.
    expect(answers.second).toBe('committed')
    expect(answers.third).toContain(stopped())
    expect(answers.third).toContain(logKeepsThem())
    expect(answers.close).toBe(answers.third)
    expect(await committedRows()).toEqual([{ n: 2000, top: 1999 }])
  })

  it('at close: the close fails with the same error, and every commit is kept', async () => {
    const answers = session('at-close')
    expect([answers.first, answers.second]).toEqual(['committed', 'committed'])
    expect(answers.close).toContain(stopped())
    expect(answers.close).toContain(logKeepsThem())
    expect(await committedRows()).toEqual([{ n: 2000, top: 1999 }])
  })
})
