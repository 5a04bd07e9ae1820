import { describe, expect, it } from 'vitest'

import { asksForVersionOnly, needsAllocatorSettings } from '../../bin/launch-plan.mjs'

describe('what the launcher decides from the command line', () => {
  it('answers the version itself only when the version is all that is asked', () => {
    expect(asksForVersionOnly(['--version'])).toBe(true)
    expect(asksForVersionOnly(['-V'])).toBe(true)
    expect(asksForVersionOnly([])).toBe(false)
    expect(asksForVersionOnly(['run', '--version'])).toBe(false)
    expect(asksForVersionOnly(['--version', '--help'])).toBe(false)
    expect(asksForVersionOnly(['--versions'])).toBe(false)
  })

  it('starts Node again with the allocator settings for every command that may read tables, not for help', () => {
    for (const command of [
      'run',
      'backfill',
      'plan',
      'dates',
      'evolve',
      'discard',
      'reset-watermark',
      'history',
    ])
      expect(needsAllocatorSettings([command, '-c', 'dimsync.yaml'])).toBe(true)
    // validate extracts a change feed's table to check its operation column.
    expect(needsAllocatorSettings(['validate'])).toBe(true)
    expect(needsAllocatorSettings(['report', '--out', 'r.html'])).toBe(true)

    expect(needsAllocatorSettings([])).toBe(false)
    expect(needsAllocatorSettings(['--help'])).toBe(false)
    expect(needsAllocatorSettings(['-h'])).toBe(false)
    expect(needsAllocatorSettings(['run', '--help'])).toBe(false)
    expect(needsAllocatorSettings(['help', 'run'])).toBe(false)
    expect(needsAllocatorSettings(['--version'])).toBe(false)
  })
})
