import { createExtractHandler } from '../shared/handlers.ts'

/** Lambda entry point of the extract function (see functions/shared/steps.ts, `runExtract`). */
export const handler = createExtractHandler()
