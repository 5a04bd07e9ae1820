/**
 * Batch ids sort by extraction time (`20240310T143000.000Z-3f9a1c`), so listing a staging folder shows batches
 * in the order they must be merged; the random suffix keeps two extracts of the same instant apart.
 */
export function makeBatchId(extractedAt: Date, random: () => number = Math.random): string {
  const stamp = extractedAt.toISOString().replaceAll('-', '').replaceAll(':', '')
  const suffix = Math.floor(random() * 0xffffff)
    .toString(16)
    .padStart(6, '0')
  return `${stamp}-${suffix}`
}

/** Run ids name a run in locks and run records. */
export function makeRunId(startedAt: Date, random: () => number = Math.random): string {
  return `run-${makeBatchId(startedAt, random)}`
}

/** The run of a batch whose extract and merge are separate steps (the Lambdas): both update this run record. */
export function runIdOfBatch(batchId: string): string {
  return `run-${batchId}`
}

/**
 * The extraction instant encoded in a batch id made by `makeBatchId` (`20240310T143000.000Z-3f9a1c`), as an ISO
 * string; undefined for an id made otherwise. A step that only has the batch id (a merge whose extract record
 * was lost) dates its run record with it.
 */
export function instantOfBatchId(batchId: string): string | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})\.(\d{3})Z-/.exec(batchId)
  if (!m) return undefined
  const iso = `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.${m[7]}Z`
  return Number.isNaN(Date.parse(iso)) ? undefined : iso
}
