import { describe, expect, it } from 'vitest'
import { describePlan, formatBytes, parsePlanKeys } from '../../functions/local/format-plan.ts'
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

  it('says what a change feed batch would do, in words', () => {
    const feed = tableSpec({
      validFrom: { kind: 'column', column: 'changed_at' },
      changes: { operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } },
    })
    const result: RunTableResult = {
      ...base,
      rows: 7,
      merge: {
        status: 'dry-run',
        batchId: 'b',
        statements: [],
        keys: { newKeys: 1, changedKeys: 1, deletedKeys: 1 },
        counts: {
          events: 7,
          insertedVersions: 4,
          closedVersions: 2,
          deletedKeys: 1,
          unchangedEvents: 1,
          lateKeys: 1,
        },
        feed: { events: 7, keysTouched: 3, deleteEvents: 2, truncateEvents: 0, corrections: 1 },
      },
    }
    expect(describePlan(feed, result)).toBe(
      'customers: 7 events read, 3 keys touched; would open 4 versions and close 2, re-fold 1 late key, ' +
        'correct 1 event in place, delete 1 key (2 delete events), apply 0 truncates; 1 event changes nothing',
    )
  })

  it('reads --keys: single keys split on commas, composite keys on semicolons', () => {
    expect(parsePlanKeys(tableSpec(), '101, 102')).toEqual([
      [['customer_id', '101']],
      [['customer_id', '102']],
    ])
    const composite = tableSpec({ key: ['a', 'b'] })
    expect(parsePlanKeys(composite, 'a=1,b=2;a=3,b=4')).toEqual([
      [
        ['a', '1'],
        ['b', '2'],
      ],
      [
        ['a', '3'],
        ['b', '4'],
      ],
    ])
    expect(() => parsePlanKeys(composite, '1,2')).toThrow(/--key: expected column=value pairs/)
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

  it('adds what a change feed batch holds to a BigQuery dry run', () => {
    const result: RunTableResult = {
      ...base,
      merge: {
        status: 'dry-run',
        batchId: 'b',
        statements: [],
        bytesProcessed: 2048,
        feed: { events: 3, keysTouched: 2, deleteEvents: 1, truncateEvents: 0, corrections: 1 },
      },
    }
    expect(describePlan(tableSpec(), result)).toBe(
      'customers: 3 rows extracted; BigQuery estimates the merge would process 2.0 KiB (2048 bytes; a dry run: ' +
        'nothing was written, counts are known after a run); the batch holds 3 events of 2 keys (1 corrections ' +
        'in place, 1 delete events, 0 truncates)',
    )
  })

  it('formats bytes', () => {
    expect(formatBytes(512)).toBe('512 B')
    expect(formatBytes(4 * 1024 ** 3)).toBe('4.0 GiB')
  })
})
