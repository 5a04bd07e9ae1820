import { OutOfOrderBatchError } from './errors.ts'

/**
 * Where the docs explain each error a user can meet: the section of docs/errors.md that says what happened, what
 * was kept and what gets past it. The CLI ends its one error line with it and the AWS failure notice carries it,
 * so the reader of a refusal at 3 a.m. lands on the way out. test/docs/error-docs.test.ts checks that every
 * error class has an entry and every entry a heading.
 */
export const ERROR_DOCS = {
  ConfigError: 'docs/errors.md#the-config-is-invalid',
  BatchRejectedError: 'docs/errors.md#a-batch-is-refused',
  MassDeleteRefusedError: 'docs/errors.md#the-mass-delete-guard',
  OutOfOrderBatchError: 'docs/errors.md#a-snapshot-out-of-order',
  ContractChangedError: 'docs/errors.md#the-config-changed-under-a-loaded-table',
  LedgerMismatchError: 'docs/errors.md#the-watermark-and-the-warehouse-disagree',
  LockHeldError: 'docs/errors.md#a-table-is-locked',
  LeaseLostError: 'docs/errors.md#the-lease-was-lost',
  WatermarkConflictError: 'docs/errors.md#the-watermark-moved',
  SourceError: 'docs/errors.md#a-source-cannot-be-read',
  StagingError: 'docs/errors.md#staging-cannot-be-written-or-read',
  WarehouseError: 'docs/errors.md#a-warehouse-statement-failed',
  WarehouseBusyError: 'docs/errors.md#the-warehouse-file-is-busy',
  AwsServiceError: 'docs/errors.md#an-aws-call-failed',
} as const

export type DocumentedError = keyof typeof ERROR_DOCS

/**
 * The docs section of an error, by its name (each class sets one; a bundler may rename classes, never this), or
 * undefined for any other error. An out-of-order snapshot is reported under its parent's name, so it is told apart
 * by class.
 */
export function errorDocs(error: unknown): string | undefined {
  if (error instanceof OutOfOrderBatchError) return ERROR_DOCS.OutOfOrderBatchError
  if (!(error instanceof Error) || !Object.hasOwn(ERROR_DOCS, error.name)) return undefined
  return ERROR_DOCS[error.name as DocumentedError]
}

/** The one line a user reads: the message's first line, then where the docs explain it. */
export function withDocs(line: string, error: unknown): string {
  const docs = errorDocs(error)
  return docs === undefined ? line : `${line} (see ${docs})`
}
