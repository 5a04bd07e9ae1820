// Prints the tests that failed in a vitest JSON report, one line each, so CI's kept tail names them.
import { readFileSync } from 'node:fs'

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const failures = []
for (const file of report.testResults ?? []) {
  const name = file.name.replace(`${process.cwd()}/`, '')
  const failedTests = (file.assertionResults ?? []).filter((t) => t.status === 'failed')
  for (const t of failedTests) {
    const firstLine = String(t.failureMessages?.[0] ?? '')
      .split('\n')[0]
      .slice(0, 300)
    failures.push(`FAILED ${name} > ${t.fullName}: ${firstLine}`)
  }
  if (file.status === 'failed' && failedTests.length === 0) {
    failures.push(
      `FAILED ${name} (file): ${String(file.message ?? '')
        .split('\n')[0]
        .slice(0, 300)}`,
    )
  }
}
console.log(
  `tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests} skipped`,
)
for (const line of failures) console.log(line)
