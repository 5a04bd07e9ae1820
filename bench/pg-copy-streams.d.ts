/** The slice of pg-copy-streams (no published types) that bench/sources.ts uses as the raw-driver baseline. */
declare module 'pg-copy-streams' {
  import type { Readable } from 'node:stream'
  import type { Submittable } from 'pg'

  /** `COPY ... TO STDOUT` as a readable stream of the raw COPY data; `rowCount` is set once it ends. */
  export interface CopyToStreamQuery extends Readable, Submittable {
    rowCount: number
  }
  export function to(text: string): CopyToStreamQuery
}
