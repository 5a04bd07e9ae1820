import { describe, expect, it } from 'vitest'
import { standaloneReads } from '../../../lib/sql/bigquery/standalone-reads.ts'
import { closedVersionReads } from '../../../lib/sql/bigquery/partition-filter-reads.ts'
import { EVENTS_FROM_VARIABLE } from '../../../lib/sql/bigquery/bigquery-script.ts'

const DIM = '`p`.`d`.`dim`'

describe('standaloneReads: the reads of a merge script BigQuery can dry-run one by one', () => {
  it('keeps queries and DML as written, the query of a temporary table, the query a variable is set from, each guard once', () => {
    const reads = standaloneReads([
      { label: 'ledger', sql: 'CREATE TABLE IF NOT EXISTS `p`.`d`.`_dimsync_batches` (x INT64)' },
      { label: 'check', sql: `SELECT ERROR('x') FROM ${DIM} d WHERE d.valid_to IS NULL HAVING COUNT(*) > 1` },
      {
        label: 'diff',
        sql: `CREATE OR REPLACE TEMP TABLE \`__dimsync_changes\` AS\nSELECT 1 AS k FROM ${DIM}`,
      },
      { label: 'earliest', sql: `SET ${EVENTS_FROM_VARIABLE} = (SELECT MIN(t) FROM \`p\`.\`d\`.\`stage\`)` },
      { label: 'close', sql: `UPDATE ${DIM} d SET valid_to = c.t FROM \`__dimsync_changes\` c WHERE TRUE` },
      {
        label: 'late',
        sql: `DELETE FROM ${DIM} WHERE valid_to >= ${EVENTS_FROM_VARIABLE}`,
        onlyIf: 'EXISTS (SELECT 1 FROM `p`.`d`.`stage`)',
      },
      {
        label: 'late 2',
        sql: `UPDATE ${DIM} SET x = 1 WHERE valid_to IS NULL`,
        onlyIf: 'EXISTS (SELECT 1 FROM `p`.`d`.`stage`)',
      },
      { label: 'drop', sql: 'DROP TABLE IF EXISTS `p`.`d`.`stage`' },
    ])
    expect(reads).toEqual([
      { label: 'check', sql: `SELECT ERROR('x') FROM ${DIM} d WHERE d.valid_to IS NULL HAVING COUNT(*) > 1` },
      { label: 'diff', sql: `SELECT 1 AS k FROM ${DIM}` },
      { label: 'earliest', sql: 'SELECT (SELECT MIN(t) FROM `p`.`d`.`stage`)' },
      { label: 'close', notEstimable: 'reads temporary table __dimsync_changes, which the script builds' },
      { label: 'guard of late', sql: 'SELECT EXISTS (SELECT 1 FROM `p`.`d`.`stage`)' },
      {
        label: 'late',
        notEstimable: `reads script variable ${EVENTS_FROM_VARIABLE}, set while the script runs`,
      },
      { label: 'late 2', sql: `UPDATE ${DIM} SET x = 1 WHERE valid_to IS NULL` },
    ])
  })

  it('a column named like a temporary table (a qualified reference) is not a read of it', () => {
    const reads = standaloneReads([
      { label: 'temp', sql: 'CREATE OR REPLACE TEMP TABLE `__dimsync_stats` AS\nSELECT 1 AS n' },
      { label: 'uses column', sql: `SELECT s.\`__dimsync_stats\` FROM ${DIM} s` },
    ])
    expect(reads[1]).toEqual({ label: 'uses column', sql: `SELECT s.\`__dimsync_stats\` FROM ${DIM} s` })
  })
})

describe('closedVersionReads: merge statements that may read closed versions of the dimension', () => {
  it('names guarded statements and mirror / bitemporal reads of the dimension, not those of other tables or the old-dimension key bootstrap', () => {
    const statement = (label: string, sql: string, onlyIf?: string) => ({
      label,
      sql,
      ...(onlyIf ? { onlyIf } : {}),
    })
    const script = {
      ddl: [],
      merge: [
        statement('diff', `SELECT 1 FROM ${DIM} WHERE valid_to IS NULL`),
        statement('overwrite type 1 columns', `UPDATE ${DIM} SET x = 1 WHERE TRUE`, 'TRUE'),
        statement('keys', 'UPDATE `p`.`d`.`dim_dimsync_keys` SET n = 1 WHERE TRUE', 'TRUE'),
        statement(
          'surrogate keys: record the highest key given out (a dimension without a record)',
          `INSERT INTO k SELECT MAX(sk) FROM ${DIM}`,
          'TRUE',
        ),
        statement('mirror: retire replaced rows', `DELETE FROM ${DIM} WHERE TRUE`),
      ],
      after: [],
      text: '',
    }
    expect(closedVersionReads(script, DIM)).toEqual([
      'overwrite type 1 columns',
      'mirror: retire replaced rows',
    ])
  })
})
