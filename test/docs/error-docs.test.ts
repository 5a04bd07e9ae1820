import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

import { AwsServiceError } from '../../lib/adapters/aws/aws-errors.ts'
import { ERROR_DOCS, errorDocs, withDocs } from '../../lib/core/error-docs.ts'
import * as errors from '../../lib/core/errors.ts'
import { fileAnchors, headingAnchors } from '../support/markdown-anchors.ts'
import { cliEnvironment } from '../support/cli-process.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const CLI = join(ROOT, 'bin', 'dimsync.mjs')

/** Every error class a user can meet: the hierarchy of lib/core/errors.ts and the AWS boundary's. */
const errorClasses = [
  ...Object.values(errors).filter(
    (value): value is typeof errors.DimsyncError =>
      typeof value === 'function' && value.prototype instanceof errors.DimsyncError,
  ),
  AwsServiceError,
]

describe('every error points to the section of the docs that explains it', () => {
  it('each error class has a docs entry, and each entry names a class', () => {
    const classNames = errorClasses.map((c) => c.name).sort()
    expect(classNames.length).toBeGreaterThanOrEqual(14)
    expect(Object.keys(ERROR_DOCS).sort()).toEqual(classNames)
  })

  it.each(Object.entries(ERROR_DOCS))('%s: %s is a heading of its page', (_name, target) => {
    const [page, anchor] = target.split('#') as [string, string]
    expect(existsSync(join(ROOT, page)), page).toBe(true)
    expect([...fileAnchors(join(ROOT, page))]).toContain(anchor)
  })

  it('an error is told by its class, the most specific documented one first', () => {
    const refused = new errors.BatchRejectedError('customers', 'b1', 'table customers: key 7 twice')
    const outOfOrder = new errors.OutOfOrderBatchError('customers', 'b1', 'older')
    const guard = new errors.MassDeleteRefusedError('customers', 'b1', 'too many deletes')
    expect(errorDocs(refused)).toBe(ERROR_DOCS.BatchRejectedError)
    expect(outOfOrder.name).toBe('BatchRejectedError')
    expect(errorDocs(outOfOrder)).toBe(ERROR_DOCS.OutOfOrderBatchError)
    expect(errorDocs(guard)).toBe(ERROR_DOCS.MassDeleteRefusedError)
    expect(errorDocs(new Error('driver failed'))).toBeUndefined()
    expect(errorDocs('text')).toBeUndefined()
    expect(withDocs('table customers: key 7 twice', refused)).toBe(
      'table customers: key 7 twice (see docs/errors.md#a-batch-is-refused)',
    )
    expect(withDocs('boom', new Error('boom'))).toBe('boom')
  })
})

describe('links between the docs pages', () => {
  const pages = [
    join(ROOT, 'README.md'),
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join(ROOT, 'docs', f)),
  ]
  it.each(pages.map((p) => [p.slice(ROOT.length + 1), p]))(
    '%s: every link to a page of the repo resolves',
    (_n, page) => {
      const text = readFileSync(page, 'utf8')
      const broken: string[] = []
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue
        const [file, anchor] = target!.split('#') as [string, string | undefined]
        const path = file === '' ? page : join(dirname(page), file)
        if (!existsSync(path)) broken.push(`${target} (no file)`)
        else if (
          anchor !== undefined &&
          path.endsWith('.md') &&
          !headingAnchors(readFileSync(path, 'utf8')).has(anchor)
        )
          broken.push(`${target} (no heading)`)
      }
      expect(broken).toEqual([])
    },
  )
})

describe('the CLI ends a refusal with its docs section', () => {
  let work: string | undefined
  afterEach(() => {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('a batch with a duplicate key: one line naming the key, then the section', () => {
    work = mkdtempSync(join(tmpdir(), 'dimsync-error-docs-'))
    writeFileSync(
      join(work, 'dimsync.yaml'),
      'version: 1\ntables:\n  - name: customers\n    source: { type: file, path: customers.csv }\n    key: customer_id\n',
    )
    writeFileSync(join(work, 'customers.csv'), 'customer_id,region\n101,South\n101,North\n')
    const r = spawnSync(process.execPath, [CLI, 'run'], {
      cwd: work,
      encoding: 'utf8',
      env: cliEnvironment(),
    })
    expect(r.status).toBe(1)
    const refusal = r.stderr.split('\n').find((l) => l.startsWith('dimsync:') && l.includes('101'))
    expect(refusal).toMatch(/^dimsync: .*customers.*\(see docs\/errors\.md#a-batch-is-refused\)$/)
  })

  it('a config error names its section too', () => {
    work = mkdtempSync(join(tmpdir(), 'dimsync-error-docs-'))
    writeFileSync(join(work, 'dimsync.yaml'), 'tables: []\n')
    const r = spawnSync(process.execPath, [CLI, 'validate'], { cwd: work, encoding: 'utf8' })
    expect(r.status).not.toBe(0)
    expect(r.stderr.trim()).toMatch(/version.*\(see docs\/errors\.md#the-config-is-invalid\)$/)
  })
})
