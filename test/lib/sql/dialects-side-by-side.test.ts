import { describe, expect, it } from 'vitest'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import type { SqlDialect, TableRef } from '../../../lib/sql/dialect.ts'
import { duckDbDialect } from '../../../lib/sql/duckdb/duckdb-dialect.ts'
import { postgresDialect } from '../../../lib/sql/postgres/postgres-dialect.ts'
import { dimensionObjects, renderDimensionDdl } from '../../../lib/sql/render-ddl.ts'
import { renderMerge } from '../../../lib/sql/render-merge.ts'
import { renderViews } from '../../../lib/sql/render-views.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

/** One plan, rendered by every dialect; the expected SQL per dialect side by side (kysely's testSql style). */
const table = tableSpec({ deletes: 'invalidate', openEnd: null })
const staged = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'balance', type: 'DECIMAL(12,2)' },
]
const layout = planDimensionLayout(table, 'b1', staged, undefined)

function render(d: SqlDialect, schema: string, stage?: TableRef) {
  const objects = dimensionObjects(table, schema)
  const merge = renderMerge(d, {
    table,
    // The general merge, into an existing dimension (a batch founding one is a single INSERT).
    layout: { ...layout, createDimension: false },
    objects,
    batchId: 'b1',
    extractedAt: '2024-03-10T14:30:00.000Z',
    appliedAt: '2024-03-10T14:31:00.000Z',
    mode: 'full',
    allowMassDelete: false,
    ...(stage ? { stage } : {}),
  })
  const ddl = renderDimensionDdl(d, table, layout, objects)
  const views = renderViews(d, table, objects)
  const by = (label: string) => [...ddl, ...merge, ...views].find((s) => s.label === label)!.sql
  return { labels: merge.map((s) => s.label), by }
}

const duck = render(duckDbDialect, 'main')
const bq = render(createBigQueryDialect({ project: 'acme-dw' }), 'history', {
  schema: 'history',
  name: '_dimsync_stage_dim_customer_b1',
})
const pg = render(postgresDialect, 'history')

describe('the same merge plan in DuckDB SQL, GoogleSQL and PostgreSQL', () => {
  it('has the same steps in the same order (BigQuery notes the earliest change first, to bound the check it reads)', () => {
    const noted = bq.labels.indexOf('note the earliest change')
    expect(bq.labels[noted + 1]).toBe('check one current version per key')
    expect(bq.labels.toSpliced(noted, 1)).toEqual(duck.labels)
    expect(pg.labels).toEqual(duck.labels)
  })

  it.each([
    [
      'close changed current versions',
      {
        duckdb:
          'UPDATE "main"."dim_customer" AS d SET "valid_to" = c."__dimsync_t", "is_current" = FALSE\n' +
          'FROM (SELECT * FROM "__dimsync_changes" WHERE "__dimsync_change_no" = 1 AND "__dimsync_had_current") c\n' +
          'WHERE d."is_current" AND d."customer_id" = c."customer_id"',
        bigquery:
          'UPDATE `acme-dw`.`history`.`dim_customer` AS d SET `valid_to` = c.`__dimsync_t`, `is_current` = FALSE\n' +
          'FROM (SELECT * FROM `__dimsync_changes` WHERE `__dimsync_change_no` = 1 AND `__dimsync_had_current`) c\n' +
          'WHERE d.`is_current` AND d.`valid_to` IS NULL AND d.`customer_id` = c.`customer_id`',
        postgres:
          'UPDATE "history"."dim_customer" AS d SET "valid_to" = c."__dimsync_t", "is_current" = FALSE\n' +
          'FROM (SELECT * FROM "__dimsync_changes" WHERE "__dimsync_change_no" = 1 AND "__dimsync_had_current") c\n' +
          'WHERE d."is_current" AND d."customer_id" = c."customer_id"',
      },
    ],
    [
      'create dimension',
      {
        duckdb:
          'CREATE TABLE IF NOT EXISTS "main"."dim_customer" (\n' +
          '  "dimsync_sk" BIGINT NOT NULL,\n  "customer_id" BIGINT NOT NULL,\n  "name" VARCHAR,\n  "balance" DECIMAL(12,2),\n' +
          '  "valid_from" TIMESTAMPTZ NOT NULL,\n  "valid_to" TIMESTAMPTZ,\n  "is_current" BOOLEAN NOT NULL,\n' +
          '  "is_deleted" BOOLEAN NOT NULL,\n  "dimsync_row_hash" VARCHAR NOT NULL,\n  "dimsync_batch_id" VARCHAR NOT NULL\n)',
        bigquery: expect.stringMatching(
          new RegExp(
            '^CREATE TABLE IF NOT EXISTS `acme-dw`\\.`history`\\.`dim_customer` \\(\\n' +
              // Source columns have no description (it is their users'); dimsync's own say what they hold.
              "  `dimsync_sk` INT64 NOT NULL OPTIONS\\(description = 'dimsync: surrogate key[^']*'\\),\\n" +
              '  `customer_id` INT64 NOT NULL,\\n' +
              '  `name` STRING,\\n' +
              '  `balance` NUMERIC\\(12, 2\\),\\n' +
              '[^]*\\n\\)\\nPARTITION BY TIMESTAMP_TRUNC\\(`valid_to`, MONTH\\)\\nCLUSTER BY `customer_id`\\n' +
              "OPTIONS\\(description = 'dimsync: type 2 history of table customers, one row per version'\\)$",
          ),
        ),
        postgres:
          'CREATE TABLE IF NOT EXISTS "history"."dim_customer" (\n' +
          '  "dimsync_sk" BIGINT NOT NULL,\n  "customer_id" BIGINT NOT NULL,\n  "name" TEXT,\n  "balance" NUMERIC(12,2),\n' +
          '  "valid_from" TIMESTAMPTZ NOT NULL,\n  "valid_to" TIMESTAMPTZ,\n  "is_current" BOOLEAN NOT NULL,\n' +
          '  "is_deleted" BOOLEAN NOT NULL,\n  "dimsync_row_hash" TEXT NOT NULL,\n  "dimsync_batch_id" TEXT NOT NULL\n)',
      },
    ],
    [
      'check NULL keys',
      {
        duckdb:
          `SELECT error('[dimsync-check kind=null-key table=customers batch=b1] ' || 'table customers: batch b1 has ' || CAST(COUNT(*) AS VARCHAR) || ' rows with a NULL key (customer_id); nothing was written' || ' [/dimsync-check]')\n` +
          `FROM "__dimsync_stage" s WHERE s."customer_id" IS NULL HAVING COUNT(*) > 0`,
        bigquery:
          `SELECT ERROR('[dimsync-check kind=null-key table=customers batch=b1] ' || 'table customers: batch b1 has ' || CAST(COUNT(*) AS STRING) || ' rows with a NULL key (customer_id); nothing was written' || ' [/dimsync-check]')\n` +
          'FROM `acme-dw`.`history`.`_dimsync_stage_dim_customer_b1` s WHERE s.`customer_id` IS NULL HAVING COUNT(*) > 0',
        // PostgreSQL has no error(): a function of the session's own schema raises (postgres-dialect.ts).
        postgres:
          `SELECT pg_temp.dimsync_raise('[dimsync-check kind=null-key table=customers batch=b1] ' || 'table customers: batch b1 has ' || CAST(COUNT(*) AS TEXT) || ' rows with a NULL key (customer_id); nothing was written' || ' [/dimsync-check]')\n` +
          `FROM "__dimsync_stage" s WHERE s."customer_id" IS NULL HAVING COUNT(*) > 0`,
      },
    ],
    [
      'create as-of table function',
      {
        duckdb:
          'CREATE OR REPLACE MACRO "main"."dim_customer_as_of"("ts") AS TABLE\n' +
          'SELECT * FROM "main"."dim_customer"\n' +
          'WHERE "valid_from" <= CAST("ts" AS TIMESTAMPTZ) AND ("valid_to" IS NULL OR "valid_to" > CAST("ts" AS TIMESTAMPTZ)) AND NOT "is_deleted"',
        bigquery: expect.stringMatching(
          /^CREATE OR REPLACE TABLE FUNCTION `acme-dw`\.`history`\.`dim_customer_as_of`\(ts TIMESTAMP\) AS\n/,
        ),
        // A SQL function returning the dimension's rows; parameters by position (a column named ts would win).
        postgres:
          'CREATE OR REPLACE FUNCTION "history"."dim_customer_as_of"("ts" TIMESTAMPTZ) RETURNS SETOF "history"."dim_customer"\n' +
          'LANGUAGE sql STABLE AS $dimsync$\n' +
          'SELECT * FROM "history"."dim_customer"\n' +
          'WHERE "valid_from" <= CAST($1 AS TIMESTAMPTZ) AND ("valid_to" IS NULL OR "valid_to" > CAST($1 AS TIMESTAMPTZ)) AND NOT "is_deleted"\n' +
          '$dimsync$',
      },
    ],
  ])('%s', (label, expected) => {
    expect({ duckdb: duck.by(label), bigquery: bq.by(label), postgres: pg.by(label) }).toEqual(expected)
  })

  it('keeps the first row per group with QUALIFY in DuckDB and BigQuery, DISTINCT ON in PostgreSQL', () => {
    const request = {
      select: 'SELECT x."k", x."v" FROM "t" x WHERE TRUE',
      separator: '\n  ',
      partitionBy: 'x."k"',
      orderBy: 'x."at" DESC',
    }
    const qualify =
      'SELECT x."k", x."v" FROM "t" x WHERE TRUE\n  QUALIFY ROW_NUMBER() OVER (PARTITION BY x."k" ORDER BY x."at" DESC) = 1'
    expect(duckDbDialect.firstPerGroup(request)).toBe(qualify)
    expect(createBigQueryDialect({ project: 'p' }).firstPerGroup(request)).toBe(qualify)
    expect(postgresDialect.firstPerGroup(request)).toBe(
      'SELECT DISTINCT ON (x."k") x."k", x."v" FROM "t" x WHERE TRUE\n  ORDER BY x."k", x."at" DESC',
    )
  })

  it("counts a snapshot's live current keys for the mass-delete guard up to its bound in DuckDB and PostgreSQL, whole in BigQuery (its LIMIT takes a literal only)", () => {
    const gone = '(SELECT COUNT(*) FROM "__dimsync_changes" WHERE "__dimsync_absent")'
    const live = (dim: string, cast: string) =>
      `SELECT 1 FROM ${dim} d WHERE d."is_current" AND NOT d."is_deleted" LIMIT (SELECT CAST(CEIL(${gone} / 0.5) AS ${cast}) + 1)`
    expect(duck.by('guard mass delete')).toContain(
      `SELECT (SELECT COUNT(*) FROM (${live('"main"."dim_customer"', 'BIGINT')}) AS counted) AS live`,
    )
    expect(pg.by('guard mass delete')).toContain(
      `SELECT (SELECT COUNT(*) FROM (${live('"history"."dim_customer"', 'BIGINT')}) AS counted) AS live`,
    )
    expect(bq.by('guard mass delete')).toContain(
      'SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM `acme-dw`.`history`.`dim_customer` d WHERE d.`is_current` AND d.`valid_to` IS NULL AND NOT d.`is_deleted`) AS counted) AS live',
    )
  })

  it('replaces a temporary table of the session only, never a table of the same name in a schema (PostgreSQL)', () => {
    expect(postgresDialect.createTempTableAs('__dimsync_x', 'SELECT 1 AS one')).toBe(
      'DROP TABLE IF EXISTS pg_temp."__dimsync_x";\nCREATE TEMP TABLE "__dimsync_x" AS\nSELECT 1 AS one',
    )
  })

  it('hashes with md5() in DuckDB and TO_HEX(MD5(...)) of (tag, text) pairs in BigQuery, with the type-specific canonical text', () => {
    const diff = (r: typeof duck) => r.by('diff snapshot against current versions')
    expect(diff(duck)).toContain(
      `md5(concat(\n    CASE WHEN s."balance" IS NOT NULL THEN '7:balance=' END,\n    CAST(strlen(CAST(s."balance" AS VARCHAR)) AS VARCHAR),\n    CASE WHEN s."balance" IS NOT NULL THEN ':' END,\n    CAST(s."balance" AS VARCHAR),\n    CASE WHEN s."balance" IS NOT NULL THEN ';' END,`,
    )
    expect(diff(bq)).toContain(
      "TO_HEX(MD5(ARRAY_TO_STRING(ARRAY(SELECT IFNULL(CONCAT(p.t, CAST(LENGTH(p.v) AS STRING), ':', p.v, ';'), '') " +
        'FROM UNNEST(ARRAY<STRUCT<t STRING, v STRING>>[\n' +
        "    ('7:balance=', IF(s.`balance` IS NULL, NULL, FORMAT('%.2f', s.`balance`))),",
    )
  })
})
