import { describe, expect, it } from 'vitest'
import { describePlan, formatBytes } from '../../functions/local/format-plan.ts'
import type { RunTableResult } from '../../lib/use-cases/run-table.ts'
import { tableSpec } from '../support/table-spec-builder.ts'

const base = { runId: 'r', table: 'customers', resumed: [], batchId: 'b', rows: 3 }

describe('describePlan', () => {
  it('reports key changes of a DuckDB dry run', () => {
    const result: RunTableResult = {
      ...base,
      merge: {
        status: 'dry-run',
        batchId: 'b',
        statements: [],
        keys: { newKeys: 1, changedKeys: 1, deletedKeys: 0 },
        counts: {
          events: 3,
          insertedVersions: 2,
          closedVersions: 1,
          deletedKeys: 0,
          unchangedEvents: 1,
          lateKeys: 0,
        },
      },
    }
    expect(describePlan(tableSpec(), result)).toBe(
      'customers: 3 rows extracted; would add 1 new keys, change 1, delete 0, leave 1 unchanged, recompute 0 late keys (2 versions inserted, 1 closed)',
    )
  })

  it('reports the bytes a BigQuery dry run estimates', () => {
    const result: RunTableResult = {
      ...base,
      merge: { status: 'dry-run', batchId: 'b', statements: [], bytesProcessed: 123_456_789 },
    }
    expect(describePlan(tableSpec(), result)).toBe(
      'customers: 3 rows extracted; BigQuery estimates the merge would process 117.7 MiB (123456789 bytes; a dry run: nothing was written, counts are known after a run)',
    )
  })

  it('lists the bytes of each read a BigQuery dry run priced, and names those it could not price', () => {
    const result: RunTableResult = {
      ...base,
      merge: {
        status: 'dry-run',
        batchId: 'b',
        statements: [],
        bytesProcessed: 3072,
        reads: [
          { label: 'check NULL keys', bytes: 1024 },
          { label: 'diff snapshot against current versions', bytes: 2048 },
          {
            label: 'close changed current versions',
            notEstimable: 'reads temporary table __dimsync_changes, which the script builds',
          },
        ],
      },
    }
    expect(describePlan(tableSpec(), result)).toBe(
      'customers: 3 rows extracted; BigQuery estimates the merge would process 3.0 KiB (3072 bytes; a dry run: ' +
        'nothing was written, counts are known after a run); at least, per read:\n' +
        '  check NULL keys: 1.0 KiB\n' +
        '  diff snapshot against current versions: 2.0 KiB\n' +
        '  close changed current versions: not estimated (reads temporary table __dimsync_changes, which the script builds)',
    )
  })

  it('shows what a run would refuse (a partition expiration deleting closed history) as a warning', () => {
    const result: RunTableResult = {
      ...base,
      merge: {
        status: 'dry-run',
        batchId: 'b',
        statements: [],
        bytesProcessed: 0,
        warnings: [
          'table customers: dataset acme-dw.history has a default partition expiration of 90 days …',
        ],
      },
    }
    expect(describePlan(tableSpec(), result).split('\n').at(-1)).toBe(
      '  warning: table customers: dataset acme-dw.history has a default partition expiration of 90 days …',
    )
  })

  it('formats bytes', () => {
    expect(formatBytes(512)).toBe('512 B')
    expect(formatBytes(4 * 1024 ** 3)).toBe('4.0 GiB')
  })
})
