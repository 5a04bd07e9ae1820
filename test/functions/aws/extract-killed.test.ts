import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { StagingError } from '../../../lib/core/errors.ts'
import { buildAwsDeps } from '../../../lib/runtime/aws-deps.ts'
import { createExtractHandler, createMergeHandler } from '../../../functions/shared/handlers.ts'
import { startDynalite, type DynaliteHandle } from '../../support/aws/dynalite.ts'
import { captureStdout, fakeContext, makeSandbox, useEmulatorCredentials } from '../../support/aws/lambda.ts'
import { startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'

const here = dirname(fileURLToPath(import.meta.url))
const projectDir = join(here, '..', '..', '..')

let s3: S3rverHandle
let dynamo: DynaliteHandle
beforeAll(async () => {
  useEmulatorCredentials()
  ;[s3, dynamo] = await Promise.all([startS3rver(), startDynalite()])
})
afterAll(async () => {
  await Promise.all([s3?.stop(), dynamo?.stop()])
})

/** Runs the extract in a child process and SIGKILLs it as soon as it starts uploading a part. */
function extractKilledMidUpload(env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, 'fixtures', 'extract-child.ts')], {
      cwd: projectDir,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    let uploading: string | undefined
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const match = /UPLOADING (\S+)/.exec(out)
      if (match && uploading === undefined) {
        uploading = match[1]!
        child.kill('SIGKILL')
      }
    })
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
    child.on('error', reject)
    child.on('exit', (_code, signal) => {
      if (signal === 'SIGKILL' && uploading !== undefined) resolve(uploading)
      else reject(new Error(`the extract child was not killed mid-upload (stdout ${out}; stderr ${err})`))
    })
  })
}

describe('extract killed mid-upload (child process, s3rver + dynalite)', () => {
  it('leaves no manifest, merges nothing, and the next run cleans up and succeeds', async () => {
    const box = await makeSandbox(s3, dynamo)
    const key = await extractKilledMidUpload(box.env)
    const batchId = key.split('/')[2]!
    expect(key).toBe(`staging/customers/${batchId}/part-00000.parquet`)

    const objects = await s3.client.send(new ListObjectsV2Command({ Bucket: box.bucket }))
    expect((objects.Contents ?? []).map((o) => o.Key)).toEqual([`staging/customers/${batchId}/_started.json`])

    // Two hours later (the dead extract's lease has long expired; its batch is abandoned).
    const later = () => new Date(Date.now() + 2 * 3_600_000)
    const deps = await buildAwsDeps(box.env, { clock: later })
    try {
      expect(await deps.staging.listBatches('customers')).toEqual([])
      const [dead] = await deps.state.listRuns('customers', 1)
      expect(dead).toMatchObject({ status: 'running', batchId })

      const merge = createMergeHandler({ deps: async () => deps })
      const refused = await captureStdout(() => merge({ table: 'customers', batchId }, fakeContext())).catch(
        (e: unknown) => e,
      )
      expect(refused).toBeInstanceOf(StagingError)
      expect((refused as Error).message).toMatch(new RegExp(`batch ${batchId} is not committed`))

      const next = await captureStdout(() =>
        createExtractHandler({ deps: async () => deps })({ table: 'customers' }, fakeContext()),
      )
      expect(next.result).toMatchObject({ table: 'customers', rows: 3 })
      const cleanup = next.lines.find((l) => (l as { step?: string }).step === 'cleanup')
      expect(cleanup).toMatchObject({ removed: [batchId] })
      const merged = await captureStdout(() => merge(next.result, fakeContext()))
      expect(merged.result).toMatchObject({ status: 'merged', counts: { insertedVersions: 3 } })
      const left = await s3.client.send(new ListObjectsV2Command({ Bucket: box.bucket }))
      expect(left.Contents ?? []).toEqual([])
    } finally {
      await deps.close()
    }
  })
})
