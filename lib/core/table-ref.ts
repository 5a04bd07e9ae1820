/** A table (or view, or table function) in the warehouse. Names come from validated config and are quoted when rendered. */
export interface TableRef {
  /** Dataset / schema; omitted for temporary tables. */
  readonly schema?: string
  readonly name: string
}
