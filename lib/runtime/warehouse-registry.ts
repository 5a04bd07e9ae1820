/**
 * Every warehouse kind dimsync can merge into, keyed by its `warehouse: { type }`: the CLI's and the Lambdas'
 * composition roots, `dimsync validate`, `plan --dialect` and the CDK app pick a kind's bundle here and never ask
 * which warehouse they talk to. A kind is added with its bundle (lib/runtime/warehouses/<kind>-bundle.ts), its
 * config part (lib/config/warehouse-configs.ts), its spec (lib/core/table-spec.ts), its dialect and its adapter
 * (docs/architecture.md). Loading this module loads no warehouse's client library: the bundles import them when
 * they open one.
 */
import type { WarehouseType } from '../config/warehouse-configs.ts'
import type { WarehouseSpec } from '../core/table-spec.ts'
import type { WarehouseBundle } from './warehouse-bundle.ts'
import { bigQueryBundle } from './warehouses/bigquery-bundle.ts'
import { duckDbBundle } from './warehouses/duckdb-bundle.ts'
import { postgresBundle } from './warehouses/postgres-bundle.ts'

export const WAREHOUSE_BUNDLES = {
  duckdb: duckDbBundle,
  bigquery: bigQueryBundle,
  postgres: postgresBundle,
} as const satisfies { readonly [K in WarehouseType]: WarehouseBundle<Extract<WarehouseSpec, { type: K }>> }

/** The bundle of a warehouse spec's kind, whose members take that spec. */
export function warehouseBundle(spec: WarehouseSpec): WarehouseBundle {
  return WAREHOUSE_BUNDLES[spec.type] as WarehouseBundle
}

const KINDS = Object.values(WAREHOUSE_BUNDLES) as readonly WarehouseBundle[]

/** The kinds the Lambda functions can open (`DIMSYNC_WAREHOUSE`), in the registry's order. */
export const LAMBDA_WAREHOUSE_TYPES = KINDS.filter((b) => b.lambda !== undefined).map((b) => b.type)
export type LambdaWarehouseType = (typeof LAMBDA_WAREHOUSE_TYPES)[number]

/** The kind the Lambda functions open when `DIMSYNC_WAREHOUSE` is not set: the one a deployment can have. */
export const DEPLOYED_WAREHOUSE_TYPE: WarehouseType = 'bigquery'

/** The kinds whose script `plan --dialect <type>` renders offline. */
export const OFFLINE_PLAN_TYPES = KINDS.filter((b) => b.offlinePlan !== undefined).map((b) => b.type)

/** `plan --dialect`'s choices: DuckDB's (the dry run, as without the option), then the kinds rendered offline. */
export const PLAN_DIALECTS = [duckDbBundle.type, ...OFFLINE_PLAN_TYPES]
