import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'

import { createMergeHandler } from '../../../functions/shared/handlers.ts'
import { buildAwsDeps, type AwsDeps } from '../../../lib/runtime/aws-deps.ts'
import { AWS_ENV } from '../../../lib/runtime/aws-env.ts'
import {
  MysqlScratch,
  PgScratch,
  mysqlReachable,
  postgresReachable,
  uniqueName,
} from '../../integration/sources/support/db-services.ts'
import { startDynalite, type DynaliteHandle } from '../../support/aws/dynalite.ts'
import {
  captureStdout,
  fakeContext,
  makeSandbox,
  stagingExtract,
  useEmulatorCredentials,
} from '../../support/aws/lambda.ts'
import { startS3rver, type S3rverHandle } from '../../support/aws/s3rver.ts'

const [pgUp, mysqlUp] = await Promise.all([postgresReachable(), mysqlReachable()])

const SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:dimsync/source-db-AbCdEf'

/**
 * A fake secrets store at the functions' `GetSecret` boundary (no Secrets Manager HTTP API): answers the
 * value a rotation last stored, and counts the reads.
 */
class FakeRotatingSecretStore {
  reads = 0
  constructor(public value: string) {}
  readonly get = async (arn: string): Promise<string> => {
    expect(arn).toBe(SECRET_ARN)
    this.reads++
    return this.value
  }
}

/**
 * The extract function logging in to a real database with credentials from a secret that is rotated while the
 * container keeps the value it read: the database changes the login (ALTER USER / ALTER ROLE), the store
 * answers the new value, and the function reads it again once after the refused login.
 */
describe.skipIf(!pgUp && !mysqlUp)('a source secret rotated while the container keeps its old value', () => {
  let s3: S3rverHandle
  let dynamo: DynaliteHandle
  const opened: AwsDeps[] = []

  beforeAll(async () => {
    useEmulatorCredentials()
    ;[s3, dynamo] = await Promise.all([startS3rver(), startDynalite()])
  })
  afterEach(async () => {
    for (const deps of opened.splice(0)) await deps.close()
  })
  afterAll(async () => {
    await Promise.all([s3?.stop(), dynamo?.stop()])
  })

  /** The functions of a fresh sandbox whose table `items` is read from `source` with DB_URL from the store. */
  async function functionsReading(source: string, store: FakeRotatingSecretStore) {
    const box = await makeSandbox(s3, dynamo)
    const yaml = [
      'version: 1',
      'warehouse: { type: duckdb, path: unused.duckdb }',
      'tables:',
      '  - name: items',
      `    source: { ${source}, url_env: DB_URL }`,
      '    target: dim_items',
      '    key: id',
      '    tracked: [name]',
      '',
    ]
    await writeFile(join(box.dir, 'dimsync.yaml'), yaml.join('\n'))
    const deps = await buildAwsDeps({ ...box.env, DB_URL: SECRET_ARN }, { getSecret: store.get })
    opened.push(deps)
    const extract = stagingExtract({ deps: async () => deps })
    const merge = createMergeHandler({ deps: async () => deps })
    return {
      /** A run that logs in and stages its batch, then merges it (its run ends: the next run finds the table free). */
      extract: async () => {
        const staged = await captureStdout(() => extract({ table: 'items' }, fakeContext()))
        await captureStdout(() => merge(staged.result, fakeContext()))
        return staged.result
      },
      failedExtract: () =>
        captureStdout(() => extract({ table: 'items' }, fakeContext())).then(
          () => expect.unreachable('the extract logged in'),
          (error: unknown) => error as Error,
        ),
      merge: async () => {
        const staged = await captureStdout(() => extract({ table: 'items' }, fakeContext()))
        return (await captureStdout(() => merge(staged.result, fakeContext()))).result
      },
    }
  }

  describe.skipIf(!mysqlUp)('MariaDB: the password of the user changes (ALTER USER)', () => {
    let db: MysqlScratch
    const user = uniqueName('dimsync_rot')
    const rdsSecret = (password: string) =>
      JSON.stringify({
        engine: 'mysql',
        host: '127.0.0.1',
        port: 3306,
        username: user,
        password,
        dbname: db.database,
      })

    beforeAll(async () => {
      db = await MysqlScratch.create()
      await db.sql('CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR(20) NOT NULL)')
      await db.sql(`INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
      await db.sql(`CREATE USER '${user}'@'%' IDENTIFIED BY 'first-password'`)
      await db.sql(`CREATE USER '${user}'@'localhost' IDENTIFIED BY 'first-password'`)
      for (const host of ['%', 'localhost'])
        await db.sql(`GRANT SELECT ON ${db.database}.* TO '${user}'@'${host}'`)
    })
    afterAll(async () => {
      if (db === undefined) return
      for (const host of ['%', 'localhost']) await db.sql(`DROP USER IF EXISTS '${user}'@'${host}'`)
      await db.drop()
    })

    const alterPassword = async (password: string) => {
      for (const host of ['%', 'localhost'])
        await db.sql(`ALTER USER '${user}'@'${host}' IDENTIFIED BY '${password}'`)
    }

    it('after a rotation, the refused login reads the secret again once and the retry logs in with the new password', async () => {
      await alterPassword('first-password')
      const store = new FakeRotatingSecretStore(rdsSecret('first-password'))
      const fn = await functionsReading('type: mysql, table: items', store)
      expect(await fn.merge()).toMatchObject({ status: 'merged', counts: { insertedVersions: 3 } })
      expect(store.reads).toBe(1)

      await alterPassword('second-password')
      store.value = rdsSecret('second-password')
      const refused = await fn.failedExtract()
      // Retried by the state machine (RetryableError), saying why; the secret was read once more.
      expect(refused.name).toBe('RetryableError')
      expect(refused.message).toMatch(
        new RegExp(
          `authentication failed for user ${user}.*secret ${SECRET_ARN} had been rotated: it was read again`,
        ),
      )
      expect(refused.message).not.toContain('second-password')
      expect(store.reads).toBe(2)

      // The retry reads the change made meanwhile, logged in with the new password.
      await db.sql(`UPDATE items SET name = 'b2' WHERE id = 2`)
      expect(await fn.merge()).toMatchObject({
        status: 'merged',
        counts: { insertedVersions: 1, closedVersions: 1 },
      })
      expect(store.reads).toBe(2)
    })

    it('a login refused with the secret unchanged fails clearly and is not retried', async () => {
      await alterPassword('first-password')
      const store = new FakeRotatingSecretStore(rdsSecret('first-password'))
      const fn = await functionsReading('type: mysql, table: items', store)
      expect(await fn.extract()).toMatchObject({ complete: true })
      await alterPassword('nobody-told-the-secret')
      for (const attempt of [1, 2]) {
        const refused = await fn.failedExtract()
        expect(refused.name).toBe('SourceError')
        expect(refused.message).toMatch(
          new RegExp(
            `authentication failed for user ${user}.*secret ${SECRET_ARN} was read again and has not changed`,
          ),
        )
        expect(store.reads).toBe(1 + attempt)
      }
    })
  })

  describe.skipIf(!pgUp)(
    'PostgreSQL: the secret moves to another role and the old one may no longer log in (ALTER ROLE)',
    () => {
      let pg: PgScratch
      const [first, second] = [uniqueName('dimsync_rot_a'), uniqueName('dimsync_rot_b')]
      const url = (role: string) => `postgres://${role}@127.0.0.1:5432/test`

      beforeAll(async () => {
        pg = await PgScratch.create()
        await pg.sql(`CREATE TABLE ${pg.schema}.items (id BIGINT PRIMARY KEY, name TEXT NOT NULL)`)
        await pg.sql(`INSERT INTO ${pg.schema}.items VALUES (1, 'a'), (2, 'b')`)
        for (const role of [first, second]) {
          await pg.sql(`CREATE ROLE ${role} LOGIN`)
          await pg.sql(`GRANT USAGE ON SCHEMA ${pg.schema} TO ${role}`)
          await pg.sql(`GRANT SELECT ON ALL TABLES IN SCHEMA ${pg.schema} TO ${role}`)
        }
      })
      afterAll(async () => {
        if (pg === undefined) return
        await pg.sql(`DROP SCHEMA ${pg.schema} CASCADE`)
        for (const role of [first, second]) await pg.sql(`DROP ROLE IF EXISTS ${role}`)
        await pg.drop()
      })

      it('the refused login of the retired role reads the secret again and the retry logs in as the new one', async () => {
        const store = new FakeRotatingSecretStore(url(first))
        const fn = await functionsReading(`type: postgres, table: ${pg.schema}.items`, store)
        expect(await fn.extract()).toMatchObject({ complete: true, rows: 2 })

        store.value = url(second)
        await pg.sql(`ALTER ROLE ${first} NOLOGIN`)
        const refused = await fn.failedExtract()
        expect(refused.name).toBe('RetryableError')
        expect(refused.message).toMatch(
          new RegExp(`authentication failed for user ${first}.*had been rotated`),
        )
        expect(await fn.extract()).toMatchObject({ complete: true, rows: 2 })
        expect(store.reads).toBe(2)
      })
    },
  )
})

describe('the BigQuery key rotated while the container keeps the old one', () => {
  const KEY_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:dimsync/bigquery-AbCdEf'
  const key = (id: string) =>
    JSON.stringify({
      type: 'service_account',
      client_email: `loader-${id}@project.iam.gserviceaccount.com`,
      private_key: `placeholder-not-a-key-${id}`, // only its presence is checked; the login is refused by the test
    })

  it('reads the key again after a refused login: a new key reopens the warehouse with it, the same key says so', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dimsync-bq-'))
    await writeFile(
      join(dir, 'dimsync.yaml'),
      [
        'version: 1',
        'warehouse: { type: bigquery, project: my-project-123, dataset: dims, location: EU }',
        'tables:',
        '  - name: items',
        '    source: { type: postgres, url_env: DB_URL, table: public.items }',
        '    key: id',
        '',
      ].join('\n'),
    )
    const store = { value: key('first'), reads: 0 }
    const deps = await buildAwsDeps(
      {
        [AWS_ENV.configPath]: join(dir, 'dimsync.yaml'),
        [AWS_ENV.stagingBucket]: 'unused',
        [AWS_ENV.stateTable]: 'unused',
        [AWS_ENV.warehouse]: 'bigquery',
        [AWS_ENV.bigQuerySecretArn]: KEY_ARN,
        DB_URL: 'postgres://127.0.0.1/unused',
      },
      {
        getSecret: async (arn) => {
          expect(arn).toBe(KEY_ARN)
          store.reads++
          return store.value
        },
      },
    )
    try {
      const table = deps.table('items')
      const opened = await deps.warehouse()
      expect(store.reads).toBe(1)
      expect(await deps.refreshSecret('merge', table)).toEqual({ secret: KEY_ARN, rotated: false })
      expect(await deps.warehouse()).toBe(opened)

      store.value = key('second')
      expect(await deps.refreshSecret('merge', table)).toEqual({ secret: KEY_ARN, rotated: true })
      const reopened = await deps.warehouse()
      expect(reopened).not.toBe(opened)
      expect(store.reads).toBe(4)
      // The source's URL is no secret here: nothing to read again for the extract.
      expect(await deps.refreshSecret('extract', table)).toBeUndefined()
    } finally {
      await deps.close()
    }
  })
})
