import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseProject } from '../../lib/config/index.ts'
import type { ProjectSpec } from '../../lib/core/table-spec.ts'
import { buildApp } from '../../infra/build-app.ts'

const FIXTURE = path.join(import.meta.dirname, 'fixtures', 'handler.ts')
const YAML = `version: 1
tables:
  - name: customers
    source: { type: postgres, url_env: SHOP_DB_URL, table: public.customers }
    key: customer_id
    schedule: rate(1 hour)
aws:
  secrets: { SHOP_DB_URL: dimsync/shop-db }
  bigquery_secret: dimsync/bigquery
`

/** ELF e_machine of a shared object: 0x3e x86-64, 0xb7 aarch64. */
function elfMachine(file: string): number {
  const header = readFileSync(file).subarray(0, 20)
  expect(header.subarray(0, 4).toString('latin1')).toBe('\x7fELF')
  return header.readUInt16LE(18)
}

async function synthWithBundling(architecture: 'x86_64' | 'arm64') {
  const dir = mkdtempSync(path.join(tmpdir(), 'dimsync-bundle-'))
  const configPath = path.join(dir, 'dimsync.yaml')
  const yaml = YAML.replace('aws:\n', `aws:\n  architecture: ${architecture}\n`)
  writeFileSync(configPath, yaml)
  const project = parseProject(yaml, configPath)
  const { app } = await buildApp({
    project: { ...project, warehouse: { type: 'bigquery' } as unknown as ProjectSpec['warehouse'] },
    appProps: { outdir: path.join(dir, 'cdk.out') },
    handlerEntries: { extract: FIXTURE, merge: FIXTURE },
  })
  return { dir, configPath, yaml, synth: () => app.synth() }
}

/**
 * Two real esbuild bundles and a copy of DuckDB's packages per test: about 20 s on a quiet machine, over 60 s
 * measured with six engineers' tests sharing two cores.
 */
const BUNDLING_TIMEOUT_MS = 180_000

describe('function bundles (real esbuild bundling)', () => {
  it(
    'ship the linux x64 DuckDB binary and dimsync.yaml, and the bundle runs',
    async () => {
      const { dir, synth, yaml } = await synthWithBundling('x86_64')
      synth()
      const assets = readdirSync(path.join(dir, 'cdk.out')).filter(
        // The loader's bundles (they ship dimsync.yaml), not the version-pruning function's plain file.
        (name) => name.startsWith('asset.') && existsSync(path.join(dir, 'cdk.out', name, 'dimsync.yaml')),
      )
      expect(assets.length).toBeGreaterThan(0)
      for (const asset of assets) {
        const root = path.join(dir, 'cdk.out', asset)
        const duckdb = path.join(root, 'node_modules', '@duckdb')
        expect(readdirSync(duckdb).sort()).toEqual(['node-api', 'node-bindings', 'node-bindings-linux-x64'])
        expect(elfMachine(path.join(duckdb, 'node-bindings-linux-x64', 'duckdb.node'))).toBe(0x3e)
        expect(readFileSync(path.join(root, 'dimsync.yaml'), 'utf8')).toBe(yaml)
        // The bundle loads DuckDB from its own node_modules, as it will in /var/task.
        const mod = (await import(pathToFileURL(path.join(root, 'index.mjs')).href)) as {
          handler: () => Promise<unknown>
        }
        await expect(mod.handler()).resolves.toEqual({ ok: true })
      }
    },
    BUNDLING_TIMEOUT_MS,
  )

  it(
    'for arm64 (the default), fetch and ship the linux arm64 DuckDB binary, whatever machine runs cdk',
    async () => {
      const { dir, synth } = await synthWithBundling('arm64')
      synth()
      const assets = readdirSync(path.join(dir, 'cdk.out')).filter(
        // The loader's bundles (they ship dimsync.yaml), not the version-pruning function's plain file.
        (name) => name.startsWith('asset.') && existsSync(path.join(dir, 'cdk.out', name, 'dimsync.yaml')),
      )
      expect(assets.length).toBeGreaterThan(0)
      for (const asset of assets) {
        const duckdb = path.join(dir, 'cdk.out', asset, 'node_modules', '@duckdb')
        expect(readdirSync(duckdb).sort()).toEqual(['node-api', 'node-bindings', 'node-bindings-linux-arm64'])
        expect(elfMachine(path.join(duckdb, 'node-bindings-linux-arm64', 'duckdb.node'))).toBe(0xb7)
      }
    },
    BUNDLING_TIMEOUT_MS,
  )
})
