import { readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'

/**
 * What the unit and fast tiers' lint tests read of a test file and the test helpers it imports: the files
 * reached through relative imports, and the writes to the process's shared state they make.
 */
const IMPORT = /^\s*(?:import|export)\s+(?!type\b)[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'/gm

/** A test file a walk of relative imports reached: the chain of files it was first reached through (itself last). */
interface Reached {
  readonly chain: readonly string[]
  /** The packages and node: modules it imports (not its relative imports). */
  readonly modules: readonly string[]
}

/** The test files `file` reaches through its relative imports (itself included), in the order first reached. */
export function reachedTestFiles(
  file: string,
  reached = new Map<string, Reached>(),
  via: readonly string[] = [],
): Map<string, Reached> {
  if (reached.has(file)) return reached
  const chain = [...via, file]
  const modules: string[] = []
  reached.set(file, { chain, modules })
  for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
    const spec = match[1] ?? match[2]!
    if (!spec.startsWith('.')) {
      modules.push(spec)
      continue
    }
    const target = normalize(join(dirname(file), spec))
    if (target.startsWith('test/') && target.endsWith('.ts')) reachedTestFiles(target, reached, chain)
  }
  return reached
}

/**
 * Writes to the process's shared state. The test files share a worker's modules and process
 * (`isolate: false` in vitest.config.ts): the environment and working directory are put back after each file
 * (test/support/restore-process-state.ts), a global or the umask would reach the files after it
 * (UNRESTORED_PROCESS_STATE_WRITE). Unit and fast tests write none of them at all.
 */
export const PROCESS_STATE_WRITE =
  /process\.env(?:\.\w+|\[[^\]]+\])\s*(?:=(?!=)|\?\?=|\|\|=)|delete\s+process\.env|Object\.assign\(\s*process\.env|process\.chdir\(|process\.umask\(|vi\.stub(?:Env|Global)\(|globalThis\.\w+\s*=(?!=)/g

/** The writes of PROCESS_STATE_WRITE that no setup file puts back after a test file. */
export const UNRESTORED_PROCESS_STATE_WRITE = /process\.umask\(|vi\.stubGlobal\(|globalThis\.\w+\s*=(?!=)/g

export function processStateWrites(file: string, pattern = PROCESS_STATE_WRITE): string[] {
  return [...reachedTestFiles(file).keys()].flatMap((reached) =>
    [...readFileSync(reached, 'utf8').matchAll(pattern)].map((m) => `${reached}: ${m[0]}`),
  )
}
