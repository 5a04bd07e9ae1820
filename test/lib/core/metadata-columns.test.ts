import { describe, expect, it } from 'vitest'
import { IDENTIFIER_PATTERN } from '../../../lib/config/config-schema.ts'
import { parseProject } from '../../../lib/config/index.ts'
import { presetTableFields } from '../../../lib/config/table-options.ts'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import {
  COLUMN_PRESETS,
  METADATA_COLUMN_KEYS,
  METADATA_COLUMNS,
  metadataColumnList,
  PRESET_NAMES,
  type MetadataColumnNames,
} from '../../../lib/core/metadata-columns.ts'
import { createBigQueryDialect } from '../../../lib/sql/bigquery/bigquery-dialect.ts'
import { bigQueryColumnType } from '../../../lib/sql/bigquery/bigquery-types.ts'
import { dimensionObjects, renderDimensionDdl } from '../../../lib/sql/render-ddl.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

describe('the metadata column contract (one table for config, layout and DDL)', () => {
  it.each(PRESET_NAMES)(
    'preset %s names every metadata column, each differently, with a plain identifier',
    (preset) => {
      const names = METADATA_COLUMN_KEYS.map((key) => COLUMN_PRESETS[preset][key])
      expect(names).toHaveLength(7)
      expect(new Set(names.map((n) => n.toLowerCase())).size).toBe(7)
      for (const name of names) expect(name).toMatch(IDENTIFIER_PATTERN)
    },
  )

  it.each(PRESET_NAMES)(
    'the dimension DDL of preset %s declares each column with its type, nullability and meaning',
    (preset) => {
      const table = tableSpec({ columns: COLUMN_PRESETS[preset] })
      const layout = planDimensionLayout(table, 'b1', [{ name: 'customer_id', type: 'BIGINT' }], undefined)
      const ddl = renderDimensionDdl(
        createBigQueryDialect({ project: 'p' }),
        table,
        layout,
        dimensionObjects(table, 'h'),
      )
      const create = ddl.find((s) => s.label === 'create dimension')!.sql
      for (const key of METADATA_COLUMN_KEYS) {
        const { type, notNull, meaning } = METADATA_COLUMNS[key]
        const line = create
          .split('\n')
          .find((l) => l.trimStart().startsWith(`\`${COLUMN_PRESETS[preset][key]}\` `))
        expect(line, key).toBeDefined()
        expect(line!.includes(' NOT NULL '), key).toBe(notNull)
        expect(line, key).toContain(
          `${bigQueryColumnType(type, { table: 'customers', column: key })}${notNull ? ' NOT NULL' : ''} OPTIONS(description = 'dimsync: ${meaning}')`,
        )
      }
    },
  )

  it('each option of columns: in dimsync.yaml renames its column, on top of a preset', () => {
    for (const key of METADATA_COLUMN_KEYS) {
      const option = METADATA_COLUMNS[key].option
      const yaml = `version: 1\ntables:\n  - name: t\n    source: { type: file, path: t.csv }\n    key: id\n    columns: { preset: dbt, ${option}: renamed }\n`
      const [table] = parseProject(yaml, '/tmp/dimsync.yaml').tables
      expect(table!.columns).toEqual({ ...COLUMN_PRESETS.dbt, [key]: 'renamed' })
    }
  })
})

describe('dimensions an earlier dimsync created with the dbt or fivetran preset', () => {
  const staged = [
    { name: 'customer_id', type: 'BIGINT' },
    { name: 'name', type: 'VARCHAR' },
  ]
  // What dimsync wrote before the presets followed their tools: the integer key under the tool's id name.
  const former = (names: MetadataColumnNames) => [...metadataColumnList(names), ...staged]

  it.each([
    [
      'dbt',
      { ...COLUMN_PRESETS.dbt, surrogateKey: 'dbt_scd_id' },
      'dbt_scd_id and dbt_updated_at did not follow dbt',
    ],
    [
      'fivetran',
      { ...COLUMN_PRESETS.fivetran, surrogateKey: '_fivetran_id' },
      '_fivetran_end did not follow Fivetran',
    ],
  ] as const)('%s: refused naming the table and the way out, nothing written', (preset, names, what) => {
    const table = tableSpec(presetTableFields(preset))
    expect(() => planDimensionLayout(table, 'b2', staged, former(names))).toThrow(
      `table customers: dimension dim_customer was created by an earlier dimsync with the ${preset} preset ` +
        `(integer surrogate key "${names.surrogateKey}", no "${COLUMN_PRESETS[preset].surrogateKey}"), whose ${what}; ` +
        `nothing was written. Load table customers into a new target, or keep this dimension as it is by naming ` +
        `its columns without the preset (columns: { surrogate_key: ${names.surrogateKey}, valid_from: ` +
        `${COLUMN_PRESETS[preset].validFrom}, ... })`,
    )
  })

  it('named column by column without the preset, it is read the old way', () => {
    const names = { ...COLUMN_PRESETS.dbt, surrogateKey: 'dbt_scd_id' }
    const table = tableSpec({ columns: names })
    expect(planDimensionLayout(table, 'b2', staged, former(names)).createDimension).toBe(false)
  })
})
