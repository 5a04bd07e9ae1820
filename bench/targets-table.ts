/**
 * `npx tsx bench/targets-table.ts`: writes the table of the latest figures in docs/benchmarks.md from
 * bench/results/latest.json (test/bench/targets.test.ts checks that the two agree).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { BENCH_ROOT } from './support.ts'
import { renderTargetsTable, replaceTargetsTable } from './targets.ts'

const docs = join(BENCH_ROOT, '..', 'docs', 'benchmarks.md')
const latest = JSON.parse(readFileSync(join(BENCH_ROOT, 'results', 'latest.json'), 'utf8')) as {
  targets?: Record<string, unknown>
}
const updated = replaceTargetsTable(readFileSync(docs, 'utf8'), renderTargetsTable(latest.targets ?? {}))
if (updated === undefined) throw new Error('docs/benchmarks.md has no targets table markers')
writeFileSync(docs, updated)
