import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach } from 'vitest'

const CLI = join(import.meta.dirname, '..', '..', 'bin', 'dimsync.mjs')

/** The real CLI run as a process in a fresh folder per test. */
export interface CliFolder {
  /** The running test's folder (its dimsync.yaml, data, staging, state and DuckDB file). */
  readonly work: string
  /** Runs `dimsync <args>` in `work` and waits for it. */
  dimsync(...args: string[]): { code: number | null; out: string; err: string }
}

/**
 * Registers vitest hooks that give each test an empty temporary folder (`setUp` may fill it) and remove it after;
 * call once at the top level of a test file.
 */
export function cliInTemporaryFolder(prefix: string, setUp?: (work: string) => void): CliFolder {
  let work: string | undefined
  beforeEach(() => {
    work = mkdtempSync(join(tmpdir(), prefix))
    setUp?.(work)
  })
  afterEach(() => {
    if (work !== undefined) rmSync(work, { recursive: true, force: true })
  })
  const folder = () => {
    if (work === undefined) throw new Error('the CLI folder exists only inside a test')
    return work
  }
  return {
    get work() {
      return folder()
    },
    dimsync(...args) {
      const r = spawnSync(process.execPath, [CLI, ...args], {
        cwd: folder(),
        encoding: 'utf8',
        env: { ...process.env, CI: '1' },
      })
      return { code: r.status, out: r.stdout, err: r.stderr }
    },
  }
}
