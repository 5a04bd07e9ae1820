import { ESLint } from 'eslint'
import { describe, expect, it } from 'vitest'

/** The import rules of eslint.config.js, run on snippets placed in each layer of lib/. */
const eslint = new ESLint({ cwd: process.cwd() })

type ImportKind = 'value' | 'type' | 'dynamic'

const IMPORT_RULES = ['no-restricted-imports', 'dimsync/restricted-dynamic-imports']

async function layeringErrors(filePath: string, importPath: string, kind: ImportKind = 'value') {
  const code = {
    type: `import type { X } from '${importPath}'\nexport type Y = X\n`,
    value: `import { x } from '${importPath}'\nexport const y = x\n`,
    dynamic: `export const y = () => import('${importPath}')\n`,
  }[kind]
  const [result] = await eslint.lintText(code, { filePath })
  return result!.messages.filter((m) => IMPORT_RULES.includes(m.ruleId ?? '')).map((m) => m.message)
}

describe('ESLint keeps the layering (functions → runtime → use-cases → ports → core; adapters → ports → core; sql and config → core) and what functions/, infra/ and bin/ may reach', () => {
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
    ['lib/use-cases/merge-batch.ts', '../adapters/warehouse/duckdb-warehouse.ts', 'value'],
    ['lib/use-cases/merge-batch.ts', '../adapters/warehouse/duckdb-warehouse.ts', 'type'],
    ['lib/use-cases/merge-batch.ts', '../adapters/warehouse/duckdb-warehouse.ts', 'dynamic'],
    ['lib/sql/render-merge.ts', '../config/index.ts', 'dynamic'],
    ['lib/adapters/source/file-source.ts', '../../runtime/open-source.ts', 'dynamic'],
  ] as const)('%s may not import %s (%s)', async (file, imported, kind) => {
    const errors = await layeringErrors(file, imported, kind)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatch(/lib\/[a-z-]+ may import only lib\/|lib\/ does not import functions\//)
  })

  it.each([
    [
      'functions/local/commands.ts',
      '../../lib/adapters/warehouse/duckdb-warehouse.ts',
      'value',
      /^functions\/ reaches lib\//,
    ],
    [
      'functions/local/commands.ts',
      '../../lib/sql/bigquery/offline-plan.ts',
      'dynamic',
      /^functions\/ reaches lib\//,
    ],
    ['functions/shared/handlers.ts', '../../infra/index.ts', 'value', /^functions\/ imports only/],
    ['infra/constructs/loader-function.ts', '../../bin/dimsync.mjs', 'value', /^infra\/ imports only/],
    [
      'infra/constructs/orchestration.ts',
      '../../lib/adapters/staging/batch-keys.ts',
      'value',
      /^infra\/ imports lib\/config/,
    ],
    [
      'infra/constructs/orchestration.ts',
      '../../lib/use-cases/run-event.ts',
      'type',
      /^infra\/ imports lib\/config/,
    ],
    [
      'infra/constructs/orchestration.ts',
      '../../functions/shared/handlers.ts',
      'dynamic',
      /^infra\/ imports only/,
    ],
    ['bin/dimsync.mjs', '../lib/use-cases/run-table.ts', 'value', /^bin\/ imports only/],
    ['bin/dimsync.mjs', '../infra/index.ts', 'dynamic', /^bin\/ imports only/],
  ] as const)('%s may not import %s (%s)', async (file, imported, kind, message) => {
    const errors = await layeringErrors(file, imported, kind)
    expect(errors).toHaveLength(1)
    expect(errors[0]!.replace(/^.* by a pattern\. /s, '')).toMatch(message)
  })

  it.each([
    [
      'lib/adapters/source/file-source.ts',
      `import { DuckDBInstance } from '@duckdb/node-api'\nexport const i = DuckDBInstance\n`,
    ],
    [
      'lib/adapters/warehouse/bigquery-load-groups.ts',
      `export const load = () => import('@duckdb/node-api')\n`,
    ],
    ['lib/use-cases/run-table.ts', `export const load = () => import('@duckdb/node-api')\n`],
  ])('%s may not open DuckDB itself: one engine factory does', async (filePath, code) => {
    const [result] = await eslint.lintText(code, { filePath })
    expect(result!.messages.map((m) => m.message)).toEqual([
      expect.stringContaining('open DuckDB with openDuckDbEngine (lib/adapters/duckdb/duckdb-engine.ts)'),
    ])
  })

  it.each([
    [
      'lib/adapters/duckdb/canonical-json-function.ts',
      `import { VARCHAR } from '@duckdb/node-api'\nexport const t = VARCHAR\n`,
    ],
    [
      'lib/adapters/source/db-csv-parts.ts',
      `import type { DuckDBInstance } from '@duckdb/node-api'\nexport type I = DuckDBInstance\n`,
    ],
    ['lib/adapters/duckdb/duckdb-engine.ts', `export const load = () => import('@duckdb/node-api')\n`],
  ])('%s may use DuckDB without opening it', async (filePath, code) => {
    const [result] = await eslint.lintText(code, { filePath })
    expect(result!.messages).toEqual([])
  })

  it('a dynamic import of a computed path in lib/ is refused: the layering could not check it', async () => {
    const [result] = await eslint.lintText('export const load = (name: string) => import(name)\n', {
      filePath: 'lib/use-cases/run-table.ts',
    })
    expect(result!.messages.map((m) => m.message)).toContain(
      'import() of a computed path: the layering cannot check it',
    )
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
    ['lib/runtime/local-deps.ts', '../adapters/warehouse/duckdb-warehouse.ts', 'dynamic'],
    ['functions/local/commands.ts', '../../lib/runtime/warehouse-registry.ts', 'dynamic'],
    ['functions/local/commands.ts', '../../lib/use-cases/run-table.ts'],
    ['infra/constructs/orchestration.ts', '../../lib/core/batch-manifest.ts'],
    ['infra/constructs/loader-function.ts', '../../lib/runtime/allocator-environment.mjs'],
    ['bin/dimsync.mjs', '../lib/runtime/allocator-environment.mjs'],
    ['bin/dimsync.mjs', '../functions/local/cli.ts', 'dynamic'],
  ] as const)('%s may import %s', async (file, imported, kind: ImportKind = 'value') => {
    expect(await layeringErrors(file, imported, kind)).toEqual([])
  })
})
