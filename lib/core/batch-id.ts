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
