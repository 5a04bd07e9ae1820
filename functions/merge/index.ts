import { createMergeHandler } from '../shared/handlers.ts'

/** Lambda entry point of the merge function (see functions/shared/steps.ts, `runMerge`). */
export const handler = createMergeHandler()
