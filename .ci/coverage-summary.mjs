// Prints the coverage of lib/core and lib/sql from vitest's json-summary report, one line per folder, so CI's
// kept tail shows it next to the floor vitest.config.ts sets (a run under the floor already failed the test step).
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
