/** One statement of a rendered script, labelled so a failure can say which step failed. */
export interface CompiledStatement {
  readonly label: string
  readonly sql: string
  /**
   * A condition (a SQL expression) the statement is needed under, e.g. "the batch has late keys". Warehouses skip
   * the statement when it is false, so it reads nothing: consecutive statements under the same condition are one
   * run, the condition read once before it (a BigQuery script's IF; lib/adapters/warehouse/guarded-runs.ts). When
   * the condition is false the statement would change nothing: the test harnesses run it to check that.
   */
  readonly onlyIf?: string
}

/**
 * The merge of one batch rendered as one multi-statement script (for warehouses that run a merge as a single
 * job), with its parts for review, tests and error reports.
 */
export interface CompiledScript {
  /** Runs before the transaction: warehouses without transactional DDL refuse it inside one. */
  readonly ddl: readonly CompiledStatement[]
  /** The merge proper, inside one transaction, ending with the ledger row. */
  readonly merge: readonly CompiledStatement[]
  /** After COMMIT: clean-up, then one row with the batch's counts (the script's result). */
  readonly after: readonly CompiledStatement[]
  /** The whole script, as sent in one job. */
  readonly text: string
  /**
   * The same merge as several queries of one session, for a script over the warehouse's query length (BigQuery):
   * each under it. Absent when `text` fits.
   */
  readonly session?: SessionScript
}

/**
 * A merge run as the queries of one session (BigQuery: `createSession`, then the session's id on every query), its
 * transaction begun in one query and committed in a later one. Variables live as long as the session.
 */
export interface SessionScript {
  /** The session's first query: declares the variables, creates the ledger, and answers one row `committed`. */
  readonly ledgerCheck: string
  /** Run instead of `jobs` when the batch is committed: clean-up, then the recorded counts (its result). */
  readonly committed: string
  /**
   * The merge: the DDL, BEGIN TRANSACTION, the statements (a failed one rolls back and raises as in the script),
   * then COMMIT TRANSACTION and the statements after it, the last one's rows the result.
   */
  readonly jobs: readonly string[]
}
