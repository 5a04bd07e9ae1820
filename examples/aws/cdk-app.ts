// A team's own CDK app with the dimsync loader in it: the bucket, state table and topic the team already has.
import { App, Stack, Validations } from 'aws-cdk-lib'
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as kms from 'aws-cdk-lib/aws-kms'
import * as s3 from 'aws-cdk-lib/aws-s3'
import * as sns from 'aws-cdk-lib/aws-sns'
import { AwsSolutionsChecks } from 'cdk-nag'
import { DimsyncLoader } from '../../infra/index.ts'

const app = new App()
Validations.of(app).addPlugins(new AwsSolutionsChecks(app))
const stack = new Stack(app, 'DataPlatform')

new DimsyncLoader(stack, 'Dimsync', {
  // dimsync.yaml, written as TypeScript: the same keys, checked by the same rules.
  config: {
    version: 1,
    warehouse: { type: 'bigquery', project: 'my-gcp-project', dataset: 'dimsync', location: 'EU' },
    tables: [
      {
        name: 'customers',
        source: { type: 'postgres', url_env: 'SHOP_DB_URL', table: 'public.customers' },
        key: 'customer_id',
        schedule: 'rate(1 hour)',
      },
    ],
    aws: {
      secrets: { SHOP_DB_URL: 'dimsync/shop-db' },
      bigquery_secret: 'dimsync/bigquery',
      role_name_prefix: 'data-',
      tags: { team: 'data-platform' },
    },
  },
  existingBucket: s3.Bucket.fromBucketName(stack, 'Staging', 'data-platform-staging'),
  existingStateTable: dynamodb.Table.fromTableName(stack, 'State', 'data-platform-dimsync-state'),
  existingTopic: sns.Topic.fromTopicArn(stack, 'OnCall', 'arn:aws:sns:eu-west-1:123456789012:data-oncall'),
  existingTopicKey: kms.Key.fromKeyArn(
    stack,
    'OnCallKey',
    'arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d',
  ),
  permissionsBoundary: iam.ManagedPolicy.fromManagedPolicyName(stack, 'Boundary', 'data-platform-boundary'),
})

app.synth()
