import { describe, expect, it } from 'vitest'
import { planDimensionLayout } from '../../../lib/core/dimension-layout.ts'
import { ContractChangedError } from '../../../lib/core/errors.ts'
import {
  contractChanges,
  contractText,
  describeChange,
  parseContract,
  tableContract,
  trackedConfigChanged,
  type TableContract,
} from '../../../lib/core/table-contract.ts'
import { COLUMN_PRESETS } from '../../../lib/config/index.ts'
import type { TableSpec } from '../../../lib/core/table-spec.ts'
import { tableSpec } from '../../support/table-spec-builder.ts'

const STAGED = [
  { name: 'customer_id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'price', type: 'BIGINT' },
  { name: 'updated_at', type: 'TIMESTAMP' },
]
const contractOf = (table: TableSpec) =>
  tableContract(table, planDimensionLayout(table, 'b1', STAGED, undefined))

describe('table contract', () => {
  it('records what the config and the source decide; the same config gives the same text', () => {
    const table = tableSpec({ tracked: { kind: 'list', columns: ['price', 'name'] } })
    const contract = contractOf(table)
    expect(contract).toMatchObject({
      key: ['customer_id'],
      mode: 'history',
      validFrom: 'extracted_at',
      systemTime: null,
      tracked: ['name', 'price'],
      extract: { mode: 'full', cursor: null },
    })
    expect(
      contractText(contractOf({ ...table, tracked: { kind: 'list', columns: ['name', 'price'] } })),
    ).toBe(contractText(contract))
    expect(parseContract(table, contractText(contract), 'b1')).toEqual(contract)
  })

  it('tells unsafe changes (key, mode, valid_from, system time, metadata columns) from safe ones', () => {
    const base = tableSpec()
    const changes = contractChanges(
      contractOf(base),
      contractOf({
        ...base,
        key: ['customer_id', 'name'],
        columns: COLUMN_PRESETS.dbt,
        extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 },
      }),
    )
    expect(changes.map((c) => [describeChange(c), c.unsafe])).toEqual([
      ['key (customer_id) → (customer_id, name)', true],
      [
        expect.stringMatching(/^metadata columns batch_id dimsync_batch_id, .* → batch_id dbt_batch_id, /),
        true,
      ],
      ['tracked columns [name, price, updated_at] → [price]', false],
      ['extract full → incremental (cursor updated_at)', false],
    ])
  })

  it('a tracked set moved by the source alone is no config change; one moved by the config is', () => {
    const base = tableSpec()
    const fewer = tableContract(base, planDimensionLayout(base, 'b2', STAGED.slice(0, 3), undefined))
    expect(contractChanges(contractOf(base), fewer).map(describeChange)).toEqual([
      'tracked columns [name, price, updated_at] → [name, price]',
    ])
    expect(trackedConfigChanged(contractOf(base), fewer)).toBe(false)
    const keepFirst = contractOf({
      ...base,
      policies: { keepFirst: ['price'], previousValue: [], currentValue: [] },
    })
    expect(trackedConfigChanged(contractOf(base), keepFirst)).toBe(true)
  })

  it('change_detection is a safe change; a contract recorded before it existed reads as the row hash', () => {
    const base = tableSpec({ extract: { mode: 'incremental', cursor: 'updated_at', lookbackMinutes: 0 } })
    const versioned: TableSpec = {
      ...base,
      changeDetection: { versionColumn: 'updated_at', onSameVersion: 'overwrite' },
    }
    const changes = contractChanges(contractOf(base), contractOf(versioned))
    expect(changes.map((c) => [describeChange(c), c.unsafe])).toEqual([
      ['tracked columns [name, price] → [name, price, updated_at]', false],
      ['change_detection row hash → version_column updated_at (on_same_version overwrite)', false],
    ])
    const older: TableContract = { ...contractOf(base) }
    delete (older as { changeDetection?: unknown }).changeDetection
    expect(contractChanges(older, contractOf(base))).toEqual([])
  })

  it('a recorded text this version cannot read stops the merge, naming the table and batch', () => {
    expect(() => parseContract(tableSpec(), '{"version":2}', 'b9')).toThrow(ContractChangedError)
    expect(() => parseContract(tableSpec(), 'not json', 'b9')).toThrow(
      /table customers: the contract recorded with dim_customer by batch b9 is not one this version of dimsync reads/,
    )
  })
})
