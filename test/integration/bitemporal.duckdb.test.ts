import { afterEach, describe, expect, it } from 'vitest'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import type { Row } from '../../lib/ports/warehouse.ts'
import { mergeBatch } from '../../lib/use-cases/merge-batch.ts'
import { readHistory } from '../../lib/use-cases/read-history.ts'
import { ScdHarness } from '../support/scd-harness.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const FEED = [
  { name: 'Op', type: 'VARCHAR' },
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'city', type: 'VARCHAR' },
  { name: 'changed_at', type: 'TIMESTAMP' },
  { name: 'seq', type: 'BIGINT' },
]
const SYSTEM_TIME = { systemFrom: 'system_from', systemTo: 'system_to' }

function bitemporalFeed(overrides: Partial<TableSpec> = {}): TableSpec {
  return tableSpec({
    validFrom: { kind: 'column', column: 'changed_at' },
    changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] }, sequence: 'seq' },
    deletes: 'invalidate',
    systemTime: SYSTEM_TIME,
    ...overrides,
  })
}

const day = (month: number, d: number) =>
  `${month === 12 ? 2023 : 2024}-${String(month).padStart(2, '0')}-${String(d).padStart(2, '0')}T00:00:00Z`
const event = (Op: string, customer_id: number, city: string, changedAt: string, seq: number) => ({
  Op,
  customer_id,
  city,
  changed_at: changedAt.replace('T', ' ').replace('Z', ''),
  seq,
})

let harness: ScdHarness | undefined
afterEach(async () => {
  await harness?.dispose()
  harness = undefined
})

/** Stages `rows` extracted at `at` and merges them with the merge's clock at `at` (its system time). */
async function mergeAt(h: ScdHarness, rows: Record<string, string | number>[], at: string) {
  const batchId = await h.stage(rows, { extractedAt: at })
  return mergeBatch(
    { warehouse: h.warehouse, staging: h.batches },
    { table: h.table, schema: 'main', batchId, now: new Date(at) },
  )
}

/** Every row of the table, as comparable text, ordered by surrogate key then system_from. */
async function allRows(h: ScdHarness): Promise<Row[]> {
  return h.query(
    `SELECT dimsync_sk, customer_id, city, CAST(valid_from AS VARCHAR) AS valid_from, CAST(valid_to AS VARCHAR) AS valid_to, ` +
      `is_current, is_deleted, dimsync_row_hash, dimsync_batch_id, CAST(system_from AS VARCHAR) AS system_from, ` +
      `CAST(system_to AS VARCHAR) AS system_to FROM dim_customer ORDER BY dimsync_sk, system_from`,
  )
}

/** Invariant 11 (docs/invariants.md): the merge added rows and closed rows in system time, and changed nothing else. */
function expectOnlySystemToClosed(before: readonly Row[], after: readonly Row[], at: string) {
  const key = (r: Row) => `${String(r.dimsync_sk)}@${String(r.system_from)}`
  const afterByKey = new Map(after.map((r) => [key(r), r]))
  for (const old of before) {
    const now = afterByKey.get(key(old))
    expect(now, `row ${key(old)} is still there`).toBeDefined()
    if (old.system_to === null && now!.system_to !== null)
      expect(String(now!.system_to)).toBe(at.replace('T', ' ').replace('Z', '+00'))
    else expect(now!.system_to).toBe(old.system_to)
    expect({ ...now, system_to: null }).toEqual({ ...old, system_to: null })
  }
}

const cities = (rows: readonly Row[]) => rows.map((r) => [Number(r.customer_id), r.city])

describe('bitemporal history (system_time: true) on real DuckDB', () => {
  it('the worked example: a change effective 1 January arrives on 5 January and is corrected on 8 January', async () => {
    const h = (harness = await ScdHarness.create(bitemporalFeed(), FEED))
    await mergeAt(h, [event('I', 1, 'Paris', day(12, 1), 0)], day(12, 1))
    let before = await allRows(h)
    await mergeAt(h, [event('U', 1, 'Lyon', day(1, 1), 1)], day(1, 5))
    let after = await allRows(h)
    expectOnlySystemToClosed(before, after, day(1, 5))
    before = after
    // The correction: the state on 1 January was Lille, not Lyon (a later event at the same change time).
    await mergeAt(h, [event('U', 1, 'Lille', day(1, 1), 2)], day(1, 8))
    after = await allRows(h)
    expectOnlySystemToClosed(before, after, day(1, 8))

    const asOf = (business: string, known?: string) =>
      h.query(
        `SELECT customer_id, city FROM dim_customer_as_of(TIMESTAMPTZ '${business}'${known ? `, TIMESTAMPTZ '${known}'` : ''})`,
      )
    // What the table said about 3 January on 3 January, on 6 January, and what it says now.
    expect(cities(await asOf(day(1, 3), day(1, 3)))).toEqual([[1, 'Paris']])
    expect(cities(await asOf(day(1, 3), day(1, 6)))).toEqual([[1, 'Lyon']])
    expect(cities(await asOf(day(1, 3)))).toEqual([[1, 'Lille']])
    expect(cities(await asOf(day(1, 3), day(1, 9)))).toEqual([[1, 'Lille']])
    // Before 1 January every version of the table says Paris; before 1 December it knew nothing.
    expect(cities(await asOf(day(12, 20), day(1, 6)))).toEqual([[1, 'Paris']])
    expect(cities(await asOf(day(12, 20), day(11, 30).replace('2024-11', '2023-11')))).toEqual([])

    // The rows: each version keeps its surrogate key across its system-time rows.
    expect(
      after.map((r) => [
        Number(r.dimsync_sk),
        r.city,
        String(r.valid_from).slice(0, 10),
        r.valid_to === null ? null : String(r.valid_to).slice(0, 10),
        String(r.system_from).slice(0, 10),
        r.system_to === null ? null : String(r.system_to).slice(0, 10),
      ]),
    ).toEqual([
      [1, 'Paris', '2023-12-01', null, '2023-12-01', '2024-01-05'],
      [1, 'Paris', '2023-12-01', '2024-01-01', '2024-01-05', null],
      [2, 'Lyon', '2024-01-01', null, '2024-01-05', '2024-01-08'],
      [2, 'Lille', '2024-01-01', null, '2024-01-08', null],
    ])
    // The current view and the history command read what the table says now, or said then.
    expect(cities(await h.query('SELECT * FROM dim_customer_current'))).toEqual([[1, 'Lille']])
    const history = (request: { asOf?: string; knownAt?: string }) =>
      readHistory(h.warehouse, { table: h.table, schema: 'main', ...request })
    expect(cities(await history({}))).toEqual([
      [1, 'Paris'],
      [1, 'Lille'],
    ])
    expect(cities(await history({ knownAt: day(1, 6) }))).toEqual([
      [1, 'Paris'],
      [1, 'Lyon'],
    ])
    expect(cities(await history({ asOf: day(1, 3), knownAt: day(1, 3) }))).toEqual([[1, 'Paris']])
    expect(cities(await history({ asOf: day(1, 3), knownAt: day(1, 6) }))).toEqual([[1, 'Lyon']])
    expect(cities(await history({ asOf: day(1, 3) }))).toEqual([[1, 'Lille']])
  })

  it('a late event, a delete and a re-delivered batch: old rows only ever get their system_to', async () => {
    const h = (harness = await ScdHarness.create(bitemporalFeed(), FEED))
    await mergeAt(
      h,
      [event('I', 1, 'Paris', day(12, 1), 0), event('I', 2, 'Rome', day(12, 1), 0)],
      day(12, 2),
    )
    let before = await allRows(h)
    await mergeAt(h, [event('U', 1, 'Lyon', day(1, 10), 0), event('D', 2, 'Rome', day(1, 2), 0)], day(1, 11))
    let after = await allRows(h)
    expectOnlySystemToClosed(before, after, day(1, 11))
    before = after
    // Late: 1 was in Nice from 5 January (before the Lyon change already merged).
    const late = [event('U', 1, 'Nice', day(1, 5), 0)]
    await mergeAt(h, late, day(1, 12))
    after = await allRows(h)
    expectOnlySystemToClosed(before, after, day(1, 12))
    before = after
    await mergeAt(h, late, day(1, 13))
    expect(await allRows(h), 'a re-delivered event changes nothing').toEqual(before)
    const now = await h.query(
      `SELECT customer_id, city, CAST(valid_from AS VARCHAR) AS f FROM dim_customer WHERE system_to IS NULL ORDER BY customer_id, valid_from`,
    )
    expect(now.map((r) => [Number(r.customer_id), r.city, String(r.f).slice(0, 10)])).toEqual([
      [1, 'Paris', '2023-12-01'],
      [1, 'Nice', '2024-01-05'],
      [1, 'Lyon', '2024-01-10'],
      [2, 'Rome', '2023-12-01'],
    ])
    const asOf = (business: string, known?: string) =>
      h.query(
        `SELECT customer_id, city FROM dim_customer_as_of(TIMESTAMPTZ '${business}'${known ? `, TIMESTAMPTZ '${known}'` : ''}) ORDER BY customer_id`,
      )
    expect(cities(await asOf(day(1, 6), day(1, 11)))).toEqual([[1, 'Paris']])
    expect(cities(await asOf(day(1, 6)))).toEqual([[1, 'Nice']])
    expect(cities(await asOf(day(1, 1), day(1, 3)))).toEqual([
      [1, 'Paris'],
      [2, 'Rome'],
    ])
  })

  it('refuses a merge whose clock is not after the last merge of the table, writing nothing', async () => {
    const h = (harness = await ScdHarness.create(bitemporalFeed(), FEED))
    await mergeAt(h, [event('I', 1, 'Paris', day(12, 1), 0)], day(1, 5))
    const before = await allRows(h)
    await expect(mergeAt(h, [event('U', 1, 'Lyon', day(1, 1), 0)], day(1, 4))).rejects.toThrow(
      /table customers: batch \S+ would be applied at 2024-01-04T00:00:00.000Z, not after batch \S+ \(applied at 2024-01-05.*the system time of a bitemporal table only moves forward.*nothing was written/,
    )
    expect(await allRows(h)).toEqual(before)
  })

  it('a dimension keeps the time axes it was created with: system time is not turned on or off later', async () => {
    const h = (harness = await ScdHarness.create(bitemporalFeed({ systemTime: undefined }), FEED))
    await mergeAt(h, [event('I', 1, 'Paris', day(12, 1), 0)], day(1, 5))
    const mergeAs = async (table: TableSpec, at: string) =>
      mergeBatch(
        { warehouse: h.warehouse, staging: h.batches },
        {
          table,
          schema: 'main',
          batchId: await h.stage([event('U', 1, 'Lyon', day(1, 1), 0)], { extractedAt: at }),
          now: new Date(at),
        },
      )
    // The contract recorded with the dimension names the change first.
    await expect(mergeAs(bitemporalFeed(), day(1, 6))).rejects.toThrow(
      'table customers: system_time off → on',
    )
    // A dimension an earlier dimsync built recorded no contract: its columns tell.
    const withoutContracts = () => h.warehouse.query('UPDATE main._dimsync_batches SET contract = NULL')
    await withoutContracts()
    await expect(mergeAs(bitemporalFeed(), day(1, 6))).rejects.toThrow(
      'table customers: dimension dim_customer was created without system time (no system_from and system_to ' +
        'columns), so system_time: true cannot apply to it',
    )
    const other = { ...bitemporalFeed(), target: 'dim_customer_bt' }
    await mergeAs(other, day(1, 7))
    await expect(mergeAs({ ...other, systemTime: undefined }, day(1, 8))).rejects.toThrow(
      'table customers: system_time on (system_from, system_to) → off since dim_customer_bt was built',
    )
    await withoutContracts()
    await expect(mergeAs({ ...other, systemTime: undefined }, day(1, 8))).rejects.toThrow(
      'table customers: dimension dim_customer_bt keeps bitemporal history (columns system_from and system_to); ' +
        'set system_time: true on table customers again',
    )
  })

  it('a type 1 overwrite and a delete by absence on a snapshot table close rows in system time and insert corrected copies', async () => {
    const SNAPSHOT = [
      { name: 'customer_id', type: 'BIGINT' },
      { name: 'city', type: 'VARCHAR' },
      { name: 'email', type: 'VARCHAR' },
    ]
    const table = tableSpec({
      tracked: { kind: 'list', columns: ['city'] },
      deletes: 'invalidate',
      systemTime: SYSTEM_TIME,
    })
    const h = (harness = await ScdHarness.create(table, SNAPSHOT))
    const snapshot = async (rows: Record<string, string | number>[], at: string) => {
      const batchId = await h.stage(rows, { extractedAt: at })
      return mergeBatch(
        { warehouse: h.warehouse, staging: h.batches },
        { table, schema: 'main', batchId, now: new Date(at), allowMassDelete: true },
      )
    }
    const read = async (where: string) =>
      (
        await h.query(
          `SELECT customer_id, city, email, valid_to IS NULL AS open FROM dim_customer WHERE ${where} ORDER BY customer_id, valid_from`,
        )
      ).map((r) => [Number(r.customer_id), r.city, r.email, r.open])
    await snapshot(
      [
        { customer_id: 1, city: 'Paris', email: 'a@x' },
        { customer_id: 2, city: 'Rome', email: 'r@x' },
      ],
      day(1, 2),
    )
    const before = await allRows(h)
    await snapshot([{ customer_id: 1, city: 'Lyon', email: 'b@x' }], day(1, 5))
    expectOnlySystemToClosed(before, await allRows(h), day(1, 5))
    // Now: both versions of 1 carry the new email (type 1), 2 is closed by its absence.
    expect(await read('system_to IS NULL')).toEqual([
      [1, 'Paris', 'b@x', false],
      [1, 'Lyon', 'b@x', true],
      [2, 'Rome', 'r@x', false],
    ])
    // As known on 3 January: the old email, and 2 still open.
    expect(
      await read(
        `system_from <= TIMESTAMPTZ '${day(1, 3)}' AND (system_to IS NULL OR system_to > TIMESTAMPTZ '${day(1, 3)}')`,
      ),
    ).toEqual([
      [1, 'Paris', 'a@x', true],
      [2, 'Rome', 'r@x', true],
    ])
  })
})
