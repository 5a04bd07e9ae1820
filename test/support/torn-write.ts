import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs'
import { join } from 'node:path'

/**
 * A write torn by SIGKILL at a chosen place of a chosen file (torn-write/torn-write.c), for tests of what a process
 * killed in the middle of writing a block leaves. Built once per checkout with the machine's C compiler.
 */
const SOURCE = join(import.meta.dirname, 'torn-write', 'torn-write.c')
// Named after its source: a checkout whose library was built from an older source builds the new one.
const LIBRARY = join(
  import.meta.dirname,
  '..',
  '..',
  'node_modules',
  '.cache',
  'dimsync-torn-write',
  `torn-write-${createHash('sha256').update(readFileSync(SOURCE)).digest('hex').slice(0, 12)}.so`,
)

/** The library's path, built if needed; undefined where there is no C compiler or the platform is not Linux. */
export function tornWriteLibrary(): string | undefined {
  if (process.platform !== 'linux') return undefined
  if (existsSync(LIBRARY)) return LIBRARY
  mkdirSync(join(LIBRARY, '..'), { recursive: true })
  // Built beside and renamed into place: two test processes never load a half-written library.
  const building = `${LIBRARY}.${process.pid}`
  const built = spawnSync('cc', ['-shared', '-fPIC', '-O2', '-o', building, SOURCE, '-ldl'], {
    encoding: 'utf8',
  })
  if (built.error !== undefined || built.status !== 0) return undefined
  renameSync(building, LIBRARY)
  return LIBRARY
}

/**
 * Where the process is killed: in the middle of its first write of 8 KiB or more at byte `offset` of `path` (its
 * absolute path, as /proc/self/fd shows it), only `bytes` of it written (default 4096: one page); or, with
 * `unlink`, just before it removes that file. Or, with `diskFull`, no kill: every write to that file fails with
 * ENOSPC while the file `whileExists` exists.
 */
export type TornWrite =
  | { readonly path: string; readonly offset: number; readonly bytes?: number }
  | { readonly unlink: string }
  | { readonly diskFull: string; readonly whileExists: string }

/** The environment that makes a process started with it die at `torn` (or find its disk full). */
export function tornWriteEnvironment(library: string, torn: TornWrite): NodeJS.ProcessEnv {
  if ('unlink' in torn) return { LD_PRELOAD: library, TORN_UNLINK_PATH: torn.unlink }
  if ('diskFull' in torn)
    return { LD_PRELOAD: library, TORN_FULL_PATH: torn.diskFull, TORN_FULL_WHILE: torn.whileExists }
  return {
    LD_PRELOAD: library,
    TORN_WRITE_PATH: torn.path,
    TORN_WRITE_OFFSET: String(torn.offset),
    TORN_WRITE_BYTES: String(torn.bytes ?? 4096),
  }
}
