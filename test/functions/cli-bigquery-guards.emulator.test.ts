import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BIGQUERY_ENDPOINT_VARIABLE } from '../../lib/runtime/local-deps.ts'
import { BigQueryEmulator } from '../support/bigquery-emulator/bigquery-emulator.ts'

/**
 * The same guards on BigQuery (the emulator, through the real CLI): a dataset that does not exist is created, the
 * state's watermark is checked against the dataset's batch ledger before a run extracts, and the contract
 * recorded there refuses a new key.
 */

const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')
const PROJECT = 'guards-project'
let emulator: BigQueryEmulator
let work: string

beforeAll(async () => {
  emulator = await BigQueryEmulator.start()
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-bq-guards-'))
})
afterAll(async () => {
  await emulator?.stop()
  if (work) rmSync(work, { recursive: true, force: true })
})

function dimsync(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: work,
      env: {
        ...process.env,
        CI: '1',
        METADATA_SERVER_DETECTION: 'none',
        [BIGQUERY_ENDPOINT_VARIABLE]: emulator.url,
      },
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('close', (code) => resolve({ code, out, err }))
  })
}

function config(dataset: string, key = 'id'): void {
  writeFileSync(
    join(work, 'dimsync.yaml'),
    [
      'version: 1',
      `warehouse: { type: bigquery, project: ${PROJECT}, dataset: ${dataset}, location: EU }`,
      'tables:',
      '  - name: c',
      "    source: { type: file, path: 'in/*.csv', files: new_only }",
      `    key: ${key}`,
      '',
    ].join('\n'),
  )
}

function drop(name: string, rows: readonly string[], modified: number): void {
  mkdirSync(join(work, 'in'), { recursive: true })
  writeFileSync(join(work, 'in', name), ['id,name', ...rows].join('\n') + '\n')
  utimesSync(join(work, 'in', name), modified, modified)
}

async function runs(at: string): Promise<string> {
  const run = await dimsync('run', '--table', 'c', '--extracted-at', at)
  expect(run.code, run.err).toBe(0)
  return run.out
}

async function refused(at: string): Promise<string> {
  const run = await dimsync('run', '--table', 'c', '--extracted-at', at)
  expect(run.code, run.out).toBe(1)
  return run.err.split('\n').find((line) => line.startsWith('dimsync: '))!
}

describe('dimsync CLI on BigQuery (the emulator): the warehouse checked before a run reads a delta', () => {
  it('creates the dataset; refuses a dataset without the watermark batch, and a new key; reset-watermark reloads', async () => {
    config('history')
    drop('a.csv', ['1,a', '2,b'], 1_700_000_000)
    expect(await runs('2024-03-01')).toContain('2 rows; 2 versions inserted')
    expect(emulator.rows({ projectId: PROJECT, datasetId: 'history', tableId: 'dim_c' })).toHaveLength(2)

    config('history', '[id, name]')
    expect(await refused('2024-03-02')).toContain(
      'dimsync: table c: key (id) → (id, name) since dim_c was built',
    )

    // Another (empty) dataset: a warehouse that lost what the watermark says was merged.
    config('history_restored')
    drop('b.csv', ['3,c'], 1_700_000_100)
    expect(await refused('2024-03-02')).toMatch(
      /^dimsync: table c: the state store's watermark is .* \(committed by batch 20240301T000000\.000Z-\w+\), but the warehouse \(schema history_restored\) has not merged it: its ledger holds no batch of dim_c with a watermark\./,
    )
    const reset = await dimsync('reset-watermark', '--table', 'c')
    expect(reset.code, reset.err).toBe(0)
    expect(await runs('2024-03-03')).toContain('3 rows; 3 versions inserted')
    expect(
      emulator.rows({ projectId: PROJECT, datasetId: 'history_restored', tableId: 'dim_c' }),
    ).toHaveLength(3)
  }, 240_000)
})
