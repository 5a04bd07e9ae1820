import type { RunEvent } from '../../lib/use-cases/run-table.ts'

interface Stream {
  write(text: string): unknown
  readonly isTTY?: boolean
}

/**
 * Progress for people and logs for machines: on a terminal one updating line with rows and rows/s; elsewhere
 * one log line per step (lock, extract, merge). Results go to stdout, progress and logs to stderr.
 */
export function createReporter(err: Stream, out: Stream) {
  const live = Boolean(err.isTTY)
  let progressShown = false
  const clear = () => {
    if (progressShown) err.write('\r\x1b[2K')
    progressShown = false
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
        case 'resume':
          log(`${event.table} merged batch ${event.batchId}, left staged by an interrupted run`)
          return
        case 'extract':
          if (live) clear()
          else
            log(
              `${event.table} extracted batch ${event.batchId}: ${event.rows} rows in ${event.seconds.toFixed(1)} s (${rate(event.rows, event.seconds)} rows/s)`,
            )
          return
        case 'merge':
          if (!live)
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
      clear()
    },
  }
}
