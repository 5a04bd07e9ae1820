/**
 * Deletes old published versions of the loader's functions, on every deploy (a CloudFormation custom resource,
 * run on the Lambda runtime as it is: no bundling, the runtime's own AWS SDK). The state machine invokes the
 * version its execution started with, so a version is deleted only when it is not among the `Keep` newest and
 * the version that replaced it was published more than `MinSupersededHours` ago (the state machine's timeout: no
 * execution can still be running on it). Pruning is housekeeping: a failure is reported in the stack's events and
 * the function's log, and never fails the deploy.
 */
import { Buffer } from 'node:buffer'
import http from 'node:http'
import https from 'node:https'
import { URL } from 'node:url'

/**
 * The version numbers to delete, from ListVersionsByFunction's `Versions` (`$LATEST` ignored): all but the `keep`
 * newest, each only once the next newer version was published `minSupersededMs` before `now`.
 */
export function versionsToDelete(versions, keep, now, minSupersededMs) {
  const published = versions
    .filter((v) => v.Version !== '$LATEST')
    .map((v) => ({ version: Number(v.Version), at: Date.parse(v.LastModified) }))
    .sort((a, b) => b.version - a.version)
  const doomed = []
  for (let i = Math.max(1, keep); i < published.length; i++) {
    if (now - published[i - 1].at >= minSupersededMs) doomed.push(String(published[i].version))
  }
  return doomed
}

/** Prunes the functions of the event; answers CloudFormation SUCCESS in every case, saying what it did. */
export async function prune(event, deps) {
  const props = event.ResourceProperties
  let reason = 'nothing to do on delete'
  if (event.RequestType !== 'Delete') {
    const deleted = []
    try {
      for (const name of props.FunctionNames) {
        const versions = await deps.listVersions(name)
        const doomed = versionsToDelete(
          versions,
          Number(props.Keep),
          deps.now(),
          Number(props.MinSupersededHours) * 3_600_000,
        )
        for (const version of doomed) {
          await deps.deleteVersion(name, version)
          deleted.push(`${name}:${version}`)
        }
      }
      reason = `deleted ${deleted.length} old version(s)${deleted.length > 0 ? `: ${deleted.join(', ')}` : ''}`
    } catch (error) {
      reason = `pruning stopped, the remaining versions are kept until the next deploy: ${error?.message ?? error}`
      console.error(JSON.stringify({ message: 'pruning old function versions failed', error: String(error) }))
    }
    console.log(JSON.stringify({ message: reason }))
  }
  await deps.respond(event, {
    Status: 'SUCCESS',
    Reason: reason.slice(0, 3000),
    PhysicalResourceId: event.PhysicalResourceId ?? `${event.LogicalResourceId}-prune-versions`,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
  })
  return reason
}

/** PUTs the custom resource's answer to the pre-signed URL CloudFormation gave. */
export function respond(event, body) {
  const text = JSON.stringify(body)
  const url = new URL(event.ResponseURL)
  const client = url.protocol === 'http:' ? http : https
  return new Promise((resolve, reject) => {
    const request = client.request(
      url,
      { method: 'PUT', headers: { 'content-type': '', 'content-length': Buffer.byteLength(text) } },
      (response) => {
        response.resume()
        response.on('end', resolve)
      },
    )
    request.on('error', reject)
    request.end(text)
  })
}

/** The Lambda API of the runtime's AWS SDK. */
async function lambdaApi() {
  const { LambdaClient, ListVersionsByFunctionCommand, DeleteFunctionCommand } =
    await import('@aws-sdk/client-lambda')
  const client = new LambdaClient({})
  return {
    async listVersions(name) {
      const versions = []
      let marker
      do {
        const page = await client.send(
          new ListVersionsByFunctionCommand({ FunctionName: name, Marker: marker }),
        )
        versions.push(...(page.Versions ?? []))
        marker = page.NextMarker
      } while (marker)
      return versions
    },
    async deleteVersion(name, version) {
      await client.send(new DeleteFunctionCommand({ FunctionName: name, Qualifier: version }))
    },
  }
}

export async function handler(event) {
  let api
  try {
    api = await lambdaApi()
  } catch (error) {
    // Still answer CloudFormation (it would otherwise wait an hour for this resource).
    api = { listVersions: () => Promise.reject(error), deleteVersion: () => Promise.resolve() }
  }
  return await prune(event, { ...api, now: () => Date.now(), respond })
}
