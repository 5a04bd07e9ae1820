import type { CompiledScript, CompiledStatement } from './compiled-sql.ts'

/**
 * The write of one staged batch (a dimension's merge, a fact's load), planned once by the use-case and handed to
 * the warehouse, which applies it in its own form: statement by statement in one transaction (DuckDB,
 * PostgreSQL), or as one script job (BigQuery). Each form is rendered only when the warehouse asks for it.
 */
export interface BatchWork {
  inTransaction(): TransactionWork
  /** The whole write as one script job, reading the batch from its staging table; its last statement reports. */
  asScript(): CompiledScript
}

/** Statements applied in one transaction, DDL first, then a query whose one row reports what they did. */
export interface TransactionWork {
  /**
   * DDL that runs first: inside the transaction where DDL rolls back with it, else before it, each statement on
   * its own (so each is idempotent, or resumable as an evolve's rewrite is).
   */
  readonly ddl: readonly CompiledStatement[]
  readonly statements: readonly CompiledStatement[]
  /** Idempotent DDL after the statements (the views): inside the transaction, or before it with `ddl`. */
  readonly ddlAfter: readonly CompiledStatement[]
  /** Read inside the transaction after every statement (absent: nothing to report). */
  readonly report?: string
  /** Statements the use-case already ran on their own (the ledger's DDL), named first in what was applied. */
  readonly alreadyRun?: readonly CompiledStatement[]
  /** The transaction fills a dimension it creates (TransactionOptions.firstLoad). */
  readonly firstLoad?: boolean
}
