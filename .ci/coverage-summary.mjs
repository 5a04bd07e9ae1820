// Prints the coverage of lib/core and lib/sql from vitest's json-summary report, one line per folder, at the end of
// `npm run test:coverage` (a run under the floor vitest.config.ts sets has already failed).
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'

const summary = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const METRICS = ['lines', 'branches', 'functions', 'statements']
for (const folder of ['lib/core/', 'lib/sql/']) {
  const totals = Object.fromEntries(METRICS.map((m) => [m, { covered: 0, total: 0 }]))
  for (const [file, metrics] of Object.entries(summary)) {
    if (file === 'total' || !relative(process.cwd(), file).startsWith(folder)) continue
    for (const m of METRICS) {
      totals[m].covered += metrics[m].covered
      totals[m].total += metrics[m].total
    }
  }
  const pct = (m) => ((100 * totals[m].covered) / Math.max(totals[m].total, 1)).toFixed(1)
  console.log(`coverage ${folder}: ${METRICS.map((m) => `${m} ${pct(m)}%`).join(', ')}`)
}
