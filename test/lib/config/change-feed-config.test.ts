import { describe, expect, it } from 'vitest'
import { parseProject } from '../../../lib/config/parse-project.ts'
import { CONFIG_PATH, configIssues, oneTableYaml } from '../../support/config-text.ts'

const CONFIG = CONFIG_PATH
const FILE = 'source: { type: file, path: data/changes/*.parquet }'
const DATABASE = 'source: { type: postgres, url_env: SHOP_DB, table: public.customer_changes }'

const table = (body: string, source = FILE) => oneTableYaml(`${source}\n${body}`)
const issuesOf = configIssues

describe('extract: { mode: changes }', () => {
  it('reads AWS DMS output out of the box: Op = I/U/D, delete events close versions, a file feed is read whole', () => {
    const spec = parseProject(
      table('key: customer_id\nextract: { mode: changes }\nvalid_from: { column: dms_ts }'),
      CONFIG,
    ).tables[0]!
    expect(spec.changes).toEqual({ operation: { column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] } })
    expect(spec.extract).toEqual({ mode: 'full' })
    expect(spec.deletes).toBe('invalidate')
  })

  it('format: dms reads files as AWS DMS writes them; a database source or a headerless CSV without declared columns is refused', () => {
    const spec = parseProject(
      table('key: customer_id\nextract: { mode: changes, format: dms }\nvalid_from: { column: dms_ts }'),
      CONFIG,
    ).tables[0]!
    expect(spec.changes).toMatchObject({ format: 'dms', operation: { column: 'Op' } })
    expect(
      issuesOf(
        table(
          'key: id\nextract: { mode: changes, format: dms, sequence: seq }\nvalid_from: { column: changed_at }',
          DATABASE,
        ),
      ),
    ).toEqual([
      'tables[0].extract.format: format: dms reads the files a CDC tool writes; a postgres source is read by its columns',
    ])
    expect(
      issuesOf(
        table(
          'key: id\nextract: { mode: changes, format: dms }\nvalid_from: { column: dms_ts }',
          "source: { type: file, path: 'dms/*.csv', header: false }",
        ),
      ),
    ).toEqual([
      'tables[0].source.columns: AWS DMS writes CSV without a header (unless AddColumnName is set): declare its columns in the order of the files, e.g. columns: { Op: VARCHAR, dms_ts: VARCHAR, customer_id: BIGINT, … }',
    ])
  })

  it('format: debezium takes Debezium operation values (c/r, u, d, t) and reads .json files only', () => {
    const spec = parseProject(
      table(
        'key: id\nextract: { mode: changes, format: debezium, sequence: source_lsn }\nvalid_from: { column: source_ts_ms }',
        "source: { type: file, path: 'topics/shop.public.customers/*.json' }",
      ),
      CONFIG,
    ).tables[0]!
    expect(spec.source).toMatchObject({ format: 'json' })
    expect(spec.changes).toEqual({
      format: 'debezium',
      sequence: 'source_lsn',
      operation: { column: 'op', insert: ['c', 'r'], update: ['u'], delete: ['d'], truncate: ['t'] },
    })
    expect(
      issuesOf(
        table('key: id\nextract: { mode: changes, format: debezium }\nvalid_from: { column: source_ts_ms }'),
      ),
    ).toEqual([
      "tables[0].source.format: format: debezium reads Debezium's JSON lines: name .json files, or set format: json in the source",
    ])
    expect(
      issuesOf(
        table(
          'key: id\nextract: { mode: changes }\nvalid_from: { column: t }',
          'source: { type: file, path: e.jsonl }',
        ),
      ),
    ).toEqual([
      'tables[0].source.format: JSON files are read as Debezium change events only: set extract: { mode: changes, format: debezium }',
    ])
  })

  it('a database feed is read after a watermark of its sequence unless it names another cursor, never its change time', () => {
    const bySequence = parseProject(
      table(
        'key: id\nextract: { mode: changes, sequence: seq }\nvalid_from: { column: changed_at }',
        DATABASE,
      ),
      CONFIG,
    ).tables[0]!
    expect(bySequence.extract).toEqual({ mode: 'incremental', cursor: 'seq', lookbackMinutes: 0 })
    const byLsn = parseProject(
      table(
        'key: id\nextract: { mode: changes, cursor: lsn, sequence: seq }\nvalid_from: { column: changed_at }',
        DATABASE,
      ),
      CONFIG,
    ).tables[0]!
    expect(byLsn.extract).toEqual({ mode: 'incremental', cursor: 'lsn', lookbackMinutes: 0 })
    // The change time goes backwards (a late event, a correction): reading after its watermark loses events.
    expect(
      issuesOf(
        table(
          'key: id\nextract: { mode: changes, lookback_minutes: 5 }\nvalid_from: { column: changed_at }',
          DATABASE,
        ),
      ),
    ).toEqual([
      'tables[0].extract: a change feed read from a database needs a column that only grows in commit order to read it by: set sequence: <column> (the change sequence or log position the CDC tool writes; it is then the cursor) or cursor: <column>. The change time cannot be the cursor: a change inserted later with an older change time would never be read',
    ])
    expect(
      issuesOf(
        table(
          'key: id\nextract: { mode: changes, cursor: Changed_At }\nvalid_from: { column: changed_at }',
          DATABASE,
        ),
      ),
    ).toEqual([
      'tables[0].extract.cursor: a change feed read from a database by its change time "Changed_At" loses late events: a change inserted later with an older change time than the last run read would never be read; read it by a column that only grows in commit order: sequence: <column> (the change sequence or log position the CDC tool writes) or cursor: <column>',
    ])
    expect(
      issuesOf(
        table(
          'key: id\nextract: { mode: changes, cursor: changed_at, sequence: seq }\nvalid_from: { column: changed_at }',
          DATABASE,
        ),
      ),
    ).toEqual([
      'tables[0].extract.cursor: a change feed read from a database by its change time "changed_at" loses late events: a change inserted later with an older change time than the last run read would never be read; remove cursor (the sequence "seq" is then the cursor)',
    ])
  })

  it('takes another operation column, other values (one or several), a sequence and another delete policy', () => {
    const spec = parseProject(
      table(`key: id
extract:
  mode: changes
  operation: { column: op, insert: [c, r], update: u, delete: d }
  sequence: lsn
valid_from: { column: ts_ms }
deletes: new_record`),
      CONFIG,
    ).tables[0]!
    expect(spec.changes).toEqual({
      operation: { column: 'op', insert: ['c', 'r'], update: ['u'], delete: ['d'] },
      sequence: 'lsn',
    })
    expect(spec.deletes).toBe('new_record')
    expect(
      parseProject(
        table('key: id\nextract: { mode: changes, operation: change_kind }\nvalid_from: { column: t }'),
        CONFIG,
      ).tables[0]!.changes!.operation,
    ).toEqual({ column: 'change_kind', insert: ['I'], update: ['U'], delete: ['D'] })
  })

  it('refuses a feed without a change time, clashing columns and values, a cursor on a file feed', () => {
    expect(issuesOf(table('key: id\nextract: { mode: changes }'))).toEqual([
      'tables[0].valid_from: a change feed needs valid_from: { column: <change time column> }: each event happens at its own time',
    ])
    expect(
      issuesOf(
        table(
          'key: id\nextract: { mode: changes, operation: { update: [U, D] }, sequence: Op, cursor: ts }\nvalid_from: { column: ts }\nexclude: [Op]',
        ),
      ),
    ).toEqual([
      'tables[0].extract.operation.delete: "D" is also an update value; each operation value must mean one thing',
      'tables[0].extract.sequence: "Op" is also the operation column',
      'tables[0].extract.cursor: a file change feed is read whole on every run (events already merged are skipped); cursor applies to database sources only',
      'tables[0].extract.operation: the operation column "Op" is in exclude; it must be extracted',
      'tables[0].extract.sequence: the sequence column "Op" is in exclude; it must be extracted',
    ])
    expect(
      issuesOf(
        table('key: id\nextract: { mode: changes, operation: { insert: [] } }\nvalid_from: { column: ts }'),
      ),
    ).toEqual(['tables[0].extract.operation.insert: must not be empty'])
  })

  it('sorts operation values by rule with ops: insert, update, delete, and ignore (rows skipped)', () => {
    const spec = parseProject(
      table(`key: id
extract:
  mode: changes
  operation: op
  ops: { insert: [c, r], update: u, delete: d, ignore: [B, heartbeat] }
valid_from: { column: ts_ms }`),
      CONFIG,
    ).tables[0]!
    expect(spec.changes!.operation).toEqual({
      column: 'op',
      insert: ['c', 'r'],
      update: ['u'],
      delete: ['d'],
      ignore: ['B', 'heartbeat'],
    })
    // Unnamed operations keep AWS DMS's values.
    expect(
      parseProject(
        table('key: id\nextract: { mode: changes, ops: { ignore: B } }\nvalid_from: { column: t }'),
        CONFIG,
      ).tables[0]!.changes!.operation,
    ).toEqual({ column: 'Op', insert: ['I'], update: ['U'], delete: ['D'], ignore: ['B'] })
    expect(
      issuesOf(
        table(
          'key: id\nextract: { mode: changes, operation: { column: op, delete: x }, ops: { ignore: [B] } }\nvalid_from: { column: t }',
        ),
      ),
    ).toEqual([
      'tables[0].extract.ops: operation values are given in extract.operation too; give them in one place: operation: <column> and ops: { insert, update, delete, ignore }',
    ])
    expect(
      issuesOf(
        table(
          'key: id\nextract: { mode: changes, ops: { ignore: [D, X], nope: [1] } }\nvalid_from: { column: t }',
        ),
      ),
    ).toEqual(['tables[0].extract.ops: unknown key "nope"'])
    expect(
      issuesOf(
        table('key: id\nextract: { mode: changes, ops: { ignore: [D, X] } }\nvalid_from: { column: t }'),
      ),
    ).toEqual([
      'tables[0].extract.ops.ignore: "D" is also a delete value; each operation value must mean one thing',
    ])
  })

  it('ops.truncate names the values of a truncate (none by default), each meaning one thing', () => {
    expect(
      parseProject(
        table('key: id\nextract: { mode: changes, ops: { truncate: [T, t] } }\nvalid_from: { column: t }'),
        CONFIG,
      ).tables[0]!.changes?.operation,
    ).toEqual({ column: 'Op', insert: ['I'], update: ['U'], delete: ['D'], truncate: ['T', 't'] })
    expect(
      issuesOf(table('key: id\nextract: { mode: changes, ops: { truncate: D } }\nvalid_from: { column: t }')),
    ).toEqual([
      'tables[0].extract.ops.truncate: "D" is also a delete value; each operation value must mean one thing',
    ])
  })

  it('names the modes when one is misspelled', () => {
    expect(issuesOf(table('key: id\nextract: { mode: change }'))).toEqual([
      'tables[0].extract.mode: must be one of full, incremental, changes (got "change"); did you mean "changes"?',
    ])
  })
})
