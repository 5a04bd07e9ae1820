import { relative } from 'node:path'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

import { SLOW_TESTS } from '../test-tiers.ts'

/**
 * Orders the test files, the longest first, so that the last files to start are short ones and both workers finish
 * together (vitest's own order goes by its cached durations or, on a clean clone as in CI, by file size: a slow
 * small file started near the end ran alone).
 * A file's expected time is its duration in vitest's results cache, else its time in SLOW_TESTS; the files
 * known to neither follow, larger first.
 */
export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root
    const expected = (spec: TestSpecification): number => {
      const file = relative(root, spec.moduleId)
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${file}`)
      return cached?.duration ?? (SLOW_TESTS[file] ?? 0) * 1000
    }
    const size = (spec: TestSpecification): number =>
      this.ctx.cache.getFileStats(`${spec.project.name}:${relative(root, spec.moduleId)}`)?.size ?? 0
    return [...files].sort((a, b) => expected(b) - expected(a) || size(b) - size(a))
  }
}
