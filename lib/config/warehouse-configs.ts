/**
 * The `warehouse:` section of dimsync.yaml, one config part per warehouse kind: its keys (with their messages and
 * the JSON Schema's descriptions) and how they resolve to its WarehouseSpec. The warehouse's `type` picks the part,
 * so a BigQuery section is told BigQuery's rules, not DuckDB's. The composition roots pick the rest of a kind's
 * bundle (opener, validation hooks, staged Parquet) from lib/runtime/warehouse-registry.ts, keyed the same way.
 */
import { z } from 'zod'
import type { WarehouseSpec } from '../core/table-spec.ts'
import { oneOf, strict } from './schema-primitives.ts'
import { bigQueryWarehouseConfig } from './warehouses/bigquery-config.ts'
import { duckDbWarehouseConfig } from './warehouses/duckdb-config.ts'
import { postgresWarehouseConfig } from './warehouses/postgres-config.ts'

export { DEFAULT_WAREHOUSE } from './warehouses/duckdb-config.ts'

export type WarehouseType = WarehouseSpec['type']

/** One warehouse kind's part of the config. */
export interface WarehouseConfig<S extends WarehouseSpec, Shape extends z.core.$ZodLooseShape> {
  readonly type: S['type']
  /** The keys of its section besides `type`. */
  readonly shape: Shape
  /** A rule across its keys that the shape cannot state: the message reported on `warehouse`, or undefined. */
  readonly conflict?: (section: z.output<z.ZodObject<Shape>>) => string | undefined
  /** Its spec from its parsed section (undefined: the config has no warehouse section); paths against `baseDir`. */
  resolve(section: z.output<z.ZodObject<Shape>> | undefined, baseDir: string): S
}

type AnyWarehouseConfig = WarehouseConfig<WarehouseSpec, z.core.$ZodLooseShape>

/** Every warehouse kind's config part, keyed by its `type`; the first is the default (no `type`). */
export const WAREHOUSE_CONFIGS = {
  duckdb: duckDbWarehouseConfig,
  bigquery: bigQueryWarehouseConfig,
  postgres: postgresWarehouseConfig,
} as const satisfies { readonly [K in WarehouseType]: { readonly type: K } }

export const WAREHOUSE_TYPES = Object.keys(WAREHOUSE_CONFIGS) as [WarehouseType, ...WarehouseType[]]
/** The warehouse of a config without a `warehouse: { type }`: the embedded DuckDB. */
export const DEFAULT_WAREHOUSE_TYPE = WAREHOUSE_CONFIGS.duckdb.type
type DefaultType = typeof DEFAULT_WAREHOUSE_TYPE

/** The zod schema of the section of each kind (what the config document's type says of it). */
type SectionSchemas = {
  [K in WarehouseType]: z.ZodObject<
    Extract<
      {
        type: K extends DefaultType ? z.ZodOptional<z.ZodEnum<{ [T in WarehouseType]: T }>> : z.ZodLiteral<K>
      } & (typeof WAREHOUSE_CONFIGS)[K]['shape'],
      z.core.$ZodShape
    >,
    z.core.$strict
  >
}

function configOf(type: WarehouseType): AnyWarehouseConfig {
  return WAREHOUSE_CONFIGS[type] as unknown as AnyWarehouseConfig
}

function sectionSchema(type: WarehouseType) {
  return strict({
    // The default's `type` lists every kind, so a misspelled type suggests one; another kind's section is parsed
    // by its own schema.
    type: type === DEFAULT_WAREHOUSE_TYPE ? oneOf(WAREHOUSE_TYPES).optional() : z.literal(type),
    ...configOf(type).shape,
  })
}

const SECTION_SCHEMAS = Object.fromEntries(
  WAREHOUSE_TYPES.map((type) => [type, sectionSchema(type)]),
) as Record<WarehouseType, ReturnType<typeof sectionSchema>>

/** Any warehouse section; `type` picks the shape (the default kind when absent). */
export const anyWarehouseSchema = z.union(
  WAREHOUSE_TYPES.map((type) => SECTION_SCHEMAS[type]),
) as unknown as z.ZodUnion<SectionSchemas[WarehouseType][]>

/** The kind a raw `warehouse:` section names; the default for none, or for a type no kind has (its schema says so). */
export function warehouseTypeOf(section: unknown): WarehouseType {
  const type =
    section !== null && typeof section === 'object' ? (section as { type?: unknown }).type : undefined
  return WAREHOUSE_TYPES.find((t) => t === type) ?? DEFAULT_WAREHOUSE_TYPE
}

/** The schema of the section of `type`. */
export function warehouseSectionSchema(type: WarehouseType) {
  return SECTION_SCHEMAS[type]
}

/** The rule across the keys of a parsed section of `type` that it breaks, or undefined. */
export function warehouseConflict(type: WarehouseType, section: unknown): string | undefined {
  const conflict = configOf(type).conflict
  return section === null || section === undefined || conflict === undefined
    ? undefined
    : conflict(section as never)
}

/** The spec of a parsed section of `type` (null or undefined: the config has none). */
export function resolveWarehouse(type: WarehouseType, section: unknown, baseDir: string): WarehouseSpec {
  return configOf(type).resolve((section ?? undefined) as never, baseDir)
}
