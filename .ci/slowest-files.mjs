// Prints the slowest test files of a vitest JSON report (wall time from the file's start to its end), so each CI
// run shows where its minutes go. Usage: node .ci/slowest-files.mjs <vitest.json> [count]
import { readFileSync } from 'node:fs'

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const count = Number(process.argv[3] ?? 15)
const files = (report.testResults ?? [])
  .map((file) => ({
    name: file.name.replace(`${process.cwd()}/`, ''),
    seconds: (Number(file.endTime) - Number(file.startTime)) / 1000,
  }))
  .filter((file) => Number.isFinite(file.seconds))
  .sort((a, b) => b.seconds - a.seconds)
console.log(`slowest ${Math.min(count, files.length)} of ${files.length} test files:`)
for (const file of files.slice(0, count))
  console.log(`${file.seconds.toFixed(1).padStart(8)} s  ${file.name}`)
