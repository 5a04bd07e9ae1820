import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

import { snapshotProcessState } from './process-state-snapshot.ts'

describe('snapshotProcessState', () => {
  const home = process.cwd()
  let folder: string | undefined
  afterEach(() => {
    process.chdir(home)
    delete process.env.DIMSYNC_SNAPSHOT_ADDED
    delete process.env.DIMSYNC_SNAPSHOT_KEPT
    if (folder !== undefined) rmSync(folder, { recursive: true, force: true })
  })

  it('puts back variables added, changed and removed, and the working directory', () => {
    folder = realpathSync(mkdtempSync(join(tmpdir(), 'dimsync-process-state-')))
    process.env.DIMSYNC_SNAPSHOT_KEPT = 'before'
    const saved = snapshotProcessState()
    process.env.DIMSYNC_SNAPSHOT_ADDED = 'added'
    process.env.DIMSYNC_SNAPSHOT_KEPT = 'changed'
    const path = process.env.PATH
    delete process.env.PATH
    process.chdir(folder)

    saved.restore()

    expect(process.env.DIMSYNC_SNAPSHOT_ADDED).toBeUndefined()
    expect(process.env.DIMSYNC_SNAPSHOT_KEPT).toBe('before')
    expect(process.env.PATH).toBe(path)
    expect(process.cwd()).toBe(home)
  })
})
