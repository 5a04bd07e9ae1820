import { describe, expect, it } from 'vitest'
import { deploymentYaml, statementsOf, synthStack } from './support/synth-stack.ts'

/** A deployment in AWS China: every secret named by its aws-cn ARN (one complete, one without its suffix). */
const CHINA_YAML = deploymentYaml({
  secrets: { SHOP_DB_URL: 'arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:dimsync/shop-db-AbCdEf' },
  bigQuerySecret: 'arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:dimsync/bigquery',
})

/** Every string literal of a template (keys excluded), wherever it sits. */
function literals(value: unknown): string[] {
  if (typeof value === 'string') return [value]
  if (Array.isArray(value)) return value.flatMap(literals)
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(literals)
  return []
}

describe('a deployment in another partition (aws-cn)', () => {
  it('synthesizes with cdk-nag clean, no ARN of the aws partition, and grants on the aws-cn secrets', async () => {
    const { template, violations } = await synthStack(CHINA_YAML)
    expect(violations).toEqual([])
    const json = template.toJSON() as object
    // Service integration ARNs of the state machine too: they go through AWS::Partition.
    expect(literals(json).filter((s) => s.includes('arn:aws:'))).toEqual([])

    const extract = JSON.stringify(statementsOf(template, 'ExtractMediumRole'))
    expect(extract).toContain(
      'arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:dimsync/shop-db-AbCdEf',
    )
    const merge = JSON.stringify(statementsOf(template, 'MergeMediumRole'))
    expect(merge).toContain(
      'arn:aws-cn:secretsmanager:cn-north-1:123456789012:secret:dimsync/bigquery-??????',
    )
    const definition = JSON.stringify(
      Object.values(template.findResources('AWS::StepFunctions::StateMachine'))[0],
    )
    expect(definition).toContain('{"Ref":"AWS::Partition"},":states:::lambda:invoke')
  })
})
