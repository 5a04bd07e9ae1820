/**
 * The YAML app's stack: one DimsyncLoader for the tables of a dimsync.yaml, and the stack outputs. The loader's
 * id is `Default`, which CDK leaves out of logical ids: the resources keep the ids they had when the stack held
 * them directly, so a stack deployed before keeps its bucket, state table and alarms.
 */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib'
import type { Construct } from 'constructs'
import type { ProjectSpec } from '../../lib/core/table-spec.ts'
import { DimsyncLoader, type DimsyncLoaderProps } from '../constructs/dimsync-loader.ts'

export interface DimsyncStackProps extends StackProps {
  readonly project: ProjectSpec
  /** Handler files; default functions/extract/handler.ts and functions/merge/handler.ts. */
  readonly handlerEntries?: DimsyncLoaderProps['handlerEntries']
}

export class DimsyncStack extends Stack {
  readonly loader: DimsyncLoader

  constructor(scope: Construct, id: string, props: DimsyncStackProps) {
    super(scope, id, props)
    this.loader = new DimsyncLoader(this, 'Default', {
      project: props.project,
      ...(props.handlerEntries !== undefined ? { handlerEntries: props.handlerEntries } : {}),
    })
    const { loader } = this
    new CfnOutput(this, 'StateMachineArn', { value: loader.orchestration.stateMachine.stateMachineArn })
    new CfnOutput(this, 'StagingBucketName', { value: loader.storage.bucket.bucketName })
    new CfnOutput(this, 'StateTableName', { value: loader.storage.stateTable.tableName })
    new CfnOutput(this, 'NotificationTopicArn', { value: loader.topic.topicArn })
  }

  get storage() {
    return this.loader.storage
  }
  get functions() {
    return this.loader.functions
  }
  get orchestration() {
    return this.loader.orchestration
  }
  get schedules() {
    return this.loader.schedules
  }
  get monitoring() {
    return this.loader.monitoring
  }
}
