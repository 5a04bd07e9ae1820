import type { RunEvent } from '../../lib/use-cases/run-table.ts'

interface Stream {
  write(text: string): unknown
  readonly isTTY?: boolean
}

/** How often the line of a long step is redrawn with its elapsed time (and after how long it first shows). */
const TICK_MS = 1000

/**
 * Progress for people and logs for machines: on a terminal one updating line (rows and rows/s while extracting;
 * a step that takes longer than a second, such as the merge, with its elapsed seconds); elsewhere one log line
 * per step (lock, extract, merging, merge). Results go to stdout, progress and logs to stderr.
 */
export function createReporter(err: Stream, out: Stream) {
  const live = Boolean(err.isTTY)
  let progressShown = false
  /** The step under way that has no progress of its own to show (a merge), and when it started. */
  let activity: { readonly text: string; readonly since: number } | undefined
  let ticker: NodeJS.Timeout | undefined
  const clear = () => {
    if (progressShown) err.write('\r\x1b[2K')
    progressShown = false
  }
  const tick = () => {
    if (activity === undefined) return
    const elapsed = Date.now() - activity.since
    if (elapsed < TICK_MS) return
    err.write(`\r\x1b[2K${activity.text}, ${Math.floor(elapsed / 1000)} s`)
    progressShown = true
  }
  const begin = (text: string) => {
    activity = { text, since: Date.now() }
    if (ticker === undefined) {
      ticker = setInterval(tick, TICK_MS)
      // The display must never keep the process alive.
      ticker.unref()
    }
  }
  const end = () => {
    activity = undefined
    clear()
  }
  const log = (text: string) => {
    clear()
    err.write(`${new Date().toISOString()} ${text}\n`)
  }
  const rate = (rows: number, seconds: number) =>
    Math.round(rows / Math.max(seconds, 0.001)).toLocaleString('en-US')
  return {
    onEvent(event: RunEvent): void {
      switch (event.step) {
        case 'progress':
          if (live) {
            err.write(
              `\r\x1b[2K${event.table}: ${event.rows.toLocaleString('en-US')} rows (${rate(event.rows, event.seconds)} rows/s)`,
            )
            progressShown = true
          }
          return
        case 'lock':
          if (!live) log(`${event.table} locked by ${event.runId}`)
          return
        case 'interrupted':
          log(
            event.record === 'interrupted'
              ? `${event.table}: run ${event.runId} stopped while it held the table; recorded as interrupted`
              : event.record === 'none'
                ? `${event.table}: run ${event.runId} stopped while it held the table, before it recorded anything; ${event.by} took the lock over`
                : `${event.table}: run ${event.runId} ended (recorded as ${event.record}) without releasing the table's lock; ${event.by} took the lock over`,
          )
          return
        case 'cleanup':
          log(
            `${event.table}: removed uncommitted batch(es) left by an interrupted run: ${event.removed.join(', ')}`,
          )
          return
        case 'checkpoint-recovered':
          log(
            event.recovery === 'restored'
              ? `warehouse ${event.path}: a run stopped while DuckDB folded its transactions into the file; the copy made before was put back (DuckDB's log completes it)`
              : `warehouse ${event.path}: removed the copy a run stopped after its checkpoint left`,
          )
          return
        case 'resume':
          if (live) end()
          log(`${event.table} merged batch ${event.batchId}, left staged by an interrupted run`)
          return
        case 'extract':
          // A run that found nothing (a new-files source with no new file, an empty delta) says what it read.
          if (event.rows === 0 && event.source !== undefined)
            log(`${event.table} extracted no rows: ${event.source}`)
          else if (live) clear()
          else
            log(
              `${event.table} extracted batch ${event.batchId}: ${event.rows} rows in ${event.seconds.toFixed(1)} s (${rate(event.rows, event.seconds)} rows/s)`,
            )
          return
        case 'merging': {
          const what = `merging batch ${event.batchId} (${event.rows.toLocaleString('en-US')} rows)`
          if (live) begin(`${event.table}: ${what}`)
          else log(`${event.table} ${what}`)
          return
        }
        case 'memory-raised':
          log(
            `${event.table}: statement "${event.statement}" ran out of memory at ${event.from}; running its transaction again at ${event.to} ` +
              '(DIMSYNC_DUCKDB_MEMORY_LIMIT makes the limit fixed)',
          )
          return
        case 'failed':
          if (live) end()
          return
        case 'merge':
          if (live) end()
          else
            log(
              `${event.table} merged batch ${event.batchId} (${event.result.status}) in ${event.seconds.toFixed(1)} s`,
            )
          return
      }
    },
    summary(line: string): void {
      clear()
      out.write(`${line}\n`)
    },
    done(): void {
      clearInterval(ticker)
      ticker = undefined
      end()
    },
  }
}
