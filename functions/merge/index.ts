import { createMergeHandler } from '../shared/handlers.ts'

/** Lambda entry point of the merge function (see lib/use-cases/merge-table.ts). */
export const handler = createMergeHandler()
