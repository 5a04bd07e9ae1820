/**
 * One error hierarchy for dimsync. Every error names what it is about (table, column, key, file) in its message,
 * and says whether retrying the same step can help (`retryable`), so schedulers retry only transient failures.
 */
export class DimsyncError extends Error {
  readonly retryable: boolean
  constructor(message: string, options?: DimsyncErrorOptions) {
    super(message, options)
    this.name = 'DimsyncError'
    this.retryable = options?.retryable ?? false
  }
}

export interface DimsyncErrorOptions extends ErrorOptions {
  /** Retrying the same step can help (a dropped connection, throttling); default false. */
  readonly retryable?: boolean
}

/** dimsync.yaml (or an event) is invalid. `issues` holds one line per problem: `<path>: <what is wrong>`. */
export class ConfigError extends DimsyncError {
  constructor(
    readonly file: string,
    readonly issues: readonly string[],
  ) {
    super(`${file}: ${issues.join('; ')}`)
    this.name = 'ConfigError'
  }
}

/** A staged batch breaks the table's grain or schema contract; nothing was written. */
export class BatchRejectedError extends DimsyncError {
  constructor(
    readonly table: string,
    readonly batchId: string,
    message: string,
  ) {
    super(message)
    this.name = 'BatchRejectedError'
  }
}

/** The mass-delete guard refused a batch (a truncated extract must never wipe a dimension). */
export class MassDeleteRefusedError extends BatchRejectedError {
  constructor(table: string, batchId: string, message: string) {
    super(table, batchId, message)
    this.name = 'MassDeleteRefusedError'
  }
}

/**
 * A snapshot that can never be merged: the dimension already holds a later one, or a different one at the same
 * extraction time, and a snapshot's versions start at its extraction time. The batch is removed from staging so
 * that it does not block later runs. Reported under its parent's name: the orchestration never retries it either.
 */
export class OutOfOrderBatchError extends BatchRejectedError {
  constructor(table: string, batchId: string, message: string) {
    super(table, batchId, message)
    this.name = 'BatchRejectedError'
  }
}

/** Another run holds the table's lock (retryable: the run ends, or its lease expires). */
export class LockHeldError extends DimsyncError {
  constructor(
    readonly table: string,
    readonly holder: string,
    readonly since: string,
  ) {
    super(`table ${table} is locked by run ${holder} since ${since}`, { retryable: true })
    this.name = 'LockHeldError'
  }
}

/** A lease was lost (expired and taken over) before the step that needed it committed. */
export class LeaseLostError extends DimsyncError {
  constructor(
    readonly table: string,
    message: string,
  ) {
    super(message)
    this.name = 'LeaseLostError'
  }
}

/** A watermark commit lost a race or would move the watermark backwards; nothing was written. */
export class WatermarkConflictError extends DimsyncError {
  constructor(
    readonly table: string,
    message: string,
  ) {
    super(message)
    this.name = 'WatermarkConflictError'
  }
}

/** A source could not be read (missing file, malformed line, unreachable server). */
export class SourceError extends DimsyncError {
  constructor(
    readonly table: string,
    message: string,
    options?: DimsyncErrorOptions,
  ) {
    super(message, options)
    this.name = 'SourceError'
  }
}

/** A staged batch is missing or damaged (no manifest, missing part, bad checksum). */
export class StagingError extends DimsyncError {
  constructor(message: string, options?: DimsyncErrorOptions) {
    super(message, options)
    this.name = 'StagingError'
  }
}

/** A warehouse statement failed; carries the label and SQL of the failing statement. */
export class WarehouseError extends DimsyncError {
  constructor(
    readonly label: string,
    readonly sql: string,
    options?: DimsyncErrorOptions,
  ) {
    const cause = options?.cause instanceof Error ? options.cause.message : String(options?.cause ?? '')
    super(`warehouse statement "${label}" failed: ${cause}`, options)
    this.name = 'WarehouseError'
  }
}

/**
 * The embedded warehouse file stayed open in another process for longer than the run may wait (DuckDB allows one
 * writing process per file); names the holder when it is known. Nothing was written.
 */
export class WarehouseBusyError extends DimsyncError {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message, { retryable: true })
    this.name = 'WarehouseBusyError'
  }
}

/**
 * The table's config changed in a way the dimension's rows cannot follow (its key, mode, valid_from, system time,
 * metadata columns), or its recorded contract cannot be read; nothing was written. Retrying cannot help.
 */
export class ContractChangedError extends DimsyncError {
  constructor(
    readonly table: string,
    message: string,
  ) {
    super(message)
    this.name = 'ContractChangedError'
  }
}

/**
 * The state store's watermark and the warehouse's batch ledger disagree (a warehouse lost or restored from an
 * older copy, or a state restored): a delta read after that watermark would leave rows out of the dimension, or
 * read them twice. Nothing was extracted. Retrying cannot help.
 */
export class LedgerMismatchError extends DimsyncError {
  constructor(
    readonly table: string,
    message: string,
  ) {
    super(message)
    this.name = 'LedgerMismatchError'
  }
}
