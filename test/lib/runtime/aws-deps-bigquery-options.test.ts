import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { AWS_ENV } from '../../../lib/runtime/aws-env.ts'
import { buildAwsDeps } from '../../../lib/runtime/aws-deps.ts'
import { BigQueryError, errorResponseBody } from '../../support/bigquery-emulator/api-errors.ts'

/**
 * The functions' composition root hands BigQuery client settings to the warehouse it opens (the chaos test waits
 * less between retries with them). A server that answers every call 503 shows the settings in force: the attempts
 * it receives and the waits between them.
 */
describe('buildAwsDeps with BigQuery client settings', () => {
  let server: Server
  let endpoint: string
  let calls = 0
  let dir: string

  beforeAll(async () => {
    server = createServer((_req, res) => {
      calls++
      res.writeHead(503, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify(errorResponseBody(503, [new BigQueryError('backendError', 'Service unavailable')])),
      )
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    dir = await mkdtemp(join(tmpdir(), 'dimsync-aws-deps-'))
    await writeFile(
      join(dir, 'dimsync.yaml'),
      `version: 1
warehouse: { type: bigquery, project: acme-dw, dataset: history, location: EU }
tables:
  - name: customers
    source: { type: postgres, url_env: DB_URL, table: public.customers }
    key: id
`,
    )
  })
  afterAll(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('opens the warehouse with them: its attempts and its waits between them', async () => {
    const waits: number[] = []
    const deps = await buildAwsDeps(
      {
        [AWS_ENV.configPath]: join(dir, 'dimsync.yaml'),
        [AWS_ENV.stagingBucket]: 'staging',
        [AWS_ENV.stateTable]: 'state',
        [AWS_ENV.warehouse]: 'bigquery',
        [AWS_ENV.bigQueryEndpoint]: endpoint,
      },
      {
        bigQuery: {
          maxAttempts: 3,
          retryDelayMs: 40,
          sleep: async (ms) => {
            waits.push(ms)
          },
        },
      },
    )
    try {
      const warehouse = await deps.warehouse()
      calls = 0
      await expect(warehouse.describeTable({ schema: 'history', name: 'dim_customers' })).rejects.toThrow()
      expect(calls).toBe(3)
      // The backoff from 40 ms, doubling, each wait between half its ceiling and the ceiling.
      expect(waits).toHaveLength(2)
      expect(waits[0]).toBeGreaterThanOrEqual(20)
      expect(waits[0]).toBeLessThanOrEqual(40)
      expect(waits[1]).toBeGreaterThanOrEqual(40)
      expect(waits[1]).toBeLessThanOrEqual(80)
    } finally {
      await deps.close()
    }
  })
})
