import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'

/** The import rules of eslint.config.js, run on snippets placed in each layer of lib/. */
const eslint = new ESLint({ cwd: process.cwd() })

async function layeringErrors(filePath: string, importPath: string, kind: 'value' | 'type' = 'value') {
  const code =
    kind === 'type'
      ? `import type { X } from '${importPath}'\nexport type Y = X\n`
      : `import { x } from '${importPath}'\nexport const y = x\n`
  const [result] = await eslint.lintText(code, { filePath })
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message)
}

describe('ESLint keeps the layering of lib/ (functions → runtime → use-cases → adapters → ports → core; sql and config → core)', () => {
  it.each([
    ['lib/ports/warehouse.ts', '../sql/dialect.ts', 'type'],
    ['lib/adapters/aws/source-secrets.ts', '../../runtime/aws-env.ts', 'value'],
    ['lib/adapters/warehouse/duckdb-warehouse.ts', '../../use-cases/merge-batch.ts', 'value'],
    ['lib/sql/bigquery/script.ts', '../../ports/warehouse.ts', 'type'],
    ['lib/sql/render-merge.ts', '../config/index.ts', 'value'],
    ['lib/core/errors.ts', '../ports/warehouse.ts', 'type'],
    ['lib/config/load-config.ts', '../sql/dialect.ts', 'value'],
    ['lib/use-cases/merge-batch.ts', '../runtime/local-deps.ts', 'value'],
    ['lib/runtime/aws-deps.ts', '../../functions/shared/handlers.ts', 'value'],
    ['lib/core/table-spec.ts', '../../test/support/table-spec-builder.ts', 'value'],
  ] as const)('%s may not import %s', async (file, imported, kind) => {
    const errors = await layeringErrors(file, imported, kind)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatch(/lib\/[a-z-]+ may import only lib\/|lib\/ does not import functions\//)
  })

  it.each([
    ['lib/adapters/warehouse/duckdb-warehouse.ts', '../../sql/dialect.ts'],
    ['lib/adapters/warehouse/duckdb-warehouse.ts', '../../ports/warehouse.ts'],
    ['lib/adapters/warehouse/duckdb-warehouse.ts', '../duckdb/parquet-schema.ts'],
    ['lib/sql/bigquery/bigquery-dialect.ts', '../dialect-base.ts'],
    ['lib/sql/bigquery/bigquery-dialect.ts', '../../core/table-ref.ts'],
    ['lib/use-cases/merge-batch.ts', '../sql/render-merge.ts'],
    ['lib/runtime/local-deps.ts', '../use-cases/run-table.ts'],
    ['lib/ports/warehouse.ts', '../core/table-ref.ts'],
    ['lib/core/errors.ts', './instant.ts'],
  ])('%s may import %s', async (file, imported) => {
    expect(await layeringErrors(file, imported)).toEqual([])
  })
})
