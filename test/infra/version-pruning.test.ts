import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
// @ts-expect-error: plain JavaScript run by the Lambda runtime as it is (no types).
import { prune, respond, versionsToDelete } from '../../infra/prune-versions/index.mjs'
import { deploymentYaml, statementsOf, synthStack } from './support/synth-stack.ts'

const HOUR = 3_600_000
const NOW = Date.parse('2024-06-01T12:00:00Z')

/** Versions 1..n of a function, version k published `ageHours(k)` before NOW. */
function versions(n: number, ageHours: (k: number) => number) {
  return [
    { Version: '$LATEST', LastModified: new Date(NOW).toISOString() },
    ...Array.from({ length: n }, (_, i) => ({
      Version: String(i + 1),
      LastModified: new Date(NOW - ageHours(i + 1) * HOUR).toISOString(),
    })),
  ]
}

describe('pruning old function versions', () => {
  it('keeps the newest N and every version replaced less than 24 hours ago (an execution may still run on it)', () => {
    // Ten deploys a day apart: version 10 is the newest.
    const daily = versions(10, (k) => (10 - k) * 24)
    expect(versionsToDelete(daily, 3, NOW, 24 * HOUR)).toEqual(['7', '6', '5', '4', '3', '2', '1'])
    // Ten deploys an hour apart, the newest 20 hours ago: 8..10 are the newest 3; 6 and 7 were replaced by 7
    // and 8 less than a day ago.
    const hourly = versions(10, (k) => 10 - k + 20)
    expect(versionsToDelete(hourly, 3, NOW, 24 * HOUR)).toEqual(['5', '4', '3', '2', '1'])
    expect(
      versionsToDelete(
        versions(2, () => 100),
        3,
        NOW,
        24 * HOUR,
      ),
    ).toEqual([])
  })

  it('deletes on create and update, answers CloudFormation SUCCESS even when the Lambda API fails, and does nothing on delete', async () => {
    const answers: unknown[] = []
    const server = createServer((request, response) => {
      let body = ''
      request.on('data', (c: Buffer) => (body += c.toString()))
      request.on('end', () => {
        answers.push({ method: request.method, body: JSON.parse(body) })
        response.end()
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/answer`
    try {
      const event = (RequestType: string) => ({
        RequestType,
        ResponseURL: url,
        StackId: 'stack',
        RequestId: 'r1',
        LogicalResourceId: 'PruneVersions',
        ResourceProperties: { FunctionNames: ['extract', 'merge'], Keep: '2', MinSupersededHours: '24' },
      })
      const deleted: string[] = []
      const api = {
        listVersions: async () => versions(4, (k) => (4 - k) * 48),
        deleteVersion: async (name: string, version: string) => void deleted.push(`${name}:${version}`),
        now: () => NOW,
        respond,
      }
      expect(await prune(event('Update'), api)).toBe(
        'deleted 4 old version(s): extract:2, extract:1, merge:2, merge:1',
      )
      expect(deleted).toEqual(['extract:2', 'extract:1', 'merge:2', 'merge:1'])
      const failing = { ...api, listVersions: async () => Promise.reject(new Error('AccessDenied')) }
      expect(await prune(event('Create'), failing)).toMatch(/^pruning stopped.*AccessDenied/)
      deleted.length = 0
      await prune(event('Delete'), api)
      expect(deleted).toEqual([])
      expect(answers).toEqual([
        { method: 'PUT', body: expect.objectContaining({ Status: 'SUCCESS', RequestId: 'r1' }) },
        {
          method: 'PUT',
          body: expect.objectContaining({ Status: 'SUCCESS', Reason: expect.stringMatching(/AccessDenied/) }),
        },
        {
          method: 'PUT',
          body: expect.objectContaining({
            Status: 'SUCCESS',
            PhysicalResourceId: 'PruneVersions-prune-versions',
          }),
        },
      ])
    } finally {
      server.close()
    }
  })

  it('runs on every deploy for the loader functions, keeping aws.function_versions_kept, with a role that may delete their versions only', async () => {
    const { template, violations } = await synthStack(deploymentYaml({ aws: '  function_versions_kept: 4' }))
    expect(violations).toEqual([])
    const [resource] = Object.values(template.findResources('Custom::DimsyncPruneVersions')) as {
      Properties: { FunctionNames: unknown[]; Keep: number; MinSupersededHours: number; Versions: unknown[] }
    }[]
    expect(resource!.Properties).toMatchObject({ Keep: 4, MinSupersededHours: 24 })
    expect(resource!.Properties.FunctionNames).toHaveLength(2)
    // The versions this deploy published: a new one changes the properties, so the resource runs again.
    expect(JSON.stringify(resource!.Properties.Versions)).toMatch(/ExtractMedium\w*CurrentVersion/)
    const statements = statementsOf(template, 'PruneVersionsRole')
    const deletes = statements.find((s) => s.Action === 'lambda:DeleteFunction')!
    expect(JSON.stringify(deletes.Resource)).toMatch(/ExtractMedium.*:\*/)
    expect(JSON.stringify(statements)).not.toContain('"Resource":"*"')
    const defaults = await synthStack(deploymentYaml())
    expect(
      (
        Object.values(defaults.template.findResources('Custom::DimsyncPruneVersions'))[0] as {
          Properties: { Keep: number }
        }
      ).Properties.Keep,
    ).toBe(5)
  })
})
