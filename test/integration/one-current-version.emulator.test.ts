import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BigQueryWarehouse } from '../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { PostgresWarehouse } from '../../lib/adapters/warehouse/postgres-warehouse.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import type { BatchWork } from '../../lib/core/batch-work.ts'
import type { StagingStore } from '../../lib/ports/staging-store.ts'
import type { Warehouse } from '../../lib/ports/warehouse.ts'
import type { SqlDialect } from '../../lib/sql/dialect.ts'
import { mergeBatch } from '../../lib/use-cases/merge-batch.ts'
import { withTestEmulator } from '../support/bigquery-emulator/emulator-per-test.ts'
import { ZetaSqlService } from '../support/bigquery-emulator/zetasql-service.ts'
import { markdownBlocks } from '../support/markdown-blocks.ts'
import { MemoryBatches } from '../support/memory-batches.ts'
import { openSmallWarehouse } from '../support/small-warehouse.ts'
import { TestBatches } from '../support/staged-batches.ts'
import { tableSpec } from '../support/table-spec-builder.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { dropPostgresSchemas, PG_URL } from './sources/support/db-services.ts'

/*
 * Invariant 2 (docs/invariants.md) checked on what a merge wrote, before it commits: a key the batch touched with
 * more than one current version refuses the batch. Only a defect of dimsync's own statements can leave one (every
 * input is checked before), so the defect is planted in the work the merge hands the warehouse (both its forms:
 * the statements of one transaction, and BigQuery's script). Without the check the merge commits a second current
 * version.
 */
process.env.METADATA_SERVER_DETECTION = 'none'

const COLUMNS: StagedColumn[] = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'region', type: 'VARCHAR' },
]
/** The close of changed versions closes none, as a wrong predicate would. */
const CLOSE_NONE = { label: 'close changed current versions', defect: (sql: string) => `${sql} AND FALSE` }
/** The close of changed versions ends their windows but leaves them flagged is_current. */
const CLOSED_LEFT_CURRENT = {
  label: 'close changed current versions',
  defect: (sql: string) => sql.replace(/(["`]is_current["`]) = FALSE/, '$1 = TRUE'),
}
/**
 * A bitemporal table's merge runs on a working copy, then closes in system time the rows it superseded: here it
 * closes none, so the version the batch closed stays known now beside the new one.
 */
const SUPERSEDED_LEFT_KNOWN = {
  label: 'system time: close superseded rows',
  defect: (sql: string) => `${sql} AND FALSE`,
}
/** The late path's window move leaves the versions it moves open (valid_to NULL), instead of ending them. */
const MOVED_LEFT_OPEN = {
  label: 'late keys: move windows of existing versions',
  defect: (sql: string) => sql.replace(/(["`]valid_to["`]) = COALESCE\([^)]*\)/, '$1 = NULL'),
}
/** The late path's window move marks every version it moves current, leaving its window closed. */
const MOVED_MARKED_CURRENT = {
  label: 'late keys: move windows of existing versions',
  defect: (sql: string) => sql.replace(/ = v\.("[^"]+"|`[^`]+`) IS NULL(?=[,\n])/, ' = TRUE'),
}
type Defect = typeof CLOSE_NONE
/** An open end held as a sentinel instant instead of NULL (`open_end`). */
const OPEN_END = '9999-12-31T23:59:59Z'

/** `work` with the statement `defect.label` names rewritten, in the form the warehouse asks for. */
function withDefect(work: BatchWork, { label, defect }: Defect): BatchWork {
  const planted = (sql: string) => {
    const changed = defect(sql)
    if (changed === sql) throw new Error(`the statement "${label}" changed shape: ${sql}`)
    return changed
  }
  return {
    inTransaction() {
      const transaction = work.inTransaction()
      return {
        ...transaction,
        statements: transaction.statements.map((s) =>
          s.label === label ? { ...s, sql: planted(s.sql) } : s,
        ),
      }
    },
    asScript() {
      const script = work.asScript()
      const target = script.merge.find((s) => s.label === label)
      if (target === undefined) return script
      // A script's statements are indented in its blocks (bigquery-script.ts): the statement after its step label.
      const step = `= ${JSON.stringify(label).replaceAll('"', "'")};\n`
      const indent = /^ */.exec(script.text.slice(script.text.indexOf(step) + step.length))![0]
      const indented = (sql: string) => sql.replaceAll('\n', `\n${indent}`)
      const text = script.text.replace(indented(target.sql), indented(planted(target.sql)))
      if (text === script.text) throw new Error(`the statement "${label}" is not in the script as rendered`)
      return { ...script, text }
    },
  }
}

/** Makes `warehouse` apply every batch's work with `defect` while `planted()` holds. */
function plantDefect(warehouse: Warehouse<SqlDialect>, defect: Defect, planted: () => boolean): void {
  const apply = warehouse.applyWork.bind(warehouse)
  warehouse.applyWork = (work, request) => apply(planted() ? withDefect(work, defect) : work, request)
}

interface Subject {
  readonly warehouse: Warehouse<SqlDialect>
  readonly schema: string
  readonly staging: StagingStore & Pick<MemoryBatches, 'stage'>
}

/** The fenced blocks of docs/errors.md (the repair of a bent dimension is run as written there). */
const ERRORS_DOC = markdownBlocks(
  'docs/errors.md',
  readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'errors.md'), 'utf8'),
)

/** A table whose events carry their change time, so that an event older than the dimension's is late. */
const lateTable = () =>
  tableSpec({
    deletes: 'invalidate',
    extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
    validFrom: { kind: 'column', column: 'updated_at' },
  })
const LATE_COLUMNS: StagedColumn[] = [...COLUMNS, { name: 'updated_at', type: 'TIMESTAMP' }]

/** Merges one event of customer 101 (`region` as of `updated_at`), extracted at `extractedAt`. */
const lateLoader =
  (warehouse: Warehouse<SqlDialect>, schema: string, staging: Subject['staging'], table: TableSpec) =>
  async (region: string, updated_at: string, extractedAt: string) =>
    mergeBatch(
      { warehouse, staging },
      {
        table,
        schema,
        batchId: await staging.stage(table.name, LATE_COLUMNS, [{ customer_id: 101, region, updated_at }], {
          extractedAt,
          mode: 'incremental',
        }),
        now: new Date(),
      },
    )

let batches: MemoryBatches
let files: TestBatches
let zetaSql: ZetaSqlService
beforeAll(async () => {
  batches = await MemoryBatches.create()
  files = await TestBatches.create()
  zetaSql = await ZetaSqlService.start()
})
afterAll(async () => {
  await batches?.dispose()
  await files?.dispose()
  await zetaSql?.stop()
})

/** Each warehouse: runs `body` on a fresh, empty one, closed (and its schema dropped) afterwards. */
const subjects: [string, (body: (subject: Subject) => Promise<void>) => Promise<void>][] = [
  [
    'DuckDB',
    async (body) => {
      const warehouse = await openSmallWarehouse()
      try {
        await body({ warehouse, schema: 'main', staging: batches })
      } finally {
        await warehouse.close()
      }
    },
  ],
  [
    'PostgreSQL',
    async (body) => {
      const schema = `dimsync_test_${randomBytes(6).toString('hex')}`
      const warehouse = await PostgresWarehouse.open({ url: PG_URL })
      try {
        await warehouse.createSchemaIfMissing(schema)
        await body({ warehouse, schema, staging: batches })
      } finally {
        await warehouse.close()
        await dropPostgresSchemas(schema)
      }
    },
  ],
  [
    'BigQuery (emulator)',
    (body) =>
      withTestEmulator(
        { zetaSql, dataset: { project: 'acme-dw', dataset: 'history', location: 'EU' } },
        (emulator) =>
          body({
            warehouse: new BigQueryWarehouse({
              project: 'acme-dw',
              location: 'EU',
              ...emulator.clientOptions(),
              pollIntervalMs: 5,
              retryDelayMs: 1,
            }),
            schema: 'history',
            staging: files,
          }),
      ),
  ],
]

describe.each(subjects)('on %s, a merge that would leave a key with two current versions', (name, run) => {
  const lateDefects: [string, Defect, string][] = [
    ['its moved version left open', MOVED_LEFT_OPEN, '1 with is_current and valid_to disagreeing'],
    ['its moved version marked current', MOVED_MARKED_CURRENT, '1 with is_current and valid_to disagreeing'],
  ]
  /** Plants `defect` in a fresh warehouse and runs `body` on it; `fix` takes the defect away. */
  const withSubject = (defect: Defect, body: (subject: Subject, fix: () => void) => Promise<void>) =>
    run(async (subject) => {
      let planted = true
      plantDefect(subject.warehouse, defect, () => planted)
      await body(subject, () => (planted = false))
    })

  const closeDefects: [string, Defect, string, string | null][] = [
    ['closing none', CLOSE_NONE, '', null],
    // On BigQuery the closed version is no longer in the open partition: the check reads the partitions the batch
    // wrote closed versions into too.
    [
      'leaving them flagged current',
      CLOSED_LEFT_CURRENT,
      ', 1 with is_current and valid_to disagreeing',
      null,
    ],
    // Where open versions hold a sentinel, BigQuery's bounded read is one `valid_to >` branch, the open end included.
    ['closing none (open end 9999-12-31)', CLOSE_NONE, '', OPEN_END],
    [
      'leaving them flagged current (open end 9999-12-31)',
      CLOSED_LEFT_CURRENT,
      ', 1 with is_current and valid_to disagreeing',
      OPEN_END,
    ],
  ]
  it.for(closeDefects)(
    'with the close of changed versions %s, is refused naming the key, writes nothing, and merges once the defect is gone',
    async ([, defect, flagged, openEnd]) => {
      const table = tableSpec({ deletes: 'invalidate', openEnd })
      await withSubject(defect, async ({ warehouse, schema, staging }, fix) => {
        const merge = (batchId: string) =>
          mergeBatch({ warehouse, staging }, { table, schema, batchId, now: new Date() })
        const versions = async () =>
          (
            await warehouse.query(
              `SELECT customer_id, region, is_current FROM ${schema}.${table.target} ORDER BY customer_id, valid_from`,
            )
          ).map((r) => [Number(r.customer_id), r.region, r.is_current])
        const stage = (rows: { customer_id: number; region: string }[], extractedAt: string) =>
          staging.stage(table.name, COLUMNS, rows, { extractedAt })
        await merge(
          await stage(
            [
              { customer_id: 101, region: 'South' },
              { customer_id: 102, region: 'West' },
            ],
            '2024-01-01T00:00:00Z',
          ),
        )
        const moved = await stage(
          [
            { customer_id: 101, region: 'North' },
            { customer_id: 102, region: 'West' },
            { customer_id: 103, region: 'East' },
          ],
          '2024-03-01T00:00:00Z',
        )
        await expect(merge(moved)).rejects.toThrow(
          `table customers: batch ${moved} would leave 1 key with more than one current version, or one whose ` +
            `is_current and valid_to disagree, for example: customer_id=101 (2 current versions${flagged}); nothing was written`,
        )
        expect(await versions()).toEqual([
          [101, 'South', true],
          [102, 'West', true],
        ])
        fix()
        await merge(moved)
        expect(await versions()).toEqual([
          [101, 'South', false],
          [101, 'North', true],
          [102, 'West', true],
          [103, 'East', true],
        ])
      })
    },
  )

  it('of a bitemporal table, whose rows superseded in system time are left known now, is refused the same way', async () => {
    const table = tableSpec({
      deletes: 'invalidate',
      systemTime: { systemFrom: 'system_from', systemTo: 'system_to' },
    })
    await withSubject(SUPERSEDED_LEFT_KNOWN, async ({ warehouse, schema, staging }, fix) => {
      let applied = Date.parse('2024-06-01T00:00:00Z')
      const merge = (batchId: string) =>
        mergeBatch({ warehouse, staging }, { table, schema, batchId, now: new Date((applied += 60_000)) })
      const knownNow = async () =>
        (
          await warehouse.query(
            `SELECT region, is_current FROM ${schema}.${table.target} WHERE system_to IS NULL ORDER BY valid_from`,
          )
        ).map((r) => [r.region, r.is_current])
      const stage = (region: string, extractedAt: string) =>
        staging.stage(table.name, COLUMNS, [{ customer_id: 101, region }], { extractedAt })
      await merge(await stage('South', '2024-01-01T00:00:00Z'))
      const moved = await stage('North', '2024-03-01T00:00:00Z')
      await expect(merge(moved)).rejects.toThrow(
        `table customers: batch ${moved} would leave 1 key with more than one current version, or one whose ` +
          'is_current and valid_to disagree, for example: customer_id=101 (2 current versions); nothing was written',
      )
      expect(await knownNow()).toEqual([['South', true]])
      fix()
      await merge(moved)
      expect(await knownNow()).toEqual([
        ['South', false],
        ['North', true],
      ])
    })
  })

  it("of a dimension bent before (a key with two current versions) is not refused: errors.md's SQL finds and repairs such keys, and a late event into one recomputes its windows", async () => {
    const table = lateTable()
    await run(async ({ warehouse, schema, staging }) => {
      const dim = `${schema}.${table.target}`
      const load = lateLoader(warehouse, schema, staging, table)
      const docs = (marker: string) =>
        ERRORS_DOC.find((b) => b.marker === marker)!.text.replaceAll('dim_customers', dim)
      const bentKeys = async () =>
        (await warehouse.query(docs('bent keys: find'))).map((r) => [
          Number(r.customer_id),
          Number(r.current_versions),
        ])
      // What a `key` edit left behind before it was refused: a closed version current again.
      const bend = () =>
        warehouse.query(
          `UPDATE ${dim} SET valid_to = NULL, is_current = TRUE WHERE region = 'South' AND customer_id = 101`,
        )
      const versions = async () =>
        (
          await warehouse.query(
            `SELECT region, is_current, ${warehouse.dialect.castToString('valid_to')} AS valid_to FROM ${dim} ORDER BY valid_from`,
          )
        ).map((r) => [r.region, r.is_current, r.valid_to === null ? null : String(r.valid_to).slice(0, 10)])
      const repaired = [
        ['South', false, '2024-02-01'],
        ['West', false, '2024-03-01'],
        ['North', true, null],
      ]
      await load('South', '2024-01-01 00:00:00', '2024-01-02T00:00:00Z')
      await load('North', '2024-03-01 00:00:00', '2024-03-02T00:00:00Z')
      await bend()
      expect(await bentKeys()).toEqual([[101, 2]])
      await load('West', '2024-02-01 00:00:00', '2024-03-03T00:00:00Z')
      expect(await versions()).toEqual(repaired)
      expect(await bentKeys()).toEqual([])

      await bend()
      expect(await bentKeys()).toEqual([[101, 2]])
      await warehouse.query(docs('bent keys: repair'))
      expect(await bentKeys()).toEqual([])
      expect(await versions()).toEqual(repaired)
    })
  })

  it('of a dimension bent before, a change or a delete of a bent key is refused naming the key (it would overlap its versions), writes nothing, and merges once errors.md repaired it', async () => {
    const refusal = (batchId: string) =>
      `table customers: batch ${batchId} changes 1 key that the dimension already holds with more than one current ` +
      `version (written so before dimsync checked it; repair the dimension as docs/errors.md says, then run again), ` +
      `for example: customer_id=101 (2 current versions); nothing was written`
    const history = async (warehouse: Warehouse<SqlDialect>, dim: string) =>
      (
        await warehouse.query(
          `SELECT customer_id, region, is_current, ${warehouse.dialect.castToString('valid_to')} AS valid_to FROM ${dim} ORDER BY customer_id, valid_from`,
        )
      ).map((r) => [
        Number(r.customer_id),
        r.region,
        r.is_current,
        r.valid_to === null ? null : String(r.valid_to).slice(0, 10),
      ])
    /** The open end as a SQL value, and the test `valid_to IS NULL` as errors.md says to write it for a sentinel. */
    const openEndOf = (warehouse: Warehouse<SqlDialect>, openEnd: string | null) =>
      openEnd === null
        ? { value: 'NULL', isOpen: 'valid_to IS NULL' }
        : {
            value: warehouse.dialect.timestampLiteral(openEnd),
            isOpen: `valid_to = ${warehouse.dialect.timestampLiteral(openEnd)}`,
          }
    const repair = (warehouse: Warehouse<SqlDialect>, dim: string, openEnd: string | null = null) =>
      warehouse.query(
        ERRORS_DOC.find((b) => b.marker === 'bent keys: repair')!
          .text.replaceAll('dim_customers', dim)
          .replaceAll('valid_to IS NULL', openEndOf(warehouse, openEnd).isOpen),
      )
    // What a `key` edit left behind before it was refused: a closed version current again.
    const bend = (warehouse: Warehouse<SqlDialect>, dim: string, openEnd: string | null = null) =>
      warehouse.query(
        `UPDATE ${dim} SET valid_to = ${openEndOf(warehouse, openEnd).value}, is_current = TRUE WHERE region = 'South' AND customer_id = 101`,
      )

    // A change of the key, from events that carry their change time.
    const table = lateTable()
    await run(async ({ warehouse, schema, staging }) => {
      const dim = `${schema}.${table.target}`
      const load = lateLoader(warehouse, schema, staging, table)
      await load('South', '2024-01-01 00:00:00', '2024-01-02T00:00:00Z')
      await load('North', '2024-03-01 00:00:00', '2024-03-02T00:00:00Z')
      await bend(warehouse, dim)
      const bent = [
        [101, 'South', true, null],
        [101, 'North', true, null],
      ]
      expect(await history(warehouse, dim)).toEqual(bent)
      const batchId = await staging.stage(
        table.name,
        LATE_COLUMNS,
        [{ customer_id: 101, region: 'East', updated_at: '2024-04-01 00:00:00' }],
        { extractedAt: '2024-04-02T00:00:00Z', mode: 'incremental' },
      )
      const merge = () => mergeBatch({ warehouse, staging }, { table, schema, batchId, now: new Date() })
      await expect(merge()).rejects.toThrow(refusal(batchId))
      expect(await history(warehouse, dim)).toEqual(bent)
      await repair(warehouse, dim)
      expect((await merge()).status).toBe('merged')
      expect(await history(warehouse, dim)).toEqual([
        [101, 'South', false, '2024-03-01'],
        [101, 'North', false, '2024-04-01'],
        [101, 'East', true, null],
      ])
    })

    // A delete of the key: absent from a full snapshot; open versions end NULL, and a sentinel.
    for (const openEnd of [null, OPEN_END]) {
      const snapshots = tableSpec({ deletes: 'invalidate', openEnd })
      const open = openEnd === null ? null : '9999-12-31'
      await run(async ({ warehouse, schema, staging }) => {
        const dim = `${schema}.${snapshots.target}`
        const stage = (rows: { customer_id: number; region: string }[], extractedAt: string) =>
          staging.stage(snapshots.name, COLUMNS, rows, { extractedAt })
        const merge = (batchId: string) =>
          mergeBatch({ warehouse, staging }, { table: snapshots, schema, batchId, now: new Date() })
        const west = { customer_id: 102, region: 'West' }
        await merge(await stage([{ customer_id: 101, region: 'South' }, west], '2024-01-01T00:00:00Z'))
        await merge(await stage([{ customer_id: 101, region: 'North' }, west], '2024-03-01T00:00:00Z'))
        await bend(warehouse, dim, openEnd)
        const bent = [
          [101, 'South', true, open],
          [101, 'North', true, open],
          [102, 'West', true, open],
        ]
        expect(await history(warehouse, dim)).toEqual(bent)
        const gone = await stage([west], '2024-04-01T00:00:00Z')
        await expect(merge(gone)).rejects.toThrow(refusal(gone))
        expect(await history(warehouse, dim)).toEqual(bent)
        await repair(warehouse, dim, openEnd)
        expect((await merge(gone)).status).toBe('merged')
        expect((await history(warehouse, dim)).slice(0, 2)).toEqual([
          [101, 'South', false, '2024-03-01'],
          [101, 'North', false, '2024-04-01'],
        ])
      })
    }
  })

  it.for(lateDefects)(
    'in the late path (a late event splits a closed version), %s, is refused the same way',
    async ([, defect, flagged]) => {
      const table = lateTable()
      await withSubject(defect, async ({ warehouse, schema, staging }, fix) => {
        const load = lateLoader(warehouse, schema, staging, table)
        const versions = async () =>
          (
            await warehouse.query(
              `SELECT region, is_current FROM ${schema}.${table.target} ORDER BY valid_from`,
            )
          ).map((r) => [r.region, r.is_current])
        await load('South', '2024-01-01 00:00:00', '2024-01-02T00:00:00Z')
        await load('North', '2024-03-01 00:00:00', '2024-03-02T00:00:00Z')
        const late = () => load('West', '2024-02-01 00:00:00', '2024-03-03T00:00:00Z')
        await expect(late()).rejects.toThrow(
          'would leave 1 key with more than one current version, or one whose is_current and valid_to disagree, for ' +
            `example: customer_id=101 (2 current versions, ${flagged}); nothing was written`,
        )
        expect(await versions()).toEqual([
          ['South', false],
          ['North', true],
        ])
        fix()
        await late()
        expect(await versions()).toEqual([
          ['South', false],
          ['West', false],
          ['North', true],
        ])
      })
    },
  )
})
