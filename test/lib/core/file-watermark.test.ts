import fc from 'fast-check'
import { describe, expect, it } from 'vitest'

import type { Watermark } from '../../../lib/core/batch.ts'
import {
  FILE_LOOKBACK_MS,
  isFileWatermark,
  nextFileWatermark,
  selectNewFiles,
  type ListedFile,
} from '../../../lib/core/file-watermark.ts'
import { compareWatermarks } from '../../../lib/core/watermark.ts'
import { propertySeed } from '../../support/property-seed.ts'

const T0 = Date.parse('2026-11-30T10:00:00.000Z')
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString()
const file = (name: string, seconds: number): ListedFile => ({ name, modified: at(seconds) })

describe('new files: selection and watermark', () => {
  it('the first run takes every file, oldest first; the next takes only files not processed', () => {
    const a = file('s3://b/a.csv', 20)
    const b = file('s3://b/b.csv', 10)
    expect(selectNewFiles([a, b], undefined)).toEqual([b, a])
    const w1 = nextFileWatermark(undefined, [b, a])!
    expect(w1.cursor).toBe(at(20))
    expect(selectNewFiles([a, b], w1)).toEqual([])
    const c = file('s3://b/c.csv', 30)
    expect(selectNewFiles([a, b, c], w1)).toEqual([c])
  })

  it('an object that becomes visible late with an older modified time (an S3 upload started earlier) is still new', () => {
    const late = file('s3://b/0-late.csv', 5) // modified before the files already processed, listed only now
    const w = nextFileWatermark(undefined, [file('s3://b/a.csv', 10), file('s3://b/b.csv', 20)])
    expect(selectNewFiles([late, file('s3://b/a.csv', 10)], w)).toEqual([late])
    const older = file('s3://b/ancient.csv', 20 - FILE_LOOKBACK_MS / 1000 - 1)
    expect(selectNewFiles([older], w)).toEqual([])
  })

  it('a file rewritten after it was processed (a new modified time) is read again', () => {
    const w = nextFileWatermark(undefined, [file('data/a.csv', 10)])
    expect(selectNewFiles([file('data/a.csv', 40)], w)).toEqual([file('data/a.csv', 40)])
  })

  it('no file processed keeps the watermark as it was', () => {
    const w = nextFileWatermark(undefined, [file('a', 1)])
    expect(nextFileWatermark(w, [])).toBe(w)
    expect(nextFileWatermark(undefined, [])).toBeUndefined()
  })

  it('names older than the lookback are forgotten, so the watermark stays small', () => {
    const w1 = nextFileWatermark(undefined, [file('a', 0), file('b', 1)])!
    const w2 = nextFileWatermark(w1, [file('c', FILE_LOOKBACK_MS / 1000 + 0.5)])!
    expect(w2.key).toEqual([`${at(1)} b`, `${at(FILE_LOOKBACK_MS / 1000 + 0.5)} c`])
    expect(isFileWatermark(w2)).toBe(true)
    expect(isFileWatermark({ cursor: 5, key: [] })).toBe(false)
  })

  it('property: files arriving in any order over many runs are each selected exactly once, and every next watermark sorts at or after the one it replaces', () => {
    const arrival = fc.record({
      // seconds since T0; visible at run `run` (an upload may become visible long after it started)
      modified: fc.integer({ min: 0, max: 3000 }),
      run: fc.integer({ min: 0, max: 6 }),
    })
    fc.assert(
      fc.property(fc.array(arrival, { maxLength: 30 }), (arrivals) => {
        const files = arrivals.map((a, i) => ({ ...file(`s3://b/f${i}`, a.modified), run: a.run }))
        let watermark: Watermark | undefined
        const seen: string[] = []
        for (let run = 0; run <= 6; run++) {
          const visible = files.filter((f) => f.run <= run)
          const fresh = selectNewFiles(visible, watermark)
          seen.push(...fresh.map((f) => f.name))
          const next = nextFileWatermark(watermark, fresh)
          if (watermark !== undefined && next !== undefined)
            expect(compareWatermarks(next, watermark)).toBeGreaterThanOrEqual(0)
          watermark = next
        }
        // Every upload here becomes visible within the lookback (3000 s < 1 h), so none is missed or repeated.
        expect([...seen].sort()).toEqual(files.map((f) => f.name).sort())
      }),
      { seed: propertySeed(13), numRuns: 300 },
    )
  })
})
