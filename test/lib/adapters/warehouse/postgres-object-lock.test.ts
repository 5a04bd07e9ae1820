import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'

import { lockObjects } from '../../../../lib/adapters/warehouse/postgres-object-lock.ts'
import { WarehouseBusyError } from '../../../../lib/core/errors.ts'
import { PG_URL } from '../../../integration/sources/support/db-services.ts'

const schema = `lock_${randomBytes(4).toString('hex')}`
const customers = { schema, name: 'dim_customer' }
const orders = { schema, name: 'fact_orders' }
const quick = { waitMs: 300, waitSetting: 'DIMSYNC_WAREHOUSE_WAIT_SECONDS', pollMs: 20 }

let clients: pg.Client[]
async function session(name: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: PG_URL, application_name: name })
  await client.connect()
  clients.push(client)
  return client
}
beforeEach(() => {
  clients = []
})
afterEach(async () => {
  for (const c of clients) await c.end().catch(() => undefined)
})

describe('PostgreSQL object locks (real PostgreSQL, two sessions)', () => {
  it("a second session waits, then is refused naming the holder's session; nothing was taken", async () => {
    const [a, b] = [await session('dimsync run A'), await session('dimsync run B')]
    const release = await lockObjects(a, [customers], quick)
    const refused = await lockObjects(b, [customers, orders], quick).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(WarehouseBusyError)
    expect(String(refused)).toContain(`${schema}.dim_customer is being written by another dimsync`)
    expect(String(refused)).toContain('session "dimsync run A"')
    expect((refused as WarehouseBusyError).retryable).toBe(true)
    // B took neither lock: A can take the other object at once.
    const releaseOrders = await lockObjects(a, [orders], { ...quick, waitMs: 0 })
    await releaseOrders()
    await release()
    const releaseB = await lockObjects(b, [customers], quick)
    await releaseB()
  })

  it('a waiting session goes on as soon as the holder releases, or its session ends (a killed process)', async () => {
    const [a, b] = [await session('a'), await session('b')]
    await lockObjects(a, [customers], quick)
    const waiting = lockObjects(b, [customers], { ...quick, waitMs: 10_000 })
    await new Promise((r) => setTimeout(r, 100))
    await a.end()
    const release = await waiting
    await release()
  })

  it('locks are taken in one order whatever the order asked: two writers of the same objects never deadlock', async () => {
    const [a, b] = [await session('a'), await session('b')]
    const long = { ...quick, waitMs: 10_000 }
    for (let round = 0; round < 5; round++) {
      const [ra, rb] = [lockObjects(a, [customers, orders], long), lockObjects(b, [orders, customers], long)]
      // Whichever gets both first releases; the other then gets both.
      const first = await Promise.race([ra.then(() => 'a'), rb.then(() => 'b')])
      await (
        await (first === 'a' ? ra : rb)
      )()
      await (
        await (first === 'a' ? rb : ra)
      )()
    }
  })

  it('the same object for two different schemas are different locks', async () => {
    const [a, b] = [await session('a'), await session('b')]
    const release = await lockObjects(a, [customers], quick)
    const other = await lockObjects(b, [{ schema: `${schema}_other`, name: 'dim_customer' }], quick)
    await other()
    await release()
  })
})
