import { afterAll } from 'vitest'

import { snapshotProcessState } from './process-state-snapshot.ts'

// A setup file runs before each test file, and its afterAll after the file's own (hooks run as a stack): what the
// file wrote to the environment or the working directory does not reach the next file of the same worker.
const saved = snapshotProcessState()
afterAll(() => saved.restore())
