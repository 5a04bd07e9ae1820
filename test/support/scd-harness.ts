import type { StagedColumn } from '../../lib/core/batch.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { DuckDbWarehouse } from '../../lib/adapters/warehouse/duckdb-warehouse.ts'
import { mergeBatch, type MergeBatchResult } from '../../lib/use-cases/merge-batch.ts'
import { checkGuards } from './guard-check.ts'
import { MemoryBatches } from './memory-batches.ts'
import type { Value } from './parquet-rows.ts'
import { openSmallWarehouse } from './small-warehouse.ts'

export interface VersionRow {
  readonly [column: string]: string | number | boolean | null
}

/**
 * The in-memory warehouse (real DuckDB at ':memory:') + staged Parquet batches in the in-memory staging store: load
 * rows, merge, read the history back. Nothing reaches a file or a server (the fast test tier).
 */
export class ScdHarness {
  #clock = Date.parse('2030-01-01T00:00:00Z')

  private constructor(
    readonly table: TableSpec,
    readonly columns: readonly StagedColumn[],
    readonly warehouse: DuckDbWarehouse,
    readonly batches: MemoryBatches,
  ) {}

  static async create(table: TableSpec, columns: readonly StagedColumn[]): Promise<ScdHarness> {
    return new ScdHarness(
      table,
      columns,
      checkGuards(await openSmallWarehouse()),
      await MemoryBatches.create(),
    )
  }

  async stage(
    rows: readonly Record<string, Value>[],
    options: {
      extractedAt: string
      mode?: 'full' | 'incremental'
      batchId?: string
      columns?: readonly StagedColumn[]
    },
  ): Promise<string> {
    return this.batches.stage(this.table.name, options.columns ?? this.columns, rows, {
      ...options,
      mode: options.mode ?? this.table.extract.mode,
    })
  }

  async merge(
    batchId: string,
    options: { allowMassDelete?: boolean; dryRun?: boolean; rowsPerKeyBucket?: number } = {},
  ): Promise<MergeBatchResult> {
    this.#clock += 1000
    return mergeBatch(
      { warehouse: this.warehouse, staging: this.batches },
      { table: this.table, schema: 'main', batchId, now: new Date(this.#clock), ...options },
    )
  }

  async load(
    rows: readonly Record<string, Value>[],
    options: {
      extractedAt: string
      mode?: 'full' | 'incremental'
      batchId?: string
      allowMassDelete?: boolean
      rowsPerKeyBucket?: number
    },
  ): Promise<MergeBatchResult> {
    return this.merge(await this.stage(rows, options), options)
  }

  /** All versions, ordered by key then valid_from; timestamps as ISO strings. */
  async history(): Promise<VersionRow[]> {
    const n = this.table.columns
    const keys = this.table.key.map((k) => `"${k}"`).join(', ')
    try {
      return (await this.warehouse.query(
        `SELECT * FROM main."${this.table.target}" ORDER BY ${keys}, "${n.validFrom}"`,
      )) as VersionRow[]
    } catch (error) {
      // Asked only when the read fails: a check before every read cost as much as the read.
      if ((await this.warehouse.describeTable({ schema: 'main', name: this.table.target })) === undefined)
        return []
      throw error
    }
  }

  async query(sql: string) {
    return this.warehouse.query(sql)
  }

  async dispose(): Promise<void> {
    await this.warehouse.close()
    await this.batches.dispose()
  }
}
