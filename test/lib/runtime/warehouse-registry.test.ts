import { describe, expect, it } from 'vitest'

import { parseProject } from '../../../lib/config/index.ts'
import { stagedParquetVersion } from '../../../lib/core/staged-parquet.ts'
import { readAwsSettings } from '../../../lib/runtime/aws-deps.ts'
import {
  LAMBDA_WAREHOUSE_TYPES,
  PLAN_DIALECTS,
  WAREHOUSE_BUNDLES,
  warehouseBundle,
} from '../../../lib/runtime/warehouse-registry.ts'

const base = {
  DIMSYNC_STAGING_BUCKET: 'bucket',
  DIMSYNC_STATE_TABLE: 'state',
}

const project = (warehouse: string) =>
  parseProject(
    `version: 1\nwarehouse: ${warehouse}\ntables:\n  - name: t\n    source: { type: file, path: t.csv }\n    key: id\n`,
    '/project/dimsync.yaml',
  )

describe('the warehouse registry', () => {
  it("picks the bundle of the config's warehouse type", () => {
    expect(warehouseBundle(project('{ type: duckdb, path: w.duckdb }').warehouse).type).toBe('duckdb')
    expect(
      warehouseBundle(
        project('{ type: bigquery, project: my-project-1, dataset: d, location: EU }').warehouse,
      ).type,
    ).toBe('bigquery')
    expect(warehouseBundle(project('{ type: postgres, url_env: DW_URL }').warehouse).type).toBe('postgres')
  })

  it('stages Parquet V1 only for BigQuery, whose load jobs read the parts; V2 where DuckDB reads them', () => {
    expect(
      Object.fromEntries(Object.values(WAREHOUSE_BUNDLES).map((b) => [b.type, b.stagedParquetVersion])),
    ).toEqual({
      duckdb: 'V2',
      bigquery: 'V1',
      postgres: 'V2',
    })
    // The benchmarks' choice (bench/) agrees with the bundles'.
    for (const bundle of Object.values(WAREHOUSE_BUNDLES))
      expect(stagedParquetVersion(bundle.type)).toBe(bundle.stagedParquetVersion)
  })

  it('the functions open the kinds with a Lambda opener, and refuse another DIMSYNC_WAREHOUSE naming those', () => {
    expect(LAMBDA_WAREHOUSE_TYPES).toEqual(['duckdb', 'bigquery'])
    expect(() => readAwsSettings({ ...base, DIMSYNC_WAREHOUSE: 'postgres' })).toThrow(
      'DIMSYNC_WAREHOUSE: expected one of duckdb, bigquery, got "postgres"',
    )
    expect(readAwsSettings(base).warehouse).toBe('bigquery')
  })

  it("plan --dialect offers DuckDB's dry run and the kinds rendered offline", () => {
    expect(PLAN_DIALECTS).toEqual(['duckdb', 'bigquery'])
  })

  it('cdk deploy refuses DuckDB and PostgreSQL, and BigQuery without a credential, each saying why', () => {
    const refusal = (warehouse: string) => {
      const spec = project(warehouse).warehouse
      return warehouseBundle(spec).deployProblem(spec, undefined)
    }
    expect(refusal('{ type: duckdb }')).toMatch(/^warehouse.type: "duckdb" cannot be deployed to AWS/)
    expect(refusal('{ type: postgres, url_env: DW_URL }')).toMatch(
      /^warehouse.type: "postgres" cannot be deployed/,
    )
    expect(refusal('{ type: bigquery, project: my-project-1, dataset: d, location: EU }')).toMatch(
      /^warehouse.credentials_secret: is required/,
    )
    expect(
      refusal('{ type: bigquery, project: my-project-1, dataset: d, location: EU, credentials_secret: s }'),
    ).toBeUndefined()
  })
})
