/**
 * The names of the columns of CSV files read as one relation: the header's, DuckDB's `column0 …` for a file
 * without one, or, for a file without a header whose columns are declared (`columns:`), the declared names in
 * their order. AWS DMS full-load files (`format: dms`) may lack the operation column the change files start with.
 * Pure: the caller reads each file's first line.
 */
import { SourceError } from '../../core/errors.ts'
import type { FileSourceSpec, TableSpec } from '../../core/table-spec.ts'
import { isDmsFullLoadFile } from './dms-files.ts'

export interface CsvColumnNames {
  /** Each file's column names, by position. */
  readonly heads: readonly (readonly string[])[]
  /** The columns of the relation, in order. */
  readonly order: readonly string[]
  /** The file whose columns `order` lists, which the others are compared with. */
  readonly orderFrom: number
  /** Per file: a DMS full-load file without the operation column (its rows are inserts). */
  readonly lacksOperation: readonly boolean[]
  /** The names are DuckDB's `column0 …`: files are compared by their column count only. */
  readonly positional: boolean
}

/** DuckDB's names of the columns of a file without a header; declaring only these keeps them. */
const GENERATED_NAME = /^column\d+$/

/**
 * Names the columns of `files` (display names) from `read` (each file's header, or its first row's positions as
 * DuckDB names them). A file without a header whose column count is not the declared one is refused, naming the
 * file and both counts.
 */
export function csvColumnNames(
  table: TableSpec,
  spec: FileSourceSpec,
  files: readonly string[],
  read: readonly (readonly string[])[],
): CsvColumnNames {
  const declared = (spec.columns ?? []).map((column) => column.name)
  const dms = table.changes?.format === 'dms'
  const operation = table.changes?.operation.column
  const byDeclaration =
    !spec.csv.header && declared.length > 0 && !declared.every((name) => GENERATED_NAME.test(name))
  const withoutOperation = declared.filter((name) => name !== operation)
  const heads = read.map((head, i) => {
    if (!byDeclaration || head.length === declared.length) return byDeclaration ? declared : head
    const lacksOperation =
      dms && withoutOperation.length === declared.length - 1 && head.length === withoutOperation.length
    if (lacksOperation && isDmsFullLoadFile(files[i]!)) return withoutOperation
    throw new SourceError(
      table.name,
      `${table.name}: ${files[i]} has ${head.length} columns, but columns: declares ${declared.length} ` +
        `(${declared.join(', ')}); ` +
        (lacksOperation
          ? `only a full-load file (LOAD00000001.csv …) may lack the operation column ${operation}`
          : 'declare every column of the files, in their order'),
    )
  })
  const lacksOperation = heads.map(
    (head, i) => dms && operation !== undefined && !head.includes(operation) && isDmsFullLoadFile(files[i]!),
  )
  const complete = lacksOperation.indexOf(false)
  return {
    heads,
    order: complete >= 0 ? heads[complete]! : [operation!, ...heads[0]!],
    orderFrom: Math.max(complete, 0),
    lacksOperation,
    positional: !spec.csv.header && !byDeclaration,
  }
}
