import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runDimsync } from '../support/cli-process.ts'

/** CSV values through the real CLI process: what `dimsync run` stores is what `dimsync history` finds. */

let work: string

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'dimsync-cli-csv-'))
  writeFileSync(
    join(work, 'dimsync.yaml'),
    'version: 1\ntables:\n  - name: cards\n    source: { type: file, path: cards.csv }\n    key: iccid\n',
  )
})
afterEach(() => rmSync(work, { recursive: true, force: true }))

/** The cards table keyed by its `id` column (the default config keys it by `iccid`). */
function keyedById(): void {
  writeFileSync(
    join(work, 'dimsync.yaml'),
    'version: 1\ntables:\n  - name: cards\n    source: { type: file, path: cards.csv }\n    key: id\n',
  )
}

function dimsync(...args: string[]) {
  return runDimsync(work, args)
}

describe('dimsync run and history on a CSV of 20-digit keys', () => {
  it(
    'two keys that differ in their last digit stay two keys, and history --key finds each',
    { timeout: 120_000 },
    () => {
      writeFileSync(
        join(work, 'cards.csv'),
        'iccid,plan\n89310410106543789301,basic\n89310410106543789302,pro\n',
      )
      const run = dimsync('run', '--table', 'cards')
      expect(run.code, run.err).toBe(0)
      const history = dimsync('history', 'cards', '--key', '89310410106543789301', '--format', 'json')
      expect(history.code).toBe(0)
      expect(
        history.out
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .map((row) => [String(row.iccid), row.plan]),
      ).toEqual([['89310410106543789301', 'basic']])
    },
  )

  it(
    'dates that read day first and month first are refused until their format is declared, then never flip',
    { timeout: 120_000 },
    () => {
      keyedById()
      writeFileSync(join(work, 'cards.csv'), 'id,d\n1,01/02/2024\n2,03/04/2024\n')
      const guessed = dimsync('run', '--table', 'cards')
      expect(guessed.code).toBe(1)
      expect(guessed.err).toContain(
        'dimsync: cards: column d of cards.csv holds dates that read two ways: 01/02/2024 and 03/04/2024',
      )
      writeFileSync(
        join(work, 'dimsync.yaml'),
        'version: 1\ntables:\n  - name: cards\n    source:\n      type: file\n      path: cards.csv\n' +
          "      columns: { d: { type: DATE, format: '%d/%m/%Y' } }\n    key: id\n",
      )
      expect(dimsync('run', '--table', 'cards').code).toBe(0)
      writeFileSync(join(work, 'cards.csv'), 'id,d\n1,01/02/2024\n2,03/04/2024\n3,02/13/2024\n')
      const flipped = dimsync('run', '--table', 'cards')
      expect(flipped.code).toBe(1)
      expect(flipped.err).toContain(
        'dimsync: cards: cards.csv line 4: column d holds 02/13/2024, which is not a DATE written as %d/%m/%Y',
      )
      const history = dimsync('history', 'cards', '--format', 'json')
      expect(
        history.out
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .map((row) => [row.id, row.d, row.is_current]),
      ).toEqual([
        [1, '2024-02-01', true],
        [2, '2024-04-03', true],
      ])
    },
  )

  it(
    'validate reads a CSV with the types its merged loads recorded, as run does',
    { timeout: 120_000 },
    () => {
      keyedById()
      // 13/01/2024 reads one way only: the first load records day first.
      writeFileSync(join(work, 'cards.csv'), 'id,d\n1,13/01/2024\n')
      expect(dimsync('run', '--table', 'cards').code).toBe(0)
      // Alone, 01/02/2024 reads two ways; the recorded type says which.
      writeFileSync(join(work, 'cards.csv'), 'id,d\n2,01/02/2024\n3,03/04/2024\n')
      const run = dimsync('run', '--table', 'cards')
      expect(run.code, run.err).toBe(0)
      const validate = dimsync('validate')
      expect({ code: validate.code, err: validate.err }).toEqual({ code: 0, err: '' })
    },
  )

  it(
    'a number written with leading zeros in a column first loaded as numbers is refused, not stored without them; declared, it is read as declared',
    { timeout: 120_000 },
    () => {
      keyedById()
      writeFileSync(join(work, 'cards.csv'), 'id,zip,rate\n1,12345,1.5\n')
      expect(dimsync('run', '--table', 'cards').code).toBe(0)
      const history = () => dimsync('history', 'cards', '--format', 'json').out
      const before = history()
      // A ZIP code of Boston: as the BIGINT the column was first loaded as, it would be stored as 2134.
      writeFileSync(join(work, 'cards.csv'), 'id,zip,rate\n1,12345,1.5\n2,02134,2.5\n')
      const zip = dimsync('run', '--table', 'cards')
      expect(zip.code).toBe(1)
      expect(zip.err).toContain(
        'cards.csv line 3: column zip holds 02134, a number written with leading zeros, which a BIGINT (the type the column was first loaded as) would store as 2134; nothing was staged',
      )
      expect(zip.err).toContain('columns: { zip: VARCHAR }')
      writeFileSync(join(work, 'cards.csv'), 'id,zip,rate\n1,12345,1.5\n2,92134,-01.5\n')
      const rate = dimsync('run', '--table', 'cards')
      expect(rate.code).toBe(1)
      expect(rate.err).toContain(
        'cards.csv line 3: column rate holds -01.5, a number written with leading zeros',
      )
      expect(history()).toBe(before)
      // Declared as a number, leading zeros are the user's choice: 007 is 7.
      writeFileSync(
        join(work, 'dimsync.yaml'),
        'version: 1\ntables:\n  - name: cards\n    source: { type: file, path: cards.csv, columns: { zip: BIGINT } }\n    key: id\n',
      )
      writeFileSync(join(work, 'cards.csv'), 'id,zip,rate\n1,12345,1.5\n2,007,0.5\n')
      const declared = dimsync('run', '--table', 'cards')
      expect(declared.code, declared.err).toBe(0)
      expect(history()).toContain('"zip":7')
    },
  )
})
