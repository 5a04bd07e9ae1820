import { COLUMN_PRESETS } from '../../lib/config/index.ts'
import type { TableSpec } from '../../lib/core/table-spec.ts'

export const DIMSYNC_COLUMNS = COLUMN_PRESETS.dimsync

/** A customers table spec with test defaults; override what a scenario is about. */
export function tableSpec(overrides: Partial<TableSpec> = {}): TableSpec {
  return {
    name: 'customers',
    source: { type: 'file', path: 'customers.csv', format: 'csv', csv: { delimiter: ',', header: true } },
    target: 'dim_customer',
    key: ['customer_id'],
    mode: 'history',
    extract: { mode: 'full' },
    validFrom: { kind: 'extracted_at' },
    tracked: { kind: 'all_except', columns: [] },
    exclude: [],
    deletes: 'ignore',
    maxDeleteShare: 0.5,
    openEnd: null,
    columns: DIMSYNC_COLUMNS,
    ...overrides,
  }
}
