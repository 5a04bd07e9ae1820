import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach } from 'vitest'

import { withAllocatorSettings } from '../../lib/runtime/allocator-environment.mjs'

const ROOT = join(import.meta.dirname, '..', '..')
/** The launcher users run (the package's bin). */
export const CLI = join(ROOT, 'bin', 'dimsync.mjs')
/**
 * V8's code cache of the compiled CLI (NODE_COMPILE_CACHE, Node 22), shared by the tests' CLI processes: each
 * process then reads the CLI's and its packages' compiled code instead of parsing them again.
 */
const V8_CODE_CACHE = join(ROOT, 'node_modules', '.cache', 'dimsync-test-v8')

export interface CliResult {
  readonly code: number | null
  readonly out: string
  readonly err: string
}

/**
 * The environment of a test's CLI process: the test's own with CI=1 and `extra`, the allocator settings the
 * launcher would add (so it finds them set and does not start Node a second time: what the launcher does is
 * test/functions/cli-launcher.test.ts's and cli-startup.test.ts's, which run it without them) and V8's code cache.
 */
export function cliEnvironment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return withAllocatorSettings({ ...process.env, NODE_COMPILE_CACHE: V8_CODE_CACHE, CI: '1', ...extra })
}

/** Runs `dimsync <args>` in `cwd` with `cliEnvironment(env)` and waits for it. */
export function runDimsync(cwd: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): CliResult {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: 'utf8',
    env: cliEnvironment(env),
  })
  return { code: r.status, out: r.stdout, err: r.stderr }
}

/** The real CLI run as a process in a fresh folder per test. */
export interface CliFolder {
  /** The running test's folder (its dimsync.yaml, data, staging, state and DuckDB file). */
  readonly work: string
  /** Runs `dimsync <args>` in `work` and waits for it. */
  dimsync(...args: string[]): CliResult
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
    dimsync: (...args) => runDimsync(folder(), args),
  }
}
