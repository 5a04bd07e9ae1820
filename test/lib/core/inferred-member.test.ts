import { describe, expect, it } from 'vitest'
import { inferredColumnName } from '../../../lib/core/inferred-member.ts'
import { COLUMN_PRESETS } from '../../../lib/core/metadata-columns.ts'

describe('the inferred-member flag column', () => {
  it.each([
    ['dimsync', 'is_inferred'],
    ['dbt', 'dbt_is_inferred'],
    ['fivetran', '_fivetran_inferred'],
    ['databricks', '__IS_INFERRED'],
  ] as const)('is named in the style of the %s preset', (preset, name) => {
    expect(inferredColumnName(COLUMN_PRESETS[preset])).toBe(name)
  })

  it('follows the preset most of the columns come from when some are renamed', () => {
    expect(inferredColumnName({ ...COLUMN_PRESETS.dbt, validTo: 'ended_at', isCurrent: 'live' })).toBe(
      'dbt_is_inferred',
    )
  })

  it('is the dimsync name when every column is renamed', () => {
    const renamed = Object.fromEntries(Object.keys(COLUMN_PRESETS.dimsync).map((k) => [k, `x_${k}`]))
    expect(inferredColumnName(renamed as typeof COLUMN_PRESETS.dimsync)).toBe('is_inferred')
  })
})
