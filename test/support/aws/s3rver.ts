import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3'

import { makeS3Client } from '../../../lib/adapters/aws/aws-clients.ts'

const here = dirname(fileURLToPath(import.meta.url))

/** A running s3rver child process on 127.0.0.1. */
export interface S3rverHandle {
  readonly endpoint: string
  readonly port: number
  /** A client configured for s3rver (path style, S3RVER credentials, checksums only when required). */
  readonly client: S3Client
  /** Creates a bucket with a fresh random name and returns it. */
  createBucket(prefix?: string): Promise<string>
  stop(): Promise<void>
}

/** The only credentials s3rver accepts. */
export const S3RVER_CREDENTIALS = Object.freeze({ accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' })

/**
 * Starts s3rver as a child process (`node --openssl-legacy-provider`, or ListObjectsV2 pagination fails) bound to
 * 127.0.0.1 on a random free port, with its data in a fresh temporary folder. Call `stop()` in afterAll.
 */
export async function startS3rver(): Promise<S3rverHandle> {
  const directory = await mkdtemp(join(tmpdir(), 'dimsync-s3rver-'))
  const child = spawn(
    process.execPath,
    ['--openssl-legacy-provider', '--import', 'tsx', join(here, 's3rver-child.ts'), directory],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const port = await readPort(child, 's3rver')
  const endpoint = `http://127.0.0.1:${port}`
  const client = makeS3Client({
    endpoint,
    region: 'us-east-1',
    credentials: S3RVER_CREDENTIALS,
    forcePathStyle: true,
    checksums: 'when-required',
  })
  let seq = 0
  return {
    endpoint,
    port,
    client,
    async createBucket(prefix = 'dimsync-test') {
      const name = `${prefix}-${process.pid}-${Date.now().toString(36)}-${++seq}`
      await client.send(new CreateBucketCommand({ Bucket: name }))
      return name
    },
    async stop() {
      client.destroy()
      await stopChild(child)
      await rm(directory, { recursive: true, force: true })
    },
  }
}

/** Reads the `{"port": N}` line a launcher child prints once it listens; rejects if the child dies first. */
export function readPort(child: ChildProcess, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = ''
    let err = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${what} did not start within 20 s: ${err}`))
    }, 20_000)
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (line === undefined) return
      clearTimeout(timer)
      resolve((JSON.parse(line) as { port: number }).port)
    })
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()))
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${what} exited with code ${code} before listening: ${err}`))
    })
  })
}

/** SIGTERM, then SIGKILL after 3 s; resolves once the child is gone. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}
