import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { TestBatches } from '../staged-batches.ts'
import { BigQueryEmulator } from './bigquery-emulator.ts'
import { ZetaSqlService } from './zetasql-service.ts'

/** The emulator and staged batches of the running test (valid inside a test or its hooks). */
export interface EmulatorPerTest {
  readonly emulator: BigQueryEmulator
  readonly batches: TestBatches
}

/**
 * The setup of the BigQuery adapter's emulator tests: one ZetaSQL service and one staging folder per test file, a
 * fresh emulator holding the empty dataset per test (so faults, jobs and tables of one test never reach the next).
 * Registers its vitest hooks: call it once, at the top level of a test file.
 */
export function emulatorPerTest(dataset: {
  readonly project: string
  readonly dataset: string
  readonly location: string
}): EmulatorPerTest {
  let zeta: ZetaSqlService | undefined
  let batches: TestBatches | undefined
  let emulator: BigQueryEmulator | undefined
  beforeAll(async () => {
    zeta = await ZetaSqlService.start()
    batches = await TestBatches.create()
  })
  afterAll(async () => {
    await batches?.dispose()
    await zeta?.stop()
  })
  beforeEach(async () => {
    emulator = await BigQueryEmulator.start({ zetaSql: zeta! })
    emulator.createDataset(dataset.project, dataset.dataset, { location: dataset.location })
  })
  afterEach(async () => {
    await emulator?.stop()
  })
  return {
    get emulator() {
      if (emulator === undefined) throw new Error('the emulator runs only inside a test')
      return emulator
    },
    get batches() {
      if (batches === undefined) throw new Error('the staged batches exist only inside a test file')
      return batches
    },
  }
}
