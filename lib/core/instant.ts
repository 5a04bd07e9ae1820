/**
 * Sort key of an ISO instant that keeps microseconds: `Date` alone truncates to milliseconds, so two
 * extractions 300 µs apart would tie. Returns undefined when the text is not an instant.
 */
export function instantSortKey(iso: string): string | undefined {
  const ms = Date.parse(iso)
  if (Number.isNaN(ms)) return undefined
  const fraction = /T\d{2}:\d{2}:\d{2}\.(\d+)/.exec(iso)?.[1] ?? ''
  const micros = fraction.padEnd(6, '0').slice(3, 6)
  // Shift by 1e15 ms so that instants before 1970 still sort as fixed-width positive numbers.
  return `${String(ms + 1e15).padStart(17, '0')}${micros}`
}
