import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest'
import { TestBatches } from '../staged-batches.ts'
import { BigQueryEmulator } from './bigquery-emulator.ts'
import { ZetaSqlService } from './zetasql-service.ts'

/** The emulator and staged batches of the running test (valid inside a test or its hooks). */
export interface EmulatorPerTest {
  readonly emulator: BigQueryEmulator
  readonly batches: TestBatches
}

/** The dataset each test's emulator holds, empty at the test's start. */
export interface TestDataset {
  readonly project: string
  readonly dataset: string
  readonly location: string
}

/** A fresh emulator on `zetaSql` holding the empty `dataset`: the one setup of every emulator test. */
async function startTestEmulator(zetaSql: ZetaSqlService, dataset: TestDataset): Promise<BigQueryEmulator> {
  const emulator = await BigQueryEmulator.start({ zetaSql })
  emulator.createDataset(dataset.project, dataset.dataset, { location: dataset.location })
  return emulator
}

/**
 * Runs `work` on a fresh emulator holding the empty dataset, stopped afterwards whatever `work` does. The form for
 * tests that run concurrently (`it.concurrent`), which cannot share the one emulator of `emulatorPerTest`'s hooks.
 */
export async function withTestEmulator<T>(
  options: { readonly zetaSql: ZetaSqlService; readonly dataset: TestDataset },
  work: (emulator: BigQueryEmulator) => Promise<T>,
): Promise<T> {
  const emulator = await startTestEmulator(options.zetaSql, options.dataset)
  try {
    return await work(emulator)
  } finally {
    await emulator.stop()
  }
}

/**
 * The setup of the BigQuery adapter's emulator tests: one ZetaSQL service and one staging folder per test file, a
 * fresh emulator holding the empty dataset per test (so faults, jobs and tables of one test never reach the next).
 * Registers its vitest hooks: call it once, at the top level of a test file.
 */
export function emulatorPerTest(dataset: TestDataset): EmulatorPerTest {
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
    emulator = await startTestEmulator(zeta!, dataset)
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
