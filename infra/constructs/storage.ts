/**
 * The staging bucket (Parquet batches between extract and merge) and the DynamoDB state table (watermarks,
 * leases, run records, applied batch ids). Both are private, encrypted and kept on stack deletion by default.
 */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib'
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb'
import type * as kms from 'aws-cdk-lib/aws-kms'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { Construct } from 'constructs'
import { STATE_TABLE_KEYS } from '../../lib/runtime/aws-env.ts'

export interface StorageProps {
  readonly removalPolicy: RemovalPolicy
  /** False when the loader stages in an existing bucket (default true). */
  readonly createBucket?: boolean
  /** False when the loader keeps its state in an existing table (default true). */
  readonly createStateTable?: boolean
  /** Customer-managed key of the bucket; default SSE-S3. */
  readonly encryptionKey?: kms.IKey
  /** Keep earlier object versions (they expire after NONCURRENT_DAYS). */
  readonly versioned?: boolean
}

/** How long a replaced or deleted staged object's earlier version is kept when the bucket is versioned. */
export const NONCURRENT_DAYS = 30

export class Storage extends Construct {
  readonly bucket?: s3.Bucket
  readonly stateTable?: dynamodb.Table

  constructor(scope: Construct, id: string, props: StorageProps) {
    super(scope, id)
    if (props.createBucket !== false) this.bucket = Storage.#bucket(this, props)
    if (props.createStateTable !== false) this.stateTable = Storage.#stateTable(this, props)
  }

  static #bucket(scope: Construct, props: StorageProps): s3.Bucket {
    const bucket = new s3.Bucket(scope, 'Staging', {
      ...(props.encryptionKey !== undefined
        ? { encryption: s3.BucketEncryption.KMS, encryptionKey: props.encryptionKey, bucketKeyEnabled: true }
        : { encryption: s3.BucketEncryption.S3_MANAGED }),
      ...(props.versioned === true ? { versioned: true } : {}),
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: props.removalPolicy,
      // No rule deletes staged batches by age: dimsync deletes a batch once merged or discarded, and the next
      // extract of its table removes an abandoned one (no manifest); what is left is a batch waiting for a rerun
      // or `dimsync discard`, which an expiry would break (parts gone, manifest left, or the reverse).
      lifecycleRules: [
        // An extract killed mid-upload leaves parts of a multipart upload that are billed but invisible.
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        ...(props.versioned === true
          ? [
              {
                id: 'expire-earlier-versions',
                noncurrentVersionExpiration: Duration.days(NONCURRENT_DAYS),
                expiredObjectDeleteMarker: true,
              },
            ]
          : []),
      ],
    })
    Validations.of(bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Staged batches are transient copies of source rows, written and read only by the two dimsync roles; ' +
        'access is audited with CloudTrail data events when needed, a second bucket of access logs adds cost, not control.',
    })
    return bucket
  }

  static #stateTable(scope: Construct, props: StorageProps): dynamodb.Table {
    return new dynamodb.Table(scope, 'State', {
      partitionKey: { name: STATE_TABLE_KEYS.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: STATE_TABLE_KEYS.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: STATE_TABLE_KEYS.ttl,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: props.removalPolicy === RemovalPolicy.RETAIN,
      removalPolicy: props.removalPolicy,
    })
  }
}
