import { describe, expect, it } from 'vitest'

import { readMemorySize } from '../../../lib/config/env.ts'
import { ConfigError } from '../../../lib/core/errors.ts'

const VARIABLE = 'DIMSYNC_DUCKDB_MEMORY_LIMIT'
const read = (value: string | undefined) => readMemorySize({ [VARIABLE]: value }, VARIABLE, '112MB')

describe('readMemorySize', () => {
  it('passes a size with a unit DuckDB reads as it is; unset or blank gives the default', () => {
    expect(read('256MB')).toBe('256MB')
    expect(read(' 1.5 GiB ')).toBe('1.5 GiB')
    expect(read('2gb')).toBe('2gb')
    expect(read(undefined)).toBe('112MB')
    expect(read('  ')).toBe('112MB')
    expect(readMemorySize({}, VARIABLE)).toBeUndefined()
  })

  it.each(['abc', '-5MB', '0MB', '0', '100', '50%', '1e3MB', 'MB', '5 XB'])(
    'refuses %j in one line naming the variable, the value and what to write',
    (value) => {
      let error: unknown
      try {
        read(value)
      } catch (caught) {
        error = caught
      }
      expect(error).toBeInstanceOf(ConfigError)
      const message = (error as Error).message
      expect(message).toBe(
        `environment: ${VARIABLE}: expected a memory size above 0 with a unit, such as 112MB or 1GB ` +
          `(B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), got ${JSON.stringify(value)}`,
      )
    },
  )
})
