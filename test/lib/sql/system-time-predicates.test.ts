import { describe, expect, it } from 'vitest'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import { renderHistoryQuery } from '../../../lib/sql/render-history.ts'
import { renderViews } from '../../../lib/sql/render-views.ts'
import { dimensionObjects } from '../../../lib/sql/render-ddl.ts'
import {
  currentVersion,
  knownAt,
  liveVersionAt,
  liveVersionAtKnownAt,
} from '../../../lib/sql/version-predicates.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

const SYSTEM_TIME = { systemFrom: 'system_from', systemTo: 'system_to' }
const bitemporal = tableSpec({ systemTime: SYSTEM_TIME })
const sentinel = tableSpec({ systemTime: SYSTEM_TIME, openEnd: '9999-12-31T23:59:59Z' })

describe('predicates of a bitemporal table: "now" means known now', () => {
  it('the current version and the version at an instant add "not superseded in system time"', () => {
    expect(currentVersion(duckDbDialect, bitemporal, 'd')).toBe('d."is_current" AND d."system_to" IS NULL')
    expect(liveVersionAt(duckDbDialect, bitemporal, 't', 'd')).toBe(
      'd."valid_from" <= t AND (d."valid_to" IS NULL OR d."valid_to" > t) AND NOT d."is_deleted" AND d."system_to" IS NULL',
    )
    expect(currentVersion(createBigQueryDialect({ project: 'p' }), sentinel, 'd')).toBe(
      "d.`is_current` AND d.`system_to` = TIMESTAMP '9999-12-31 23:59:59+00:00' AND d.`valid_to` = TIMESTAMP '9999-12-31 23:59:59+00:00'",
    )
    // Tables without system time are unchanged.
    expect(currentVersion(duckDbDialect, tableSpec(), 'd')).toBe('d."is_current"')
  })

  it('known at S: learned at or before S and not superseded by then (half-open); NULL means now', () => {
    expect(knownAt(duckDbDialect, bitemporal, 's')).toBe(
      '"system_from" <= s AND ("system_to" IS NULL OR "system_to" > s)',
    )
    expect(knownAt(duckDbDialect, sentinel, 's')).toBe('"system_from" <= s AND "system_to" > s')
    expect(liveVersionAtKnownAt(duckDbDialect, bitemporal, 'b', 's')).toBe(
      '"valid_from" <= b AND ("valid_to" IS NULL OR "valid_to" > b) AND NOT "is_deleted" AND ' +
        '((s IS NULL AND "system_to" IS NULL) OR ("system_from" <= s AND ("system_to" IS NULL OR "system_to" > s)))',
    )
    expect(() => knownAt(duckDbDialect, tableSpec(), 's')).toThrow('table customers has no system time')
  })

  it('the as-of function takes known_at (optional in DuckDB); history reads rows known now unless told when', () => {
    const [, asOf] = renderViews(duckDbDialect, bitemporal, dimensionObjects(bitemporal, 'main'))
    expect(asOf!.sql).toMatch(
      /^CREATE OR REPLACE MACRO "main"\."dim_customer_as_of"\("ts", "known_at" := NULL\) AS TABLE/,
    )
    expect(asOf!.sql).toContain('CAST("known_at" AS TIMESTAMPTZ) IS NULL AND "system_to" IS NULL')
    const [, bqAsOf] = renderViews(
      createBigQueryDialect({ project: 'p' }),
      bitemporal,
      dimensionObjects(bitemporal, 'h'),
    )
    expect(bqAsOf!.sql).toMatch(
      /TABLE FUNCTION `p`\.`h`\.`dim_customer_as_of`\(ts TIMESTAMP, known_at TIMESTAMP\)/,
    )
    const ref = { schema: 'main', name: 'dim_customer' }
    expect(renderHistoryQuery(duckDbDialect, bitemporal, ref, {})).toBe(
      'SELECT * FROM "main"."dim_customer" WHERE "system_to" IS NULL ORDER BY "customer_id", "valid_from"',
    )
    expect(
      renderHistoryQuery(duckDbDialect, bitemporal, ref, { knownAt: '2024-01-06T00:00:00.000Z' }),
    ).toContain(`WHERE "system_from" <= TIMESTAMPTZ '2024-01-06T00:00:00.000Z' AND`)
  })
})
