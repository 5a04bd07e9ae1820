import { createHash } from 'node:crypto'
import { expect } from 'vitest'
import { presetTableFields } from '../../lib/config/table-options.ts'
import type { StagedColumn } from '../../lib/core/batch.ts'
import { COLUMN_PRESETS, FIVETRAN_OPEN_END, METADATA_COLUMN_KEYS } from '../../lib/core/metadata-columns.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'
import { ScdHarness, type VersionRow } from './scd-harness.ts'
import type { Value } from './staged-batches.ts'

/**
 * The same batches merged into three DuckDB dimensions of one table: with the dimsync preset (the reference), the
 * dbt preset and the fivetran preset. After every merge `expectPresetsAgree` checks, row by row (matched on the
 * surrogate key), that the dbt and fivetran tables hold the reference's versions written their tools' way:
 * dbt_scd_id = md5(key|dbt_updated_at as dbt-duckdb casts it to text; a deletion version: the id of the version
 * before it instead of the key), dbt_updated_at = start, dbt_is_deleted
 * 'True'/'False'; _fivetran_end = next start - 1 ms (the delete time itself for a version a delete ended), open
 * rows at 9999-12-31 23:59:59.999, _fivetran_synced the load time of the merge that wrote the row; and that their
 * current views and as-of functions return the same versions. Fivetran writes no deletion versions, so under
 * `new_record` (which its preset refuses) the fivetran table is not compared.
 */
export class PresetTrio {
  private constructor(
    readonly reference: ScdHarness,
    readonly dbt: ScdHarness,
    readonly fivetran: ScdHarness,
  ) {}

  /** `table` with the dimsync column names; its open end applies to the reference and the dbt table. */
  static async create(table: TableSpec, columns: readonly StagedColumn[]): Promise<PresetTrio> {
    return new PresetTrio(
      await ScdHarness.create(table, columns),
      await ScdHarness.create({ ...table, ...presetTableFields('dbt'), openEnd: table.openEnd }, columns),
      await ScdHarness.create({ ...table, ...presetTableFields('fivetran') }, columns),
    )
  }

  get all(): readonly ScdHarness[] {
    return [this.reference, this.dbt, this.fivetran]
  }

  /** Stages `rows` once per dimension (each harness has its own staging folder); the batch ids, in `all` order. */
  async stage(
    rows: readonly Record<string, Value>[],
    options: { extractedAt: string; mode?: 'full' | 'incremental' },
  ): Promise<string[]> {
    return Promise.all(this.all.map((h) => h.stage(rows, options)))
  }

  async merge(batchIds: readonly string[], options: { allowMassDelete?: boolean } = {}) {
    const results = []
    for (const [i, h] of this.all.entries()) results.push(await h.merge(batchIds[i]!, options))
    return results
  }

  async load(
    rows: readonly Record<string, Value>[],
    options: { extractedAt: string; mode?: 'full' | 'incremental'; allowMassDelete?: boolean },
  ) {
    return this.merge(await this.stage(rows, options), options)
  }

  async dispose(): Promise<void> {
    for (const h of this.all) await h.dispose()
  }

  /** The checks described on the class, at the as-of instants `asOf` (ISO). */
  async expectPresetsAgree(asOf: readonly string[]): Promise<void> {
    const table = this.reference.table
    const reference = await this.reference.history()
    const dbt = await this.dbt.history()
    const fivetran = await this.fivetran.history()
    expect(dbt.map(withoutDbtIds), 'dbt table: the reference versions with dbt names').toEqual(
      reference.map((r) => renamed(r, 'dbt')),
    )
    let previous: VersionRow | undefined
    for (const r of dbt) {
      const start = instant(r.dbt_valid_from)
      expect(instant(r.dbt_updated_at), 'dbt_updated_at is the start').toBe(start)
      const key = table.key.map((k) => String(r[k])).join('|')
      const sameKey = previous !== undefined && table.key.every((k) => previous![k] === r[k])
      const hashed = r.dbt_deleted && sameKey ? String(previous!.dbt_scd_id) : key
      expect(r.dbt_scd_id, `dbt_scd_id of ${key} at ${start}`).toBe(md5(`${hashed}|${duckDbText(start)}`))
      expect(r.dbt_is_deleted, 'dbt_is_deleted is the text of the flag').toBe(
        r.dbt_deleted ? 'True' : 'False',
      )
      previous = r
    }
    const fivetranCompared = this.fivetran.table.deletes !== 'new_record'
    // The reference's closed versions no version of the key starts at the end of: a delete ended them.
    const startsOf = new Set(
      reference.map((r) => `${table.key.map((k) => String(r[k])).join('|')}@${instant(r.valid_from)}`),
    )
    const endedByDelete = (r: VersionRow) =>
      table.mode !== 'append' &&
      !startsOf.has(`${table.key.map((k) => String(r[k])).join('|')}@${instant(r.valid_to)}`)
    const loadTimes = new Map<unknown, string>()
    for (const r of fivetranCompared ? fivetran : []) {
      const synced = instant(r._fivetran_synced)
      expect(loadTimes.get(r._fivetran_batch_id) ?? synced, '_fivetran_synced: one load time per batch').toBe(
        synced,
      )
      loadTimes.set(r._fivetran_batch_id, synced)
    }
    if (fivetranCompared)
      expect(
        fivetran.map(({ _fivetran_synced: _, ...r }) => ({
          ...r,
          _fivetran_end: instant(r._fivetran_end),
          ...systemEnd(r, instant),
        })),
        'fivetran table: the reference versions, ends one millisecond before the next start or at the delete',
      ).toEqual(
        reference.map((r) => {
          const row = renamed(r, 'fivetran')
          const open = r.is_current
          const end = open
            ? FIVETRAN_OPEN_END
            : endedByDelete(r)
              ? instant(r.valid_to)
              : shifted(instant(r.valid_to), -1)
          // A bitemporal table's rows still known hold the open end in system_to too (not shifted: system time
          // is dimsync's own, always half-open).
          return {
            ...row,
            _fivetran_end: end,
            ...systemEnd(r, (v) => (v === null ? FIVETRAN_OPEN_END : instant(v))),
          }
        }),
      )
    const sks = async (h: ScdHarness, from: string, where = 'TRUE') => {
      const sk = h.table.columns.surrogateKey
      const rows = await h.query(`SELECT "${sk}" AS sk FROM ${from} WHERE ${where} ORDER BY 1`)
      return rows.map((row) => Number(row.sk))
    }
    if (reference.length === 0) return
    const referenceAsOf = (t: string) => sks(this.reference, `main."${table.target}_as_of"('${t}')`)
    // Fivetran's reading (and so the fivetran table's): a version a delete ended is still there at the delete.
    const keyEq = table.key.map((k) => `n."${k}" = d."${k}"`).join(' AND ')
    const known = (alias: string) => knownNow(table).replaceAll('"system_to"', `${alias}."system_to"`)
    const fivetranAsOf = async (t: string) =>
      [
        ...(await referenceAsOf(t)),
        ...(table.mode === 'append'
          ? []
          : await sks(
              this.reference,
              `main."${table.target}" d`,
              `d.valid_to = TIMESTAMPTZ '${t}' AND NOT d.is_deleted AND ${known('d')} AND NOT EXISTS ` +
                `(SELECT 1 FROM main."${table.target}" n WHERE ${keyEq} AND n.valid_from = d.valid_to AND ${known('n')})`,
            )),
      ].sort((a, b) => a - b)
    for (const h of fivetranCompared ? this.all : [this.reference, this.dbt]) {
      expect(
        await sks(h, `main."${h.table.target}_current"`),
        `${h.table.columns.validFrom}: current`,
      ).toEqual(await sks(this.reference, `main."${table.target}_current"`))
      for (const t of asOf) {
        expect(await sks(h, `main."${h.table.target}_as_of"('${t}')`), `as of ${t}`).toEqual(
          await (h === this.fivetran ? fivetranAsOf(t) : referenceAsOf(t)),
        )
      }
    }
    // Queries written for the tools themselves, unchanged.
    const closed = await sks(this.reference, `main."${table.target}"`, 'is_current')
    expect(
      await sks(this.dbt, `main."${table.target}"`, 'dbt_valid_to IS NULL'),
      'dbt: valid_to IS NULL',
    ).toEqual(closed)
    expect(
      await sks(this.dbt, `main."${table.target}"`, `dbt_is_deleted = 'True'`),
      "dbt: dbt_is_deleted = 'True'",
    ).toEqual(await sks(this.reference, `main."${table.target}"`, 'is_deleted'))
    if (!fivetranCompared) return
    expect(
      await sks(this.fivetran, `main."${table.target}"`, '_fivetran_active'),
      'fivetran: active',
    ).toEqual(closed)
    for (const t of asOf) {
      expect(
        await sks(
          this.fivetran,
          `main."${table.target}"`,
          `TIMESTAMPTZ '${t}' BETWEEN _fivetran_start AND _fivetran_end AND NOT _fivetran_deleted AND ${knownNow(this.fivetran.table)}`,
        ),
        `fivetran: ${t} BETWEEN _fivetran_start AND _fivetran_end`,
      ).toEqual(await fivetranAsOf(t))
    }
  }
}

/** Bitemporal tables: the row is not superseded in system time (a query of the table itself must say so). */
function knownNow(table: TableSpec): string {
  const systemTo = table.systemTime?.systemTo
  if (systemTo === undefined) return 'TRUE'
  return table.openEnd === null ? `"${systemTo}" IS NULL` : `"${systemTo}" = TIMESTAMPTZ '${table.openEnd}'`
}

/** A reference row with the preset's metadata names (values as they are). */
function renamed(row: VersionRow, preset: 'dbt' | 'fivetran'): VersionRow {
  const out: Record<string, VersionRow[string]> = {}
  for (const [column, value] of Object.entries(row)) {
    const key = METADATA_COLUMN_KEYS.find((k) => COLUMN_PRESETS.dimsync[k] === column)
    out[key === undefined ? column : COLUMN_PRESETS[preset][key]] = value
  }
  return out
}

/** `{ system_to: … }` of a bitemporal row (read by `read`), `{}` for other rows. */
function systemEnd(row: VersionRow, read: (value: VersionRow[string]) => string): Record<string, string> {
  return 'system_to' in row ? { system_to: read(row.system_to) } : {}
}

function withoutDbtIds(row: VersionRow): VersionRow {
  return Object.fromEntries(
    Object.entries(row).filter(
      ([column]) => column !== 'dbt_scd_id' && column !== 'dbt_updated_at' && column !== 'dbt_is_deleted',
    ),
  )
}

/** A DuckDB TIMESTAMPTZ as read back (`2024-01-01 09:00:00.5+00`) → ISO with milliseconds. */
function instant(value: unknown): string {
  const text = String(value)
  return new Date(Date.parse(text.replace(' ', 'T').replace(/\+00$/, 'Z'))).toISOString()
}

function shifted(iso: string, ms: number): string {
  return new Date(Date.parse(iso) + ms).toISOString()
}

/** dbt-duckdb's snapshot time as text (`now()::timestamp` cast): `YYYY-MM-DD HH:MM:SS[.fff]`, trailing zeros dropped. */
function duckDbText(iso: string): string {
  const fraction = iso.slice(20, 23).replace(/0+$/, '')
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction === '' ? '' : `.${fraction}`}`
}

function md5(text: string): string {
  return createHash('md5').update(text).digest('hex')
}
