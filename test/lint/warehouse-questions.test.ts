import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'

/** eslint.config.js run on snippets placed in lib/use-cases: a use-case never asks which warehouse it talks to. */
const eslint = new ESLint({ cwd: process.cwd() })

async function questions(code: string, filePath = 'lib/use-cases/planted.ts'): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath })
  const fatal = result!.messages.filter((m) => m.fatal)
  expect(fatal).toEqual([])
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-syntax').map((m) => m.message)
}

const ASKED = /^lib\/use-cases never ask which warehouse they talk to: /

describe('lint refuses a use-case that asks which warehouse it talks to', () => {
  it.each([
    [
      'isScriptWarehouse',
      "import { isScriptWarehouse, type Warehouse } from '../ports/warehouse.ts'\n" +
        'export const f = (w: Warehouse) => isScriptWarehouse(w)\n',
    ],
    [
      'the ScriptWarehouse type',
      "import type { ScriptWarehouse } from '../ports/warehouse.ts'\nexport type W = ScriptWarehouse\n",
    ],
    [
      'capabilities.transactionalDdl',
      "import type { SqlDialect } from '../sql/dialect.ts'\n" +
        'export const f = (d: SqlDialect) => (d.capabilities.transactionalDdl ? 1 : 2)\n',
    ],
    [
      "the warehouse's dialect's capabilities",
      "import type { Warehouse } from '../ports/warehouse.ts'\nimport type { SqlDialect } from '../sql/dialect.ts'\n" +
        'export const f = (w: Warehouse<SqlDialect>) => w.dialect.capabilities.rowsPerKeyBucket\n',
    ],
    [
      'capabilities destructured',
      "import type { SqlDialect } from '../sql/dialect.ts'\n" +
        'export const f = (d: SqlDialect) => {\n  const { capabilities } = d\n  return capabilities\n}\n',
    ],
    ['warehouse.type', "export const f = (warehouse: { type: string }) => warehouse.type === 'bigquery'\n"],
    [
      "the project's warehouse.type",
      "export const f = (project: { warehouse: { type: string } }) => project.warehouse.type !== 'duckdb'\n",
    ],
    [
      "the dialect's name",
      "import type { Warehouse } from '../ports/warehouse.ts'\nimport type { SqlDialect } from '../sql/dialect.ts'\n" +
        "export const f = (w: Warehouse<SqlDialect>) => w.dialect.name === 'BigQuery'\n",
    ],
  ])('%s', async (_what, code) => {
    const messages = await questions(code)
    expect(messages).toHaveLength(1)
    expect(messages[0]).toMatch(ASKED)
  })

  it('lets a use-case hand its work to the warehouse', async () => {
    const code =
      "import type { BatchWork } from '../core/batch-work.ts'\n" +
      "import type { ApplyWorkRequest, Warehouse } from '../ports/warehouse.ts'\n" +
      'export const f = (w: Warehouse, work: BatchWork, r: ApplyWorkRequest) => w.applyWork(work, r)\n'
    expect(await questions(code)).toEqual([])
  })

  it('keeps the rule to lib/use-cases: an adapter may read capabilities', async () => {
    const code =
      "import type { SqlDialect } from '../../sql/dialect.ts'\n" +
      'export const f = (d: SqlDialect) => d.capabilities.transactionalDdl\n'
    expect(await questions(code, 'lib/adapters/warehouse/planted.ts')).toEqual([])
  })

  it('the report may read warehouse.type (its label), and nothing else; validate-project not even that', async () => {
    const typeRead = "export const f = (warehouse: { type: string }) => warehouse.type === 'bigquery'\n"
    expect(await questions(typeRead, 'lib/use-cases/read-report.ts')).toEqual([])
    expect(await questions(typeRead, 'lib/use-cases/validate-project.ts')).toHaveLength(1)
    const capability =
      "import type { SqlDialect } from '../sql/dialect.ts'\n" +
      'export const f = (d: SqlDialect) => d.capabilities.transactionalDdl\n'
    expect(await questions(capability, 'lib/use-cases/read-report.ts')).toHaveLength(1)
  })

  it('the use-cases as they are ask nothing', async () => {
    const results = await eslint.lintFiles(['lib/use-cases/**/*.ts'])
    const asked = results.flatMap((r) =>
      r.messages.filter((m) => ASKED.test(m.message)).map((m) => `${r.filePath}:${m.line} ${m.message}`),
    )
    expect(asked).toEqual([])
    expect(results.length).toBeGreaterThan(20)
  })
})
