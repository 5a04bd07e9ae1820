import { describe, expect, it } from 'vitest'

import type { Watermark } from '../../../lib/core/batch.ts'
import { SourceError } from '../../../lib/core/errors.ts'
import { compareWatermarks, watermarkToReadFrom } from '../../../lib/core/watermark.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

const source = { type: 'postgres', urlEnv: 'DB_URL', table: 'public.feed' } as const
const bySeq = { mode: 'incremental', cursor: 'seq', lookbackMinutes: 0 } as const
const feed = tableSpec({
  name: 'feed',
  source,
  extract: bySeq,
  validFrom: { kind: 'column', column: 'changed_at' },
  changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] }, sequence: 'seq' },
})
const snapshotDelta = tableSpec({ name: 'customers', source, extract: bySeq })

describe('the watermark an extract reads after', () => {
  const ofSeq: Watermark = { cursor: 7, key: [1], column: 'seq' }
  const ofTime: Watermark = { cursor: '2024-03-01T00:00:00', key: [1], column: 'changed_at' }
  const unnamed: Watermark = { cursor: '2024-03-01T00:00:00', key: [1] }

  it('is the stored one when it is of the cursor column', () => {
    expect(watermarkToReadFrom(feed, ofSeq)).toEqual({ cursor: 7, key: [1] })
    expect(watermarkToReadFrom(snapshotDelta, { ...ofSeq, batchId: 'b1' })).toEqual({ cursor: 7, key: [1] })
    expect(watermarkToReadFrom(feed, undefined)).toBeUndefined()
  })

  it('a change feed reads from the start when the stored watermark is of another column or names none', () => {
    expect(watermarkToReadFrom(feed, ofTime)).toBeUndefined()
    expect(watermarkToReadFrom(feed, unnamed)).toBeUndefined()
  })

  it('another table keeps a watermark that names no column, and reads every row again after a cursor change', () => {
    expect(watermarkToReadFrom(snapshotDelta, unnamed)).toEqual(unnamed)
    expect(watermarkToReadFrom(snapshotDelta, ofTime)).toBeUndefined()
  })

  it('an append table refuses a watermark of another column: reading every row again would append it twice', () => {
    const appended = tableSpec({ name: 'events', source, extract: bySeq, mode: 'append' })
    const refused = () => watermarkToReadFrom(appended, ofTime)
    expect(refused).toThrow(SourceError)
    expect(refused).toThrow(
      'table events: the stored watermark is a value of cursor column changed_at, but extract.cursor is seq; an ' +
        'append table reading seq from the start would append every row again. Set extract.cursor back to ' +
        'changed_at, or load the table under a new name to read it by seq from the start',
    )
  })

  it('a full extract reads no watermark', () => {
    const full = tableSpec({ source })
    expect(watermarkToReadFrom(full, ofTime)).toBe(ofTime)
  })
})

describe('watermarks of different cursor columns', () => {
  it('are not ordered by their values (so a watermark of the new column replaces the old one)', () => {
    expect(
      compareWatermarks({ cursor: 3, key: [1], column: 'seq' }, { cursor: 1000, key: [1], column: 'id' }),
    ).toBe(0)
    expect(compareWatermarks({ cursor: 3, key: [1], column: 'seq' }, { cursor: 1000, key: [1] })).toBe(0)
    expect(
      compareWatermarks({ cursor: 3, key: [1], column: 'seq' }, { cursor: 1000, key: [1], column: 'seq' }),
    ).toBe(-1)
  })
})
