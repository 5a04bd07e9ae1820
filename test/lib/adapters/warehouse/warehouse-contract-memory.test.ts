import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, it } from 'vitest'
import { DuckDbWarehouse } from '../../../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { openMemoryWarehouse } from '../../../../lib/adapters/warehouse/duckdb-memory-warehouse.ts'
import type { StagedColumn } from '../../../../lib/core/batch.ts'
import type { TableSpec } from '../../../../lib/core/table-spec.ts'
import {
  holdingsOf,
  mergeOutcome,
  type MergeOutcome,
  type MergeTally,
  type TextRows,
} from '../../../support/both-warehouses.ts'
import { checkGuards } from '../../../support/guard-check.ts'
import { MemoryBatches } from '../../../support/memory-batches.ts'
import type { Value } from '../../../support/parquet-rows.ts'
import { TestBatches } from '../../../support/staged-batches.ts'
import {
  CONTRACT_GROUPS,
  runScenario,
  type ScenarioDimension,
  type ScenarioPair,
} from '../../../support/warehouse-contract-scenarios.ts'

/**
 * The warehouse contract (test/support/warehouse-contract-scenarios.ts) on the in-memory ports against the file
 * ports: the in-memory warehouse (DuckDB at ':memory:', openMemoryWarehouse) fed by the in-memory staging store
 * (MemoryBatches), and the CLI's DuckDB on a database file fed by Parquet parts in a folder (TestBatches). After
 * every merge the same outcome, at the end the same rows: the fast tier's tests prove what the file-backed
 * warehouse does.
 */

interface OnMemoryAndFile<T> {
  readonly duckdb: T
  readonly file: T
}

const tally: OnMemoryAndFile<MergeTally> = {
  duckdb: { calls: 0, ms: 0, merged: 0, statements: 0 },
  file: { calls: 0, ms: 0, merged: 0, statements: 0 },
}
const folders: string[] = []
afterAll(async () => {
  await Promise.all(folders.map((dir) => rm(dir, { recursive: true, force: true })))
})

const memoryAndFile: ScenarioPair<'file'> = {
  other: 'file',
  otherName: 'DuckDB on a file',
  async open(table, columns, numbering) {
    const dir = await mkdtemp(join(tmpdir(), 'dimsync-contract-file-'))
    folders.push(dir)
    return new MemoryAndFileDimension(
      table,
      columns,
      numbering,
      {
        duckdb: checkGuards(await openMemoryWarehouse()),
        file: checkGuards(await DuckDbWarehouse.open({ path: join(dir, 'warehouse.duckdb') })),
      },
      { duckdb: await MemoryBatches.create(), file: await TestBatches.create() },
    )
  },
}

/** One dimension on both: every batch staged in both stores under one id, merged into both with the same clock. */
class MemoryAndFileDimension implements ScenarioDimension<'file'> {
  #clock = Date.parse('2030-01-01T00:00:00Z')
  #seq = 0

  constructor(
    readonly table: TableSpec,
    readonly columns: readonly StagedColumn[],
    readonly numbering: { readonly rowsPerKeyBucket?: number },
    readonly warehouses: OnMemoryAndFile<DuckDbWarehouse>,
    readonly batches: OnMemoryAndFile<MemoryBatches | TestBatches>,
  ) {}

  async stage(
    rows: readonly Record<string, Value>[],
    options: { extractedAt: string; mode?: 'full' | 'incremental'; columns?: readonly StagedColumn[] },
  ): Promise<string> {
    const batchId = `b${String(++this.#seq).padStart(4, '0')}`
    const staged = {
      extractedAt: options.extractedAt,
      mode: options.mode ?? this.table.extract.mode,
      batchId,
    }
    const columns = options.columns ?? this.columns
    await this.batches.duckdb.stage(this.table.name, columns, rows, staged)
    await this.batches.file.stage(this.table.name, columns, rows, staged)
    return batchId
  }

  async merge(
    batchId: string,
    options: { allowMassDelete?: boolean },
  ): Promise<OnMemoryAndFile<MergeOutcome>> {
    this.#clock += 1000
    const now = new Date(this.#clock)
    const on = (side: keyof OnMemoryAndFile<unknown>) =>
      mergeOutcome(this.warehouses[side], this.batches[side], tally[side], {
        table: this.table,
        schema: 'main',
        batchId,
        now,
        ...this.numbering,
        ...options,
      })
    const [duckdb, file] = await Promise.all([on('duckdb'), on('file')])
    return { duckdb, file }
  }

  async holdings(asOf: readonly string[]): Promise<OnMemoryAndFile<Record<string, TextRows>>> {
    const on = (side: keyof OnMemoryAndFile<unknown>) =>
      holdingsOf(this.warehouses[side], this.table, 'main', asOf, true)
    const [duckdb, file] = await Promise.all([on('duckdb'), on('file')])
    return { duckdb, file }
  }

  async close(): Promise<void> {
    await this.warehouses.duckdb.close()
    await this.warehouses.file.close()
    await this.batches.duckdb.dispose()
    await this.batches.file.dispose()
  }
}

describe.each(CONTRACT_GROUPS)(
  'warehouse contract, %s: the in-memory ports and DuckDB on files agree',
  (_group, scenarios) => {
    it.each(Object.keys(scenarios))('%s', async (name) => {
      await runScenario(memoryAndFile, scenarios[name]!)
    })
  },
)
