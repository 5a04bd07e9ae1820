import type { TestBatches } from './staged-batches.ts'

/** The staged columns of `stageWideShuffledRows`. */
export const WIDE_ROW_COLUMNS = [
  { name: 'id', type: 'BIGINT' },
  { name: 'name', type: 'VARCHAR' },
  { name: 'email', type: 'VARCHAR' },
  { name: 'birth', type: 'DATE' },
  { name: 'note', type: 'VARCHAR' },
]

/**
 * A full extract of `rows` wide rows whose keys 1..rows come in shuffled order, so that numbering them must sort:
 * row i has key (i * 7919) % rows + 1 (7919 is prime: every key once unless rows is a multiple of it), name
 * 'name i', email 'user i@example.com', a distinct date and a note. Staged as one batch of table `table`,
 * extracted at 2024-01-01; returns the batch id.
 */
export async function stageWideShuffledRows(
  staging: TestBatches,
  table: string,
  rows: number,
): Promise<string> {
  const generated = {
    select:
      `SELECT (i * 7919) % ${rows} + 1, 'name ' || i, 'user' || i || '@example.com', DATE '1970-01-01' + CAST(i AS INTEGER), ` +
      `CASE WHEN i % 3 = 0 THEN NULL ELSE 'note ' || md5(CAST(i AS VARCHAR)) END FROM range(${rows}) r(i)`,
    length: rows,
  }
  return staging.stage(table, WIDE_ROW_COLUMNS, generated, { extractedAt: '2024-01-01T00:00:00.000Z' })
}
