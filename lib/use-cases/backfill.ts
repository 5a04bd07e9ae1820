import { basename, relative, resolve } from 'node:path'
import { glob } from 'tinyglobby'
import { compileTimePattern } from '../core/time-from-name.ts'
import { DimsyncError } from '../core/errors.ts'
import { extractionTimeProblem } from '../core/instant.ts'
import type { TableSpec } from '../core/table-spec.ts'
import { runTable, type PipelineDeps, type RunTableResult } from './run-table.ts'

export interface BackfillRequest {
  readonly table: TableSpec
  /** Glob of dated snapshot files, relative to `baseDir`. */
  readonly files: string
  readonly timeFromName: string
  readonly baseDir: string
  readonly allowMassDelete?: boolean
  /** How far past the clock a file's time may be (default: no limit). */
  readonly maxFutureMs?: number
}

/**
 * Applies a series of dated snapshots in time order, each as a full extract whose extraction time is read from
 * its file name. Every file name must match the pattern (a file that does not is an error, not skipped).
 */
export async function backfill(deps: PipelineDeps, request: BackfillRequest): Promise<RunTableResult[]> {
  const { table } = request
  if (table.source.type !== 'file')
    throw new DimsyncError(`table ${table.name}: backfill reads files; its source is ${table.source.type}`)
  const timeOf = compileTimePattern(request.timeFromName)
  const files = await glob(request.files, { cwd: request.baseDir, absolute: true, onlyFiles: true })
  if (files.length === 0)
    throw new DimsyncError(`table ${table.name}: no file matches ${request.files} in ${request.baseDir}`)
  const dated = files.map((file) => {
    const at = timeOf(basename(file))
    if (at === undefined)
      throw new DimsyncError(
        `table ${table.name}: file ${basename(file)} does not match --time-from-name "${request.timeFromName}"`,
      )
    return { file, at }
  })
  dated.sort((a, b) => a.at.getTime() - b.at.getTime())
  for (let i = 1; i < dated.length; i++) {
    if (dated[i]!.at.getTime() === dated[i - 1]!.at.getTime())
      throw new DimsyncError(
        `table ${table.name}: files ${basename(dated[i - 1]!.file)} and ${basename(dated[i]!.file)} have the same time`,
      )
  }
  // Checked before the first snapshot is applied: a file dated in the future would block every later run.
  const now = deps.clock()
  for (const { file, at } of dated) {
    const problem = extractionTimeProblem(at, {
      now,
      maxFutureMs: request.maxFutureMs ?? Number.POSITIVE_INFINITY,
      openEnd: table.openEnd,
    })
    if (problem !== undefined)
      throw new DimsyncError(`table ${table.name}: file ${basename(file)}: its time ${problem}`)
  }
  const results: RunTableResult[] = []
  for (const { file, at } of dated) {
    const snapshot: TableSpec = {
      ...table,
      source: { ...table.source, path: relative(resolve(request.baseDir), file) },
      extract: { mode: 'full' },
    }
    results.push(
      await runTable(deps, snapshot, { extractedAt: at, allowMassDelete: request.allowMassDelete }),
    )
  }
  return results
}
