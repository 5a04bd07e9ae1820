import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { createRequire } from 'node:module'

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'

import { makeDynamoDbClient } from '../../../lib/adapters/aws/aws-clients.ts'
import { createStateTable } from '../../../lib/adapters/state/dynamodb-state-store.ts'

/** A running in-process dynalite server on 127.0.0.1. */
export interface DynaliteHandle {
  readonly endpoint: string
  readonly client: DynamoDBClient
  /** Creates a state table (the dimsync single-table layout) with a fresh name and returns the name. */
  createTable(prefix?: string): Promise<string>
  stop(): Promise<void>
}

export const DYNALITE_CREDENTIALS = Object.freeze({ accessKeyId: 'dynalite', secretAccessKey: 'dynalite' })

/**
 * Starts dynalite in this process (in-memory, tables ACTIVE at once: createTableMs 0) bound to 127.0.0.1 on a
 * random free port. Call `stop()` in afterAll.
 */
export async function startDynalite(): Promise<DynaliteHandle> {
  const require = createRequire(import.meta.url)
  const dynalite = require('dynalite') as (options: Record<string, unknown>) => Server
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  const endpoint = `http://127.0.0.1:${port}`
  const client = makeDynamoDbClient({ endpoint, region: 'us-east-1', credentials: DYNALITE_CREDENTIALS })
  let seq = 0
  return {
    endpoint,
    client,
    async createTable(prefix = 'dimsync-state') {
      const name = `${prefix}-${process.pid}-${++seq}`
      await createStateTable(client, name)
      return name
    },
    async stop() {
      client.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
