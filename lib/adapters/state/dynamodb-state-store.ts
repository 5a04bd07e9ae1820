import {
  CreateTableCommand,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  waitUntilTableExists,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb'

import { STATE_PARTITIONS, STATE_TABLE_KEYS } from '../../core/state-table.ts'
import { WatermarkConflictError } from '../../core/errors.ts'
import { isAwsError, wrapAwsError } from '../aws/aws-errors.ts'
import type { Watermark } from '../../core/batch.ts'
import { DimsyncError } from '../../core/errors.ts'
import {
  assertLeaseHeld,
  leaseLostError,
  handedOverLease,
  leaseRefusal,
  renewedLease,
  runOfOwner,
  takenLease,
  type Lease,
  type StoredLease,
} from '../../core/lease.ts'
import type { RunRecord } from '../../core/run-record.ts'
import { parseSourceTypes, type SourceTypes } from '../../core/source-types.ts'
import type { StateStore } from '../../ports/state-store.ts'
import { assertSafeId, instantSortKey } from '../staging/local-files.ts'
import { canonicalJson, compareWatermarks } from '../../core/watermark.ts'

export interface DynamoDbStateStoreOptions {
  readonly client: DynamoDBClient
  readonly tableName: string
  /** Run records (and their index items) expire this many days after they were written. Default 90. */
  readonly runTtlDays?: number
  /** Clock for TTL values only (lease decisions always use the `now` passed by the caller). */
  readonly clock?: () => Date
}

/**
 * The single-table layout (partition key `pk`, sort key `sk`, both strings; TTL attribute `expiresAt`, epoch
 * seconds: `STATE_TABLE_KEYS`, shared with the CDK stack).
 *
 * | pk                | sk                               | item                                                      |
 * |-------------------|----------------------------------|-----------------------------------------------------------|
 * | `TABLE#<table>`   | `WATERMARK`                      | `watermark` (canonical JSON), `updatedAt`                  |
 * | `TABLE#<table>`   | `SOURCE_TYPES`                   | `types` (JSON of the SourceTypes), `updatedAt`            |
 * | `TABLE#<table>`   | `LEASE`                          | `token` (N, only grows), `owner`, `acquiredAt`, `leaseExpiresAt`, `leaseExpiresAtMs` (absent when released) |
 * | `RUNS#<table>`    | `RUN#<startedAt sort key>#<runId>` | `run` (JSON of the RunRecord), `runId`, `status`, `expiresAt` (TTL) |
 * | `RUNS#<table>`    | `RUNID#<runId>`                  | `runSk` (where the record is), `expiresAt` (TTL)          |
 *
 * Every rule is one conditional single-item write (no transactions): the watermark is a compare-and-set on its
 * canonical JSON that also refuses to move backwards; the lease is an UpdateItem whose `ADD token :one` raises
 * the fencing token on every acquisition and whose release REMOVEs the owner but keeps the item, so the token
 * never restarts. Watermark and lease items never expire; run records do (TTL).
 */
const WATERMARK_SK = 'WATERMARK'
const LEASE_SK = 'LEASE'
const SOURCE_TYPES_SK = 'SOURCE_TYPES'
const RUN_PREFIX = 'RUN#'
const RUNID_PREFIX = 'RUNID#'

/**
 * Per-table watermarks, fenced leases and run records in one DynamoDB table (layout: `STATE_TABLE_KEYS`).
 * Safe across processes and machines: every decision is a single conditional write evaluated by DynamoDB.
 */
export class DynamoDbStateStore implements StateStore {
  readonly #client: DynamoDBClient
  readonly #tableName: string
  readonly #runTtlSeconds: number
  readonly #clock: () => Date

  constructor(options: DynamoDbStateStoreOptions) {
    this.#client = options.client
    this.#tableName = options.tableName
    this.#runTtlSeconds = Math.round((options.runTtlDays ?? 90) * 86_400)
    this.#clock = options.clock ?? (() => new Date())
  }

  /** `dynamodb://<table>`, for messages and logs. */
  get location(): string {
    return `dynamodb://${this.#tableName}`
  }

  /** The table's committed watermark (strongly consistent read), or undefined before the first commit. */
  async getWatermark(table: string): Promise<Watermark | undefined> {
    const item = await this.#get(tableKey(table), WATERMARK_SK, `table ${table}: reading the watermark`)
    const text = item?.watermark?.S
    if (text === undefined) return undefined
    try {
      return JSON.parse(text) as Watermark
    } catch (error) {
      throw new DimsyncError(
        `table ${table}: the stored watermark in ${this.location} is not JSON: ${text}`,
        {
          cause: error,
        },
      )
    }
  }

  /**
   * Stores `next` only if the stored watermark still equals `expected` (deep equality via canonical JSON;
   * undefined: none stored yet) and `next` is not behind `expected`. Otherwise throws `WatermarkConflictError`
   * naming the table and both watermarks; nothing is written. Finding `next` itself stored is success: a retried
   * attempt met the write of one whose answer was lost.
   */
  async commitWatermark(table: string, next: Watermark, expected: Watermark | undefined): Promise<void> {
    if (expected !== undefined && compareWatermarks(next, expected) < 0) {
      throw new WatermarkConflictError(
        table,
        `table ${table}: refusing to move the watermark backwards from ${canonicalJson(expected)} to ${canonicalJson(next)}`,
      )
    }
    const names = { '#w': 'watermark' }
    const condition =
      expected === undefined
        ? { ConditionExpression: 'attribute_not_exists(#w)' }
        : {
            ConditionExpression: '#w = :expected',
            ExpressionAttributeValues: { ':expected': { S: canonicalJson(expected) } },
          }
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: key(tableKey(table), WATERMARK_SK),
          UpdateExpression: 'SET #w = :next, updatedAt = :at',
          ...condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: {
            ...(condition.ExpressionAttributeValues ?? {}),
            ':next': { S: canonicalJson(next) },
            ':at': { S: this.#clock().toISOString() },
          },
        }),
      )
    } catch (error) {
      if (!isAwsError(error, 'ConditionalCheckFailedException')) {
        throw wrapAwsError('dynamodb', `table ${table}: committing the watermark in ${this.location}`, error)
      }
      const found = await this.getWatermark(table)
      // The SDK sent the write again after an attempt that was applied but lost its answer (a dropped
      // connection): the stored watermark is ours, `next` (a batch id is never reused), not another run's.
      if (found !== undefined && canonicalJson(found) === canonicalJson(next)) return
      throw new WatermarkConflictError(
        table,
        `table ${table}: watermark changed since it was read ` +
          `(expected ${describe(expected)}, found ${describe(found)})`,
      )
    }
  }

  /**
   * Sets (or with undefined removes) the watermark item if its canonical JSON still equals `expected`, backwards
   * too: one conditional write. Otherwise `WatermarkConflictError`; nothing is written.
   */
  async resetWatermark(
    table: string,
    next: Watermark | undefined,
    expected: Watermark | undefined,
  ): Promise<void> {
    const names = { '#w': 'watermark' }
    const condition =
      expected === undefined
        ? { ConditionExpression: 'attribute_not_exists(#w)' }
        : {
            ConditionExpression: '#w = :expected',
            ExpressionAttributeValues: { ':expected': { S: canonicalJson(expected) } },
          }
    try {
      if (next === undefined)
        await this.#client.send(
          new DeleteItemCommand({
            TableName: this.#tableName,
            Key: key(tableKey(table), WATERMARK_SK),
            ...condition,
            ExpressionAttributeNames: names,
          }),
        )
      else
        await this.#client.send(
          new UpdateItemCommand({
            TableName: this.#tableName,
            Key: key(tableKey(table), WATERMARK_SK),
            UpdateExpression: 'SET #w = :next, updatedAt = :at',
            ...condition,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: {
              ...(condition.ExpressionAttributeValues ?? {}),
              ':next': { S: canonicalJson(next) },
              ':at': { S: this.#clock().toISOString() },
            },
          }),
        )
    } catch (error) {
      if (!isAwsError(error, 'ConditionalCheckFailedException')) {
        throw wrapAwsError('dynamodb', `table ${table}: setting the watermark in ${this.location}`, error)
      }
      const found = await this.getWatermark(table)
      // The SDK sent the write again after an attempt that was applied but lost its answer (a dropped
      // connection): the stored watermark is ours, `next` (a batch id is never reused), not another run's.
      if (found !== undefined && canonicalJson(found) === canonicalJson(next)) return
      throw new WatermarkConflictError(
        table,
        `table ${table}: watermark changed since it was read ` +
          `(expected ${describe(expected)}, found ${describe(found)})`,
      )
    }
  }

  /**
   * Takes the table's lease for `ttlMs` from `now` with one conditional UpdateItem: granted when nobody holds
   * it, when the holder's lease expired (`leaseExpiresAtMs <= now`), to the same owner again, or to a step of
   * the run it was handed over to (`#owner = :run`); `ADD token :one`
   * gives every grant a higher fencing token. Otherwise `LockHeldError` with the holder and its `acquiredAt`.
   */
  async acquireLease(table: string, owner: string, ttlMs: number, now: Date): Promise<Lease> {
    // The condition below is the acquire rule of lib/core/lease.ts (`leaseRefusal`), evaluated by DynamoDB, which
    // also adds one to the token; the lease taken is then the rule's, from the values before the update.
    const taking = takenLease(table, undefined, owner, ttlMs, now)
    // A lease released between our failed write and the read that names its holder: try again (bounded).
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const response = await this.#client.send(
          new UpdateItemCommand({
            TableName: this.#tableName,
            Key: key(tableKey(table), LEASE_SK),
            UpdateExpression:
              'SET #owner = :owner, acquiredAt = :now, leaseExpiresAt = :exp, leaseExpiresAtMs = :expMs ADD #token :one',
            ConditionExpression:
              'attribute_not_exists(#owner) OR leaseExpiresAtMs <= :nowMs OR #owner = :owner OR #owner = :run',
            ExpressionAttributeNames: { '#owner': 'owner', '#token': 'token' },
            ExpressionAttributeValues: {
              ':owner': { S: owner },
              ':run': { S: runOfOwner(owner) },
              ':now': { S: taking.acquiredAt },
              ':exp': { S: taking.expiresAt },
              ':expMs': { N: String(Date.parse(taking.expiresAt)) },
              ':nowMs': { N: String(now.getTime()) },
              ':one': { N: '1' },
            },
            // The values before this update: who held the table (an unreleased lease) and the token before ours.
            ReturnValues: 'UPDATED_OLD',
          }),
        )
        const before = response.Attributes
        const stored =
          before?.token === undefined ? undefined : { token: Number(before.token.N), owner: before.owner?.S }
        if (stored !== undefined && !Number.isSafeInteger(stored.token)) {
          throw new DimsyncError(`table ${table}: lease item in ${this.location} has no integer token`)
        }
        return takenLease(table, stored, owner, ttlMs, now)
      } catch (error) {
        if (!isAwsError(error, 'ConditionalCheckFailedException')) {
          throw wrapAwsError('dynamodb', `table ${table}: taking the lease in ${this.location}`, error)
        }
      }
      const refusal = leaseRefusal(table, await this.#readLease(table), owner, now)
      if (refusal !== undefined) throw refusal
    }
    throw new DimsyncError(
      `table ${table}: the lease in ${this.location} changed hands three times in a row; try again`,
    )
  }

  /**
   * Extends `lease` to `now + ttlMs` if it is still the stored one (same owner and token), also after it expired
   * as long as nobody took it over. Otherwise `LeaseLostError` naming the table and the new holder.
   */
  async renewLease(lease: Lease, ttlMs: number, now: Date): Promise<Lease> {
    const renewed = renewedLease(lease, ttlMs, now)
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: key(tableKey(lease.table), LEASE_SK),
          UpdateExpression: 'SET leaseExpiresAt = :exp, leaseExpiresAtMs = :expMs',
          ConditionExpression: '#owner = :owner AND #token = :token',
          ExpressionAttributeNames: { '#owner': 'owner', '#token': 'token' },
          ExpressionAttributeValues: {
            ':owner': { S: lease.owner },
            ':token': { N: String(lease.token) },
            ':exp': { S: renewed.expiresAt },
            ':expMs': { N: String(Date.parse(renewed.expiresAt)) },
          },
        }),
      )
    } catch (error) {
      if (!isAwsError(error, 'ConditionalCheckFailedException')) {
        throw wrapAwsError('dynamodb', `table ${lease.table}: renewing the lease in ${this.location}`, error)
      }
      throw leaseLostError(lease, await this.#readLease(lease.table))
    }
    return renewed
  }

  /**
   * Hands `lease` over to its run until `now + ttlMs` (owner and expiry rewritten, token kept) if it is still the
   * stored one (same owner and token); otherwise `LeaseLostError` naming the new holder.
   */
  async handOverLease(lease: Lease, ttlMs: number, now: Date): Promise<Lease> {
    const handedOver = handedOverLease(lease, ttlMs, now)
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: key(tableKey(lease.table), LEASE_SK),
          UpdateExpression: 'SET #owner = :run, leaseExpiresAt = :exp, leaseExpiresAtMs = :expMs',
          ConditionExpression: '#owner = :owner AND #token = :token',
          ExpressionAttributeNames: { '#owner': 'owner', '#token': 'token' },
          ExpressionAttributeValues: {
            ':owner': { S: lease.owner },
            ':token': { N: String(lease.token) },
            ':run': { S: handedOver.owner },
            ':exp': { S: handedOver.expiresAt },
            ':expMs': { N: String(Date.parse(handedOver.expiresAt)) },
          },
        }),
      )
    } catch (error) {
      if (!isAwsError(error, 'ConditionalCheckFailedException')) {
        throw wrapAwsError(
          'dynamodb',
          `table ${lease.table}: handing the lease over in ${this.location}`,
          error,
        )
      }
      throw leaseLostError(lease, await this.#readLease(lease.table))
    }
    return handedOver
  }

  /**
   * Throws `LeaseLostError` unless `lease` is the stored lease (same owner and fencing token, strongly consistent
   * read) and has not expired at `now`. Called inside the merge transaction just before COMMIT.
   */
  async assertLeaseHeld(lease: Lease, now: Date): Promise<void> {
    assertLeaseHeld(lease, await this.#readLease(lease.table), now)
  }

  /** Releases `lease` if it is still the stored one: REMOVEs the owner and expiry, keeps the token. Else no-op. */
  async releaseLease(lease: Lease): Promise<void> {
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: key(tableKey(lease.table), LEASE_SK),
          UpdateExpression: 'REMOVE #owner, acquiredAt, leaseExpiresAt, leaseExpiresAtMs',
          ConditionExpression: '#owner = :owner AND #token = :token',
          ExpressionAttributeNames: { '#owner': 'owner', '#token': 'token' },
          ExpressionAttributeValues: { ':owner': { S: lease.owner }, ':token': { N: String(lease.token) } },
        }),
      )
    } catch (error) {
      if (isAwsError(error, 'ConditionalCheckFailedException')) return
      throw wrapAwsError('dynamodb', `table ${lease.table}: releasing the lease in ${this.location}`, error)
    }
  }

  /**
   * Inserts or replaces (by `runId`) the record of one run, with a TTL of `runTtlDays`. The record's sort key
   * starts with its `startedAt`, so a per-table Query returns runs newest first; a `RUNID#` index item finds
   * an earlier record of the same run written with another `startedAt`, which is then deleted.
   */
  async recordRun(run: RunRecord): Promise<void> {
    const startKey = instantSortKey(run.startedAt)
    if (startKey === undefined) {
      throw new DimsyncError(
        `table ${run.table}: run ${run.runId}: startedAt ${JSON.stringify(run.startedAt)} is not an ISO instant`,
      )
    }
    const pk = runsKey(run.table)
    const sk = `${RUN_PREFIX}${startKey}#${run.runId}`
    const expiresAt = { N: String(Math.floor(this.#clock().getTime() / 1000) + this.#runTtlSeconds) }
    const what = `table ${run.table}: recording run ${run.runId} in ${this.location}`
    const previous = (await this.#get(pk, `${RUNID_PREFIX}${run.runId}`, what))?.runSk?.S
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#tableName,
          Item: {
            ...key(pk, sk),
            runId: { S: run.runId },
            status: { S: run.status },
            run: { S: JSON.stringify(run) },
            [STATE_TABLE_KEYS.ttl]: expiresAt,
          },
        }),
      )
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#tableName,
          Item: {
            ...key(pk, `${RUNID_PREFIX}${run.runId}`),
            runSk: { S: sk },
            [STATE_TABLE_KEYS.ttl]: expiresAt,
          },
        }),
      )
      if (previous !== undefined && previous !== sk) {
        await this.#client.send(new DeleteItemCommand({ TableName: this.#tableName, Key: key(pk, previous) }))
      }
    } catch (error) {
      throw wrapAwsError('dynamodb', what, error)
    }
  }

  /** The table's run records, most recent `startedAt` first, at most `limit` (one Query, paginated). */
  async listRuns(table: string, limit: number): Promise<readonly RunRecord[]> {
    const runs: RunRecord[] = []
    const seen = new Set<string>()
    let start: Record<string, AttributeValue> | undefined
    if (limit <= 0) return runs
    do {
      let page
      try {
        page = await this.#client.send(
          new QueryCommand({
            TableName: this.#tableName,
            KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :run)',
            ExpressionAttributeNames: {
              '#pk': STATE_TABLE_KEYS.partitionKey,
              '#sk': STATE_TABLE_KEYS.sortKey,
            },
            ExpressionAttributeValues: { ':pk': { S: runsKey(table) }, ':run': { S: RUN_PREFIX } },
            ScanIndexForward: false,
            ConsistentRead: true,
            ExclusiveStartKey: start,
            Limit: Math.min(100, limit + 5),
          }),
        )
      } catch (error) {
        throw wrapAwsError('dynamodb', `table ${table}: listing runs in ${this.location}`, error)
      }
      for (const item of page.Items ?? []) {
        const text = item.run?.S
        if (text === undefined) continue
        const run = JSON.parse(text) as RunRecord
        // A crash inside recordRun can leave the older record of a re-dated run: the newest one wins.
        if (seen.has(run.runId)) continue
        seen.add(run.runId)
        runs.push(run)
        if (runs.length >= limit) return runs
      }
      start = page.LastEvaluatedKey
    } while (start !== undefined)
    return runs
  }

  async #readLease(table: string): Promise<StoredLease | undefined> {
    const item = await this.#get(tableKey(table), LEASE_SK, `table ${table}: reading the lease`)
    if (item === undefined) return undefined
    const token = Number(item.token?.N)
    if (!Number.isSafeInteger(token)) {
      throw new DimsyncError(`table ${table}: lease item in ${this.location} is damaged (no integer token)`)
    }
    return {
      token,
      owner: item.owner?.S,
      acquiredAt: item.acquiredAt?.S,
      expiresAt: item.leaseExpiresAt?.S,
    }
  }

  /** How the last merged batch read the table's CSV columns (strongly consistent read). */
  async getSourceTypes(table: string): Promise<SourceTypes | undefined> {
    const item = await this.#get(tableKey(table), SOURCE_TYPES_SK, `table ${table}: reading the source types`)
    const text = item?.types?.S
    if (text === undefined) return undefined
    let types: SourceTypes | undefined
    try {
      types = parseSourceTypes(JSON.parse(text))
    } catch {
      types = undefined
    }
    if (types === undefined) {
      throw new DimsyncError(
        `table ${table}: the source types stored in ${this.location} (pk ${tableKey(table)}, sk ${SOURCE_TYPES_SK}) ` +
          'are damaged; delete that item, and the next load chooses the CSV column types again from its values',
      )
    }
    return types
  }

  async recordSourceTypes(table: string, types: SourceTypes): Promise<void> {
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#tableName,
          Item: {
            ...key(tableKey(table), SOURCE_TYPES_SK),
            types: { S: JSON.stringify(types) },
            updatedAt: { S: this.#clock().toISOString() },
          },
        }),
      )
    } catch (error) {
      throw wrapAwsError('dynamodb', `table ${table}: recording the source types in ${this.location}`, error)
    }
  }

  async #get(pk: string, sk: string, what: string): Promise<Record<string, AttributeValue> | undefined> {
    try {
      const response = await this.#client.send(
        new GetItemCommand({ TableName: this.#tableName, Key: key(pk, sk), ConsistentRead: true }),
      )
      return response.Item
    } catch (error) {
      throw wrapAwsError('dynamodb', `${what} in ${this.location}`, error)
    }
  }
}

/**
 * Creates a state table with the dimsync layout (on-demand billing) and waits until it is ACTIVE: until then
 * DynamoDB (and dynalite) answer reads and writes of it with ResourceNotFoundException. For tests, local setups and
 * LocalStack; deployments create it with the CDK stack (which also enables TTL on `STATE_TABLE_KEYS.ttl`).
 */
export async function createStateTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: [
          { AttributeName: STATE_TABLE_KEYS.partitionKey, AttributeType: 'S' },
          { AttributeName: STATE_TABLE_KEYS.sortKey, AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: STATE_TABLE_KEYS.partitionKey, KeyType: 'HASH' },
          { AttributeName: STATE_TABLE_KEYS.sortKey, KeyType: 'RANGE' },
        ],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    )
    await waitUntilTableExists(
      { client, minDelay: 1, maxDelay: 2, maxWaitTime: 120 },
      { TableName: tableName },
    )
  } catch (error) {
    throw wrapAwsError('dynamodb', `creating state table ${tableName}`, error)
  }
}

function tableKey(table: string): string {
  assertSafeId('table', table)
  return STATE_PARTITIONS.table(table)
}

function runsKey(table: string): string {
  assertSafeId('table', table)
  return STATE_PARTITIONS.runs(table)
}

function key(pk: string, sk: string): Record<string, AttributeValue> {
  return { [STATE_TABLE_KEYS.partitionKey]: { S: pk }, [STATE_TABLE_KEYS.sortKey]: { S: sk } }
}

function describe(value: Watermark | undefined): string {
  return value === undefined ? 'none' : canonicalJson(value)
}
