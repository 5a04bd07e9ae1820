import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZetaSqlAnalyzer } from '../../support/zetasql/zetasql-analyzer.ts'

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, '../../..')

let analyzer: ZetaSqlAnalyzer
beforeAll(async () => {
  analyzer = await ZetaSqlAnalyzer.start()
})
afterAll(async () => {
  await analyzer?.stop()
})

describe('dimsync plan --dialect bigquery --sql (offline)', () => {
  it('prints the whole BigQuery script with no credentials and no BigQuery endpoint, and it parses as GoogleSQL', async () => {
    const env = {
      ...process.env,
      GOOGLE_APPLICATION_CREDENTIALS: '/nonexistent',
      METADATA_SERVER_DETECTION: 'none',
    }
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(root, 'functions/local/cli.ts'),
        'plan',
        '--dialect',
        'bigquery',
        '--sql',
        '-c',
        'dimsync.yaml',
      ],
      { cwd: path.join(root, 'examples/quickstart'), env },
    )
    expect(stdout).toContain('CREATE TABLE IF NOT EXISTS `your-project`.`your_dataset`.`dim_customer`')
    expect(stdout).toContain('BEGIN TRANSACTION;')
    expect(stdout).toContain('COMMIT TRANSACTION;')
    expect(stdout).toContain(
      'CREATE OR REPLACE TABLE FUNCTION `your-project`.`your_dataset`.`dim_customer_as_of`(ts TIMESTAMP)',
    )
    expect(await analyzer.parseScript(stdout)).toBeUndefined()
  })
})
