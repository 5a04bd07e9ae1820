import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { buildApp } from '../../infra/build-app.ts'
import { parseProject } from '../../lib/config/index.ts'
import { markdownBlocks } from '../support/markdown-blocks.ts'
import { FIXTURE_HANDLER, NO_BUNDLING } from './support/synth-stack.ts'

/**
 * docs/aws.md as written: every dimsync.yaml block of the page is a config the CDK app deploys, synthesized as
 * it stands (no field added or changed), cdk-nag clean.
 */
const PAGE = path.join(import.meta.dirname, '..', '..', 'docs', 'aws.md')
const blocks = markdownBlocks('docs/aws.md', readFileSync(PAGE, 'utf8')).filter(
  (b) => b.lang === 'yaml' || b.lang === 'yml',
)

describe('every dimsync.yaml block of docs/aws.md synthesizes as written', () => {
  it('has option blocks to check', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(3)
  })

  it.each(blocks.map((b) => [`docs/aws.md:${b.line}`, b.text] as const))('%s', async (_where, text) => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'dimsync-docs-cdk-'))
    const { app } = await buildApp({
      project: parseProject(text, '/deploy/dimsync.yaml'),
      appProps: { outdir, context: NO_BUNDLING },
      handlerEntries: { extract: FIXTURE_HANDLER, merge: FIXTURE_HANDLER },
    })
    app.synth()
    const report = JSON.parse(readFileSync(path.join(outdir, 'validation-report.json'), 'utf8')) as {
      pluginReports: { violations: unknown[] }[]
    }
    expect(report.pluginReports.flatMap((r) => r.violations)).toEqual([])
  })
})
