import { describe, expect, it } from 'vitest'

import { s3SourceLocation } from '../../infra/constructs/loader-function.ts'
import { actionsOf, deploymentYaml, statementsOf, synthStack } from './support/synth-stack.ts'

describe('the extract function reads file sources on S3 with least privilege', () => {
  it('locates the prefix the extract lists: the key before its first glob segment, or the whole key', () => {
    expect(s3SourceLocation('s3://b/shop/orders/*.parquet')).toEqual({
      bucket: 'b',
      prefix: 'shop/orders/',
      exact: false,
    })
    expect(s3SourceLocation('s3://b/shop/**/2024-*/x.csv')).toEqual({
      bucket: 'b',
      prefix: 'shop/',
      exact: false,
    })
    expect(s3SourceLocation('s3://b/*.csv')).toEqual({ bucket: 'b', prefix: '', exact: false })
    expect(s3SourceLocation('s3://b/exports/customers.csv')).toEqual({
      bucket: 'b',
      prefix: 'exports/customers.csv',
      exact: true,
    })
    expect(s3SourceLocation('data/customers.csv')).toBeUndefined()
  })

  it('grants GetObject under each source prefix and ListBucket only for those prefixes; cdk-nag passes', async () => {
    const synthesized = await synthStack(deploymentYaml(), (built) => {
      built.stack.functions.Medium!.extract.grantSourceRead([
        's3://dms-output/shop/orders/*.parquet',
        's3://exports/customers.csv',
        'data/local.csv',
      ])
    })
    expect(synthesized.violations).toEqual([])
    const statements = statementsOf(synthesized.template, 'ExtractMediumRole')
    const gets = statements.filter(
      (s) => actionsOf(s).includes('s3:GetObject') && JSON.stringify(s).includes('dms-output'),
    )
    expect(gets).toEqual([
      {
        Action: 's3:GetObject',
        Effect: 'Allow',
        Resource: [
          { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::dms-output/shop/orders/*']] },
          { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::exports/customers.csv']] },
        ],
      },
    ])
    const lists = statements.filter(
      (s) => actionsOf(s).includes('s3:ListBucket') && !JSON.stringify(s).includes('staging'),
    )
    expect(lists).toEqual([
      {
        Action: 's3:ListBucket',
        Effect: 'Allow',
        Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::dms-output']] },
        Condition: { StringEquals: { 's3:prefix': ['shop/orders/'] } },
      },
      {
        Action: 's3:ListBucket',
        Effect: 'Allow',
        Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::exports']] },
        Condition: { StringEquals: { 's3:prefix': ['customers.csv'] } },
      },
    ])
    // The merge function reads no source.
    const merge = statementsOf(synthesized.template, 'MergeMediumRole')
    expect(JSON.stringify(merge)).not.toContain('dms-output')
  })

  it('a table whose file source is on S3 deploys: its extract function alone may read that prefix', async () => {
    const synthesized = await synthStack(
      deploymentYaml({
        tables: [
          '  - name: orders',
          "    source: { type: file, path: 's3://dms-output/shop/orders/*.parquet', files: new_only }",
          '    key: order_id',
          '    deletes: ignore',
        ].join('\n'),
      }),
    )
    expect(synthesized.violations).toEqual([])
    const gets = statementsOf(synthesized.template, 'ExtractMediumRole').filter(
      (s) => actionsOf(s).includes('s3:GetObject') && JSON.stringify(s).includes('dms-output'),
    )
    expect(gets).toEqual([
      {
        Action: 's3:GetObject',
        Effect: 'Allow',
        Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':s3:::dms-output/shop/orders/*']] },
      },
    ])
    expect(JSON.stringify(statementsOf(synthesized.template, 'MergeMediumRole'))).not.toContain('dms-output')
  })
})
