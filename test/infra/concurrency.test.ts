import { Match } from 'aws-cdk-lib/assertions'
import { describe, expect, it } from 'vitest'
import { AWS_ENV } from '../../lib/runtime/aws-env.ts'
import { definitionFromTemplate } from '../support/step-functions/jsonata-state-machine.ts'
import { deploymentYaml, loaderFunctionsOf, synthStack } from './support/synth-stack.ts'

describe('reserved concurrency', () => {
  it('caps each extract and merge function at what the config reserves (per size class)', async () => {
    const { template, violations } = await synthStack(
      deploymentYaml({ aws: '  reserved_concurrency: { extract: 2, merge: 1 }' }),
    )
    expect(violations).toEqual([])
    expect(Object.keys(loaderFunctionsOf(template))).toHaveLength(2)
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('^dimsync extract'),
      ReservedConcurrentExecutions: 2,
    })
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('^dimsync merge'),
      ReservedConcurrentExecutions: 1,
    })
  })

  it('reserves nothing by default', async () => {
    const { template } = await synthStack(deploymentYaml())
    template.resourcePropertiesCountIs(
      'AWS::Lambda::Function',
      { ReservedConcurrentExecutions: Match.anyValue() },
      0,
    )
  })

  it('the lease a step hands over to its run outlasts the wait before its next step: the merge, or a merge retry', async () => {
    const { template } = await synthStack(deploymentYaml())
    const { States } = definitionFromTemplate(
      template.toJSON() as Parameters<typeof definitionFromTemplate>[0],
    )
    const retries = States.Merge!.Retry as {
      ErrorEquals: string[]
      IntervalSeconds: number
      MaxAttempts: number
      BackoffRate: number
      MaxDelaySeconds?: number
    }[]
    const waits = (r: (typeof retries)[number]) =>
      Array.from({ length: r.MaxAttempts }, (_, n) =>
        Math.min(r.IntervalSeconds * r.BackoffRate ** n, r.MaxDelaySeconds ?? Number.POSITIVE_INFINITY),
      )
    // Throttles wait one after another before the function runs; a failed attempt hands the lease over again.
    const throttled = retries.find((r) => r.ErrorEquals.includes('Lambda.TooManyRequestsException'))!
    const longestSingle = Math.max(...retries.flatMap(waits))
    const needed = waits(throttled).reduce((a, b) => a + b, 0) + longestSingle
    const functions = Object.values(loaderFunctionsOf(template))
    expect(functions).toHaveLength(2)
    for (const fn of functions) {
      const handOver = Number(fn.Properties.Environment!.Variables[AWS_ENV.handOverTtlSeconds])
      expect(handOver, String(fn.Properties.Description)).toBeGreaterThanOrEqual(needed)
    }
  })

  it('a throttled invocation waits for a free slot (minutes of backoff), not the seconds of a service hiccup', async () => {
    const { template } = await synthStack(deploymentYaml())
    const { States } = definitionFromTemplate(
      template.toJSON() as Parameters<typeof definitionFromTemplate>[0],
    )
    for (const step of ['Extract', 'Merge']) {
      const retry = States[step]!.Retry as {
        ErrorEquals: string[]
        IntervalSeconds: number
        MaxAttempts: number
        BackoffRate: number
        MaxDelaySeconds?: number
      }[]
      const throttled = retry.find((r) => r.ErrorEquals.includes('Lambda.TooManyRequestsException'))!
      expect(throttled.ErrorEquals).toEqual(['Lambda.TooManyRequestsException'])
      // Without jitter the waits add up to about 40 minutes: 10, 20, 40, 80, 160, then 300 s seven times.
      let total = 0
      for (let attempt = 0; attempt < throttled.MaxAttempts; attempt++)
        total += Math.min(
          throttled.IntervalSeconds * throttled.BackoffRate ** attempt,
          throttled.MaxDelaySeconds!,
        )
      expect(total).toBeGreaterThanOrEqual(35 * 60)
      expect(total).toBeLessThanOrEqual(45 * 60)
    }
  })
})
