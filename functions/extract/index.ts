import { createExtractHandler } from '../shared/handlers.ts'

/** Lambda entry point of the extract function (see lib/use-cases/extract-table.ts). */
export const handler = createExtractHandler()
