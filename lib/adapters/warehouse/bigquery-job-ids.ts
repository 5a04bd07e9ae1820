import { createHash } from 'node:crypto'

/**
 * Deterministic job ids: the same (kind, table, batch, part, attempt) always gives the same id, so a retried Lambda
 * that repeats a load or a merge finds the job the first attempt created (jobs.insert answers 409) instead of
 * loading or merging twice. Ids hold letters, digits, `_` and `-` (at most 1,024 characters); a short hash of
 * the raw parts keeps two names that sanitize alike apart.
 */
export function jobId(
  kind: 'load' | 'merge',
  target: string,
  batchId: string,
  options: { readonly part?: number; readonly attempt?: number } = {},
): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, '_')
  const digest = createHash('sha256')
    .update(`${kind}\0${target}\0${batchId}\0${options.part ?? ''}`)
    .digest('hex')
  const part = options.part === undefined ? '' : `_p${options.part}`
  const attempt = (options.attempt ?? 1) > 1 ? `_a${options.attempt}` : ''
  return `dimsync_${kind}_${clean(target)}_${clean(batchId)}${part}_${digest.slice(0, 8)}${attempt}`.slice(
    -1024,
  )
}

/** Job labels: keys and values are lowercase letters, digits, `_` and `-`, at most 63 characters. */
export function jobLabels(table: string, batchId: string): Record<string, string> {
  const value = (s: string) =>
    s
      .toLowerCase()
      .replace(/[^a-z0-9_-]/g, '_')
      .slice(0, 63)
  return { dimsync_table: value(table), dimsync_batch: value(batchId) }
}
