import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'

import { createReporter } from '../../functions/local/reporter.ts'
import type { RunEvent } from '../../lib/use-cases/run-event.ts'

/** A stream that records what was written; `isTTY` as a terminal would have it. */
function stream(isTTY: boolean) {
  const chunks: string[] = []
  return { chunks, isTTY, write: (text: string) => chunks.push(text), text: () => chunks.join('') }
}

/** The line a terminal shows now: what follows the last carriage return. */
const lastLine = (text: string) => text.slice(text.lastIndexOf('\r')).replace('\r\x1b[2K', '')

const merging: RunEvent = { step: 'merging', table: 'customers', batchId: 'b1', rows: 1_000_000 }

beforeEach(() => vi.useFakeTimers({ now: new Date('2026-01-01T00:00:00Z') }))
afterEach(() => vi.useRealTimers())

describe('the CLI reporter', () => {
  it('says, on a terminal and in logs, that a merge ran out of memory and runs again at a higher limit', () => {
    for (const isTTY of [true, false]) {
      const err = stream(isTTY)
      const reporter = createReporter(err, stream(false))
      reporter.onEvent(merging)
      reporter.onEvent({
        step: 'memory-raised',
        table: 'customers',
        statement: 'insert first versions',
        from: '112MB',
        to: '224MB',
      })
      expect(err.text()).toContain(
        '2026-01-01T00:00:00.000Z customers: statement "insert first versions" ran out of memory at 112MB; ' +
          'running its transaction again at 224MB (DIMSYNC_DUCKDB_MEMORY_LIMIT makes the limit fixed)\n',
      )
      reporter.done()
    }
  })

  it('says a run whose lock was taken over was recorded as interrupted only when it was', () => {
    const err = stream(false)
    const reporter = createReporter(err, stream(false))
    const takenOver = { step: 'interrupted', table: 'customers', runId: 'run-a', by: 'run-b' } as const
    reporter.onEvent({ ...takenOver, record: 'interrupted' })
    reporter.onEvent({ ...takenOver, record: 'succeeded' })
    reporter.onEvent({ ...takenOver, record: 'none' })
    expect(err.text().split('\n').slice(0, 3)).toEqual([
      '2026-01-01T00:00:00.000Z customers: run run-a stopped while it held the table; recorded as interrupted',
      "2026-01-01T00:00:00.000Z customers: run run-a ended (recorded as succeeded) without releasing the table's lock; run-b took the lock over",
      '2026-01-01T00:00:00.000Z customers: run run-a stopped while it held the table, before it recorded anything; run-b took the lock over',
    ])
    reporter.done()
  })

  it('on a terminal, a merge longer than a second shows what it is doing and for how long', () => {
    const err = stream(true)
    const reporter = createReporter(err, stream(false))
    reporter.onEvent(merging)
    vi.advanceTimersByTime(900)
    expect(err.text()).toBe('')
    vi.advanceTimersByTime(2200)
    expect(lastLine(err.text())).toBe('customers: merging batch b1 (1,000,000 rows), 3 s')
    reporter.onEvent({
      step: 'merge',
      table: 'customers',
      batchId: 'b1',
      result: { status: 'merged', batchId: 'b1', statements: [] },
      seconds: 3.1,
    })
    expect(err.text().endsWith('\r\x1b[2K')).toBe(true)
    const written = err.chunks.length
    vi.advanceTimersByTime(5000)
    expect(err.chunks.length).toBe(written)
    reporter.done()
  })

  it('a failed run clears the line it was showing', () => {
    const err = stream(true)
    const reporter = createReporter(err, stream(false))
    reporter.onEvent(merging)
    vi.advanceTimersByTime(1500)
    reporter.onEvent({ step: 'failed', table: 'customers', runId: 'r', error: new Error('x') })
    expect(err.text().endsWith('\r\x1b[2K')).toBe(true)
    vi.advanceTimersByTime(3000)
    expect(err.text().endsWith('\r\x1b[2K')).toBe(true)
    reporter.done()
  })

  it('elsewhere, the start of a merge is one log line', () => {
    const err = stream(false)
    const reporter = createReporter(err, stream(false))
    reporter.onEvent(merging)
    vi.advanceTimersByTime(3000)
    expect(err.text()).toBe('2026-01-01T00:00:00.000Z customers merging batch b1 (1,000,000 rows)\n')
    reporter.done()
  })

  it('an extract that found no rows says what it read, on a terminal too', () => {
    for (const isTTY of [true, false]) {
      const err = stream(isTTY)
      const reporter = createReporter(err, stream(false))
      reporter.onEvent({
        step: 'extract',
        table: 'customers',
        batchId: 'b2',
        rows: 0,
        bytes: 900,
        parts: 1,
        seconds: 0.2,
        source: 'csv s3://b/exports/*.csv: no new file (3 merged already)',
      })
      expect(err.text()).toBe(
        '2026-01-01T00:00:00.000Z customers extracted no rows: csv s3://b/exports/*.csv: no new file (3 merged already)\n',
      )
      reporter.done()
    }
  })
})
