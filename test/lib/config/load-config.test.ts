import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ConfigError } from '../../../lib/core/errors.ts'
import { loadProject } from '../../../lib/config/load-config.ts'

let dir: string

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'dimsync-config-'))
})

afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function rejection(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(ConfigError)
  return error as ConfigError
}

describe('loadProject', () => {
  it('reads a file and resolves paths against its folder', async () => {
    await mkdir(path.join(dir, 'conf'))
    const file = path.join(dir, 'conf', 'dimsync.yaml')
    await writeFile(
      file,
      'version: 1\nwarehouse: { path: wh.duckdb }\ntables:\n  - { name: c, source: { type: file, path: c.csv }, key: id }\n',
    )
    const project = await loadProject(file)
    expect(project.configPath).toBe(file)
    expect(project.baseDir).toBe(path.join(dir, 'conf'))
    expect(project.warehouse.type === 'duckdb' && project.warehouse.path).toBe(
      path.join(dir, 'conf', 'wh.duckdb'),
    )
    expect(project.staging.path).toBe(path.join(dir, 'conf', '.dimsync', 'staging'))
    expect(project.tables.map((t) => t.name)).toEqual(['c'])
  })

  it('says when the file does not exist', async () => {
    const file = path.join(dir, 'missing.yaml')
    const error = await rejection(loadProject(file))
    expect(error.file).toBe(file)
    expect(error.issues).toEqual([`config file not found (give another with --config)`])
    expect(error.message).toBe(`${file}: config file not found (give another with --config)`)
  })

  it('says when the path is a folder', async () => {
    const error = await rejection(loadProject(dir))
    expect(error.issues).toEqual([`config path is a folder, not a file`])
  })

  it('names the file, line and column of a YAML syntax error', async () => {
    const file = path.join(dir, 'dimsync.yaml')
    await writeFile(file, 'version: 1\ntables:\n  - name: a\n   key: b\n')
    const error = await rejection(loadProject(file))
    expect(error.file).toBe(file)
    expect(error.message).toBe(`${file}: 4:1: YAML syntax error: Sequence item without - indicator`)
  })

  it('reports validation issues against the absolute file name', async () => {
    const file = path.join(dir, 'dimsync.yaml')
    await writeFile(
      file,
      'version: 1\ntables:\n  - { name: c, source: { type: file, path: c.csv }, key: id, deletes: x }\n',
    )
    const error = await rejection(loadProject(path.relative(process.cwd(), file)))
    expect(error.file).toBe(file)
    expect(error.issues).toEqual([
      'tables[0].deletes: must be one of ignore, invalidate, new_record (got "x")',
    ])
  })
})
