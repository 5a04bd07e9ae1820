/** One statement of a rendered script, labelled so a failure can say which step failed. */
export interface CompiledStatement {
  readonly label: string
  readonly sql: string
  /**
   * A condition (a SQL expression) the statement is needed under, e.g. "the batch has late keys". A warehouse
   * that runs scripts (BigQuery) skips the statement when it is false, so it reads nothing; a warehouse may also
   * run it regardless: when the condition is false the statement changes nothing.
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
}
