import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  depthStats,
  instantMs,
  mergeDimensionDays,
  recentDays,
  runSeconds,
  sumDays,
} from '../../../lib/core/history-report.ts'

describe('depthStats', () => {
  it('nearest-rank median and p99 of versions per key, from the histogram', () => {
    // 98 keys with 1 version, one with 5, one with 40: the median is 1, the 99th key of 100 has 5.
    expect(
      depthStats([
        { versions: 40, keys: 1 },
        { versions: 1, keys: 98 },
        { versions: 5, keys: 1 },
      ]),
    ).toEqual({ keys: 100, versions: 143, median: 1, p99: 5, max: 40 })
    expect(depthStats([])).toEqual({ keys: 0, versions: 0, median: 0, p99: 0, max: 0 })
  })

  it('agrees with sorting every key’s depth', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 200 }), (depths) => {
        const histogram = [...new Set(depths)].map((versions) => ({
          versions,
          keys: depths.filter((d) => d === versions).length,
        }))
        const sorted = depths.toSorted((a, b) => a - b)
        const rank = (share: number) => sorted[Math.max(1, Math.ceil(share * sorted.length)) - 1]
        expect(depthStats(histogram)).toEqual({
          keys: depths.length,
          versions: depths.reduce((a, b) => a + b, 0),
          median: rank(0.5),
          p99: rank(0.99),
          max: sorted.at(-1),
        })
      }),
    )
  })
})

describe('days', () => {
  it('merges counts of several sources by day, oldest first, adding what two sources say of one field', () => {
    const days = mergeDimensionDays(
      [
        { day: '2024-03-01', opened: 2 },
        { day: '2024-01-01', opened: 3 },
      ],
      [{ day: '2024-03-01', restored: 1, corrected: 1 }],
      [{ day: '2024-03-01', corrected: 2 }],
    )
    expect(days.map((d) => [d.day, d.opened, d.restored, d.corrected, d.closed])).toEqual([
      ['2024-01-01', 3, 0, 0, 0],
      ['2024-03-01', 2, 1, 3, 0],
    ])
    expect(sumDays(days)).toMatchObject({ opened: 5, restored: 1, corrected: 3 })
  })

  it('keeps the days within the span ending at the last one', () => {
    const days = ['2022-12-31', '2023-01-01', '2023-06-30', '2023-12-31'].map((day) => ({ day }))
    expect(recentDays(days, 365).map((d) => d.day)).toEqual(['2023-01-01', '2023-06-30', '2023-12-31'])
    expect(recentDays([], 365)).toEqual([])
  })
})

describe('instants and runs', () => {
  it('reads the warehouses’ instant text and ISO text alike', () => {
    const at = Date.parse('2024-03-10T14:30:00.123Z')
    expect(instantMs('2024-03-10 14:30:00.123456+00')).toBe(at)
    expect(instantMs('2024-03-10T14:30:00.123Z')).toBe(at)
    expect(instantMs('2024-03-10 16:30:00.123+02:00')).toBe(at)
    expect(instantMs('2024-03-10')).toBe(Date.parse('2024-03-10T00:00:00Z'))
    expect(instantMs('not a time')).toBeNaN()
  })

  it('a run lasts from its start to its end; a run still going has no duration', () => {
    const run = {
      runId: 'r',
      table: 't',
      status: 'succeeded' as const,
      startedAt: '2024-01-01T00:00:00.000Z',
    }
    expect(runSeconds({ ...run, finishedAt: '2024-01-01T00:00:02.500Z' })).toBe(2.5)
    expect(runSeconds({ ...run, status: 'running' })).toBeUndefined()
  })
})
