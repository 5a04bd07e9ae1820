/**
 * What a warehouse can do, as named flags that the shared renderers and use-cases read instead of asking which
 * warehouse it is. Every flag has a default in `DEFAULT_CAPABILITIES` (the conservative answer), so a new flag
 * never breaks an existing dialect: a dialect states only where it differs (kysely's DialectAdapterBase).
 */
export interface DialectCapabilities {
  /**
   * DDL on permanent tables may run inside a transaction, and rolls back with it (DuckDB, PostgreSQL). When
   * false (BigQuery refuses it; MySQL commits implicitly), DDL runs before the merge's transaction. Every DDL
   * statement dimsync renders is idempotent (`IF NOT EXISTS`, `OR REPLACE`), so running it early is safe.
   */
  readonly transactionalDdl: boolean
  /**
   * The dimension is partitioned on valid_to (see `tableOptions`). Filters on current versions then also filter
   * on valid_to (`IS NULL`, or `=` the open end; equivalent by invariant 2, docs/invariants.md) so that only the partition of open
   * versions is read.
   */
  readonly partitionedOnValidTo: boolean
  /**
   * A batch's new surrogate keys are numbered per bucket of about this many rows (surrogate-keys.ts), because
   * the warehouse runs a window with no PARTITION BY on one worker (BigQuery). Undefined: in one ordered
   * sequence (DuckDB sorts on every core of its one machine).
   */
  readonly rowsPerKeyBucket: number | undefined
  /**
   * The longest query text the warehouse accepts, comments and white space included (BigQuery: 1,024K
   * characters). A merge whose script is longer runs as several queries of one session transaction, its widest
   * statements rendered in column groups (render-merge-script.ts). Undefined: no limit dimsync must respect.
   */
  readonly maxQueryCharacters: number | undefined
}

export const DEFAULT_CAPABILITIES: DialectCapabilities = Object.freeze({
  transactionalDdl: false,
  partitionedOnValidTo: false,
  rowsPerKeyBucket: undefined,
  maxQueryCharacters: undefined,
})
