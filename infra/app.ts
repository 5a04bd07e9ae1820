/**
 * The CDK app: `npx cdk deploy -c config=dimsync.yaml` (default dimsync.yaml). An invalid config stops synth with
 * the line the CLI prints (`dimsync: <file>: <path>: <problem>; ...`) and exit code 1.
 */
import { DimsyncError } from '../lib/core/errors.ts'
import { buildApp } from './build-app.ts'

try {
  const { app } = await buildApp({})
  app.synth()
} catch (error) {
  if (!(error instanceof DimsyncError)) throw error
  process.stderr.write(`dimsync: ${error.message}\n`)
  process.exitCode = 1
}
