/**
 * The resolved description of one fact table (`facts:` in dimsync.yaml): where its rows come from, which columns
 * identify one fact (the grain), when each fact happened (the event time), what it measures, and which dimensions
 * it points at. Produced by `lib/config` and checked against the project's dimensions; pure data.
 */

import { COLUMN_PRESETS } from './metadata-columns.ts'
import type { ChangeFeedSpec, ExtractSpec, SourceSpec, TableSpec } from './table-spec.ts'

/** The surrogate key a dimension's unknown member gets unless the references to it say otherwise. */
export const DEFAULT_UNKNOWN_MEMBER_KEY = 0

/**
 * A fact's pointer at a dimension: the fact's natural key columns (in the order of the dimension's key) are
 * resolved at load time to the surrogate key of the version valid at the fact's event time.
 */
export interface FactReference {
  /** Logical name of the referenced dimension (a `tables:` entry). */
  readonly dimension: string
  /** Fact columns holding the dimension's natural key, position by position. */
  readonly key: readonly string[]
  /** Name of the fact column that stores the resolved surrogate key (default `<dimension>_sk`). */
  readonly surrogateKeyColumn: string
  /**
   * Prefix of the dimension's attributes in the `_as_was` / `_as_is` views (default: the dimension's name), so
   * that two references never give two columns one name.
   */
  readonly alias: string
  /**
   * Surrogate key of the dimension's unknown member, which facts whose key matches no version at their time
   * point at. 0 or below: dimsync numbers versions after the highest key, so it never gives this one out.
   */
  readonly unknownMemberKey: number
  /**
   * Type 7: the natural key columns are stored beside the surrogate key, and the fact table comes with the views
   * `<target>_as_was` (attributes of the version true at the event) and `<target>_as_is` (of the current one).
   */
  readonly keepNaturalKey: boolean
  /**
   * Inferred members: a natural key the dimension has never held creates a placeholder version of it (see
   * lib/core/inferred-member.ts) instead of pointing the fact at the unknown member.
   */
  readonly inferred: boolean
}

export interface FactSpec {
  /** Logical name (CLI, staging, logs); distinct from every dimension's name. */
  readonly name: string
  readonly source: SourceSpec
  /** Fact table in the warehouse (default `fact_<name>`). */
  readonly target: string
  /**
   * `full`: each batch is the whole fact table (it replaces what the table held). `incremental`: each batch adds
   * facts; a fact whose grain is already stored replaces the stored one.
   */
  readonly extract: ExtractSpec
  /**
   * A change feed of facts (`extract: { mode: changes }`): each staged row is an insert, update or delete of the
   * fact of its grain; within a batch the last change of a grain (by `sequence`) is the one applied: a delete
   * removes the stored fact, an insert or update stores the row in place of it. `extract` then says how the
   * feed is read (database sources after the cursor's watermark, files whole).
   */
  readonly changes?: ChangeFeedSpec
  /** Columns identifying one fact; never NULL, unique within a batch. */
  readonly grain: readonly string[]
  /** Column holding when the fact happened (a timestamp or a date); never NULL. */
  readonly eventTime: string
  /** Columns stored as they are (amounts, quantities). */
  readonly measures: readonly string[]
  readonly references: readonly FactReference[]
}

/**
 * The fact table as the extract and staging machinery sees a table: its source read whole or after a cursor,
 * one staged row per fact (the grain is the key). Facts are staged under their own name, like a dimension.
 */
export function factStagingTable(fact: FactSpec): TableSpec {
  return {
    name: fact.name,
    source: fact.source,
    target: fact.target,
    key: fact.grain,
    mode: 'history',
    extract: fact.extract,
    validFrom: { kind: 'extracted_at' },
    tracked: { kind: 'all_except', columns: [] },
    exclude: [],
    deletes: 'ignore',
    maxDeleteShare: 1,
    openEnd: null,
    columns: COLUMN_PRESETS.dimsync,
    ...(fact.changes !== undefined ? { changes: fact.changes } : {}),
  }
}
