import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { BigQueryError } from './api-errors.ts'
import { ScriptInterpreter, type ScriptOutcome, type StatementInfo } from './script-interpreter.ts'
import { StatementExecutor } from './statement-executor.ts'
import { TableStore } from './table-store.ts'
import { isNull, scalarText } from './values.ts'
import { ZetaSqlService } from './zetasql-service.ts'

let zeta: ZetaSqlService
let interpreter: ScriptInterpreter
let store: TableStore
let now: number

beforeAll(async () => {
  zeta = await ZetaSqlService.start()
  interpreter = new ScriptInterpreter(zeta, new StatementExecutor(zeta))
})
afterAll(async () => {
  await zeta.stop()
})
beforeEach(() => {
  now = Date.parse('2024-06-01T00:00:00Z')
  store = new TableStore(() => now)
  store.putDataset({ projectId: 'p', datasetId: 'd', location: 'EU', creationMs: now })
  store.putDataset({ projectId: 'p', datasetId: 'us_data', location: 'US', creationMs: now })
})

async function run(sql: string, beforeStatement?: (s: StatementInfo) => void): Promise<ScriptOutcome> {
  return interpreter.run(sql, store, {
    projectId: 'p',
    location: 'EU',
    jobId: 'job_1',
    ...(beforeStatement ? { beforeStatement } : {}),
  })
}

/** The last query's rows as text. */
async function rows(sql: string): Promise<Record<string, string | null>[]> {
  const result = (await run(sql)).result!
  return result.rows.map((cells) =>
    Object.fromEntries(
      result.columns.map((c, i) => [c.field.name, isNull(cells[i]) ? null : scalarText(c.type, cells[i])]),
    ),
  )
}

async function failure(sql: string, beforeStatement?: (s: StatementInfo) => void): Promise<BigQueryError> {
  const error = await run(sql, beforeStatement).catch((e: unknown) => e)
  if (!(error instanceof BigQueryError)) throw new Error(`expected a BigQuery error, got ${String(error)}`)
  return error
}

const table = (tableId: string) => store.getTable({ projectId: 'p', datasetId: 'd', tableId })

describe('script interpreter: procedural statements', () => {
  it('DECLARE, SET, IF / ELSEIF / ELSE, case-insensitive variables; the script’s result is its last query', async () => {
    const outcome = await run(`DECLARE n INT64 DEFAULT 2;
DECLARE label STRING;
IF n > 5 THEN SET label = 'big';
ELSEIF N = 2 THEN SET Label = CONCAT('two:', CAST(n AS STRING));
ELSE SET label = 'other';
END IF;
SELECT label AS l, n + 1 AS m;`)
    expect(outcome.isScript).toBe(true)
    expect(outcome.statementType).toBe('SCRIPT')
    const result = outcome.result!
    expect(result.rows.map((r) => r.map((c, i) => scalarText(result.columns[i]!.type, c)))).toEqual([
      ['two:2', '3'],
    ])
  })

  it('coerces a DEFAULT along BigQuery’s widening conversions only', async () => {
    expect(await rows(`DECLARE x NUMERIC DEFAULT 3; SELECT x * 1.5 AS y;`)).toEqual([{ y: '4.5' }])
    expect((await failure(`DECLARE x INT64 DEFAULT 'a';`)).message).toMatch(
      /Cannot coerce expression of type STRING to type INT64/,
    )
  })

  it('an exception handler sees @@error.message and @@error.statement_text; RAISE USING MESSAGE fails the script as invalidQuery', async () => {
    const error = await failure(`DECLARE step STRING DEFAULT 'start';
BEGIN
  SET step = 'divide';
  SELECT 1 / 0;
EXCEPTION WHEN ERROR THEN
  RAISE USING MESSAGE = CONCAT('step ', step, ': ', @@error.message, ' in ', @@error.statement_text);
END;`)
    expect(error.reason).toBe('invalidQuery')
    expect(error.message).toBe('step divide: division by zero: 1 / 0 in SELECT 1 / 0')
  })

  it('RAISE without a message re-raises the caught error with its reason (a transient failure stays transient)', async () => {
    const injected = (s: StatementInfo) => {
      if (s.text.startsWith('SELECT 42'))
        throw new BigQueryError('backendError', 'Transaction is aborted due to concurrent update')
    }
    const error = await failure(`BEGIN SELECT 42; EXCEPTION WHEN ERROR THEN RAISE; END;`, injected)
    expect(error.reason).toBe('backendError')
    expect(error.message).toBe('Transaction is aborted due to concurrent update')
  })

  it('variables of a block are not visible in its handler; RETURN ends the script', async () => {
    const error = await failure(`BEGIN DECLARE inner_var INT64 DEFAULT 1; SELECT 1 / 0;
EXCEPTION WHEN ERROR THEN SELECT inner_var; END;`)
    expect(error.message).toMatch(/^Unrecognized name: inner_var at \[2:34\]$/)
    const outcome = await run(`SELECT 1 AS a; RETURN; SELECT 2 AS a;`)
    expect(scalarText(outcome.result!.columns[0]!.type, outcome.result!.rows[0]![0])).toBe('1')
  })
})

describe('script interpreter: transactions', () => {
  it('a failed transaction restores every table it wrote; DDL before BEGIN stays', async () => {
    await run(`CREATE TABLE d.t (id INT64, s STRING); INSERT INTO d.t (id, s) VALUES (1, 'kept');`)
    const error = await failure(`CREATE TABLE d.created_before (x INT64);
CREATE TEMP TABLE scratch AS SELECT 1 AS x;
BEGIN TRANSACTION;
INSERT INTO d.t (id, s) VALUES (2, 'lost');
UPDATE d.t SET s = 'changed' WHERE id = 1;
INSERT INTO d.created_before (x) VALUES (1);
SELECT ERROR('refused');
COMMIT TRANSACTION;`)
    expect(error.message).toBe('refused')
    expect(await rows(`SELECT id, s FROM d.t ORDER BY id`)).toEqual([{ id: '1', s: 'kept' }])
    expect(table('created_before')?.rows).toEqual([])
  })

  it('a transaction still open when the script ends is rolled back; COMMIT keeps; handlers may roll back and go on', async () => {
    await run(`CREATE TABLE d.t (id INT64);`)
    await run(`BEGIN TRANSACTION; INSERT INTO d.t (id) VALUES (1);`)
    expect(table('t')?.rows).toEqual([])
    await run(`BEGIN TRANSACTION; INSERT INTO d.t (id) VALUES (2); COMMIT TRANSACTION;`)
    await run(`BEGIN
  BEGIN TRANSACTION;
  INSERT INTO d.t (id) VALUES (3);
  SELECT ERROR('x');
  COMMIT TRANSACTION;
EXCEPTION WHEN ERROR THEN
  ROLLBACK TRANSACTION;
END;
INSERT INTO d.t (id) VALUES (4);`)
    expect(await rows(`SELECT id FROM d.t ORDER BY id`)).toEqual([{ id: '2' }, { id: '4' }])
  })

  it('refuses DDL on permanent tables inside a transaction, nested transactions, and COMMIT without one', async () => {
    expect(
      (await failure(`BEGIN TRANSACTION; CREATE TABLE d.x (a INT64); COMMIT TRANSACTION;`)).message,
    ).toMatch(/not supported inside a transaction/)
    expect((await failure(`BEGIN TRANSACTION; BEGIN TRANSACTION;`)).message).toMatch(/cannot be nested/)
    expect((await failure(`COMMIT TRANSACTION;`)).message).toMatch(/no active transaction/)
    expect(table('x')).toBeUndefined()
    const outcome = await run(`BEGIN TRANSACTION;
CREATE OR REPLACE TEMP TABLE tmp AS SELECT 1 AS a;
COMMIT TRANSACTION;
SELECT a FROM tmp;`)
    expect(outcome.result?.rows.length).toBe(1)
  })

  it('temporary tables live as long as their script', async () => {
    await run(`CREATE TEMP TABLE tmp (a INT64); INSERT INTO tmp (a) VALUES (1);`)
    expect((await failure(`SELECT * FROM tmp`)).message).toMatch(
      /^Table name "tmp" missing dataset while no default dataset is set in the request\. at \[1:15\]$/,
    )
  })
})

describe('script interpreter: DDL with BigQuery’s rules', () => {
  it('keeps descriptions, NOT NULL, parameters, partitioning, clustering, the primary key and the expiration', async () => {
    await run(`CREATE TABLE \`p\`.\`d\`.\`t\` (
  id INT64 NOT NULL OPTIONS(description = 'the key'),
  amount NUMERIC(12, 2),
  valid_to TIMESTAMP,
  PRIMARY KEY (id) NOT ENFORCED
)
PARTITION BY TIMESTAMP_TRUNC(valid_to, MONTH)
CLUSTER BY id
OPTIONS(description = 'a table', expiration_timestamp = TIMESTAMP '2024-07-01 00:00:00+00', labels = [('team', 'dw')])`)
    const t = table('t')!
    expect(t.columns.map((c) => c.field)).toEqual([
      { name: 'id', type: 'INTEGER', mode: 'REQUIRED', description: 'the key' },
      { name: 'amount', type: 'NUMERIC', mode: 'NULLABLE', precision: '12', scale: '2' },
      { name: 'valid_to', type: 'TIMESTAMP', mode: 'NULLABLE' },
    ])
    expect(t.metadata).toEqual({
      description: 'a table',
      expirationMs: Date.parse('2024-07-01T00:00:00Z'),
      labels: { team: 'dw' },
      timePartitioning: { type: 'MONTH', field: 'valid_to' },
      clustering: { fields: ['id'] },
      primaryKey: ['id'],
    })
    now = Date.parse('2024-07-01T00:00:00Z')
    expect(table('t')).toBeUndefined()
  })

  it('IF NOT EXISTS keeps an existing table as it is; a plain CREATE of an existing table is a duplicate; OR REPLACE empties it', async () => {
    await run(`CREATE TABLE d.t (a INT64); INSERT INTO d.t (a) VALUES (1);`)
    expect((await run(`CREATE TABLE IF NOT EXISTS d.t (b STRING)`)).ddl?.operation).toBe('SKIP')
    expect(table('t')?.rows.length).toBe(1)
    const duplicate = await failure(`CREATE TABLE d.t (a INT64)`)
    expect([duplicate.reason, duplicate.message]).toEqual(['duplicate', 'Already Exists: Table p:d.t'])
    await run(`CREATE OR REPLACE TABLE d.t (c DATE)`)
    expect(table('t')?.columns.map((c) => c.field.name)).toEqual(['c'])
  })

  it('refuses what BigQuery refuses: partitions, clustering, options', async () => {
    expect((await failure(`CREATE TABLE d.a (ts TIMESTAMP) PARTITION BY ts`)).message).toMatch(
      /^PARTITION BY expression must be/,
    )
    expect((await failure(`CREATE TABLE d.a (dt DATE) PARTITION BY DATE_TRUNC(dt, DAY)`)).message).toMatch(
      /^PARTITION BY expression must be/,
    )
    await run(`CREATE TABLE d.ok1 (dt DATE) PARTITION BY DATE_TRUNC(dt, YEAR)`)
    await run(`CREATE TABLE d.ok2 (n INT64) PARTITION BY RANGE_BUCKET(n, GENERATE_ARRAY(0, 100, 10))`)
    expect(table('ok2')?.metadata.rangePartitioning).toEqual({
      field: 'n',
      range: { start: '0', end: '100', interval: '10' },
    })
    expect(
      (
        await failure(
          `CREATE TABLE d.a (a INT64, b INT64, c INT64, e INT64, f INT64) CLUSTER BY a, b, c, e, f`,
        )
      ).message,
    ).toMatch(/Too many clustering fields: 5/)
    expect((await failure(`CREATE TABLE d.a (t TIME) CLUSTER BY t`)).message).toMatch(
      /TIME, which is not supported for clustering/,
    )
    expect((await failure(`CREATE TABLE d.a (x INT64) OPTIONS(colour = 'red')`)).message).toMatch(
      /Invalid option colour/,
    )
    expect(
      (await failure(`CREATE TABLE d.a (x INT64) OPTIONS(require_partition_filter = TRUE)`)).message,
    ).toMatch(/only allowed on partitioned tables/)
  })

  it('ALTER TABLE ADD COLUMN [IF NOT EXISTS]: new columns are NULL for existing rows; a second add fails; NOT NULL is refused', async () => {
    await run(`CREATE TABLE d.t (a INT64); INSERT INTO d.t (a) VALUES (1);`)
    await run(`ALTER TABLE d.t ADD COLUMN b STRING OPTIONS(description = 'added')`)
    expect(await rows(`SELECT a, b FROM d.t`)).toEqual([{ a: '1', b: null }])
    expect((await failure(`ALTER TABLE d.t ADD COLUMN b STRING`)).message).toMatch(/Column already exists: b/)
    expect((await run(`ALTER TABLE d.t ADD COLUMN IF NOT EXISTS b STRING`)).ddl?.operation).toBe('ALTER')
    expect((await failure(`ALTER TABLE d.t ADD COLUMN c STRING NOT NULL`)).message).toMatch(
      /Cannot add a REQUIRED column/,
    )
    expect((await run(`ALTER TABLE IF EXISTS d.missing ADD COLUMN c STRING`)).ddl?.operation).toBe('SKIP')
    expect(table('t')?.columns.at(-1)?.field).toEqual({
      name: 'b',
      type: 'STRING',
      mode: 'NULLABLE',
      description: 'added',
    })
  })

  it('ALTER TABLE ALTER COLUMN DROP NOT NULL relaxes a REQUIRED column (again: no change), so it takes NULLs', async () => {
    await run(`CREATE TABLE d.t (a INT64 NOT NULL, b STRING); INSERT INTO d.t (a, b) VALUES (1, 'x');`)
    expect((await failure(`INSERT INTO d.t (a, b) VALUES (NULL, 'y')`)).message).toMatch(/REQUIRED/)
    await run(`ALTER TABLE d.t ALTER COLUMN a DROP NOT NULL`)
    await run(`ALTER TABLE d.t ALTER COLUMN a DROP NOT NULL`)
    await run(`INSERT INTO d.t (a, b) VALUES (NULL, 'y')`)
    expect(await rows(`SELECT a, b FROM d.t ORDER BY b`)).toEqual([
      { a: '1', b: 'x' },
      { a: null, b: 'y' },
    ])
    expect(table('t')?.columns[0]?.field.mode).toBe('NULLABLE')
  })

  it('ALTER COLUMN SET DATA TYPE widens a type and converts the values; a narrowing or other type is refused as BigQuery does', async () => {
    await run(`CREATE TABLE d.t (amount NUMERIC(10, 2) NOT NULL OPTIONS(description = 'paid'), n INT64, s STRING(5), day DATE);
INSERT INTO d.t (amount, n, s, day) VALUES (12345678.91, 5000000000, 'abc', DATE '2024-01-02'), (0.5, NULL, NULL, NULL);`)
    await run(
      `ALTER TABLE d.t ALTER COLUMN amount SET DATA TYPE NUMERIC(18, 2), ALTER COLUMN n SET DATA TYPE NUMERIC`,
    )
    await run(`ALTER TABLE d.t ALTER COLUMN s SET DATA TYPE STRING(10)`)
    expect(table('t')?.columns.map((c) => c.field)).toEqual([
      { name: 'amount', type: 'NUMERIC', mode: 'REQUIRED', precision: '18', scale: '2', description: 'paid' },
      { name: 'n', type: 'NUMERIC', mode: 'NULLABLE' },
      { name: 's', type: 'STRING', mode: 'NULLABLE', maxLength: '10' },
      { name: 'day', type: 'DATE', mode: 'NULLABLE' },
    ])
    await run(`INSERT INTO d.t (amount, n) VALUES (9999999999999999.99, 1.25)`)
    expect(await rows(`SELECT amount, n, s FROM d.t ORDER BY amount`)).toEqual([
      { amount: '0.5', n: null, s: null },
      { amount: '12345678.91', n: '5000000000', s: 'abc' },
      { amount: '9999999999999999.99', n: '1.25', s: null },
    ])
    await run(
      `ALTER TABLE d.t ALTER COLUMN amount SET DATA TYPE BIGNUMERIC, ALTER COLUMN n SET DATA TYPE FLOAT64`,
    )
    expect(await rows(`SELECT amount, n FROM d.t WHERE s = 'abc'`)).toEqual([
      { amount: '12345678.91', n: '5000000000' },
    ])
    expect(table('t')?.columns[1]?.type).toEqual(expect.objectContaining({ typeKind: 'TYPE_DOUBLE' }))
    const refused = async (sql: string) => (await failure(sql)).message
    expect(await refused(`ALTER TABLE d.t ALTER COLUMN s SET DATA TYPE STRING(3)`)).toMatch(
      'requires that the existing column type (STRING(10)) is assignable to the new type (STRING(3))',
    )
    expect(await refused(`ALTER TABLE d.t ALTER COLUMN amount SET DATA TYPE NUMERIC`)).toMatch(
      'existing column type (BIGNUMERIC) is assignable to the new type (NUMERIC)',
    )
    expect(await refused(`ALTER TABLE d.t ALTER COLUMN day SET DATA TYPE DATETIME`)).toMatch(
      'existing column type (DATE) is assignable to the new type (DATETIME)',
    )
    expect(await refused(`ALTER TABLE d.t ALTER COLUMN s SET DATA TYPE INT64`)).toMatch(
      /existing column type \(STRING.*\) is assignable to the new type \(INT64\)/,
    )
    expect(await refused(`ALTER TABLE d.t ALTER COLUMN missing SET DATA TYPE INT64`)).toMatch(
      /Column not found: missing/,
    )
    await run(`ALTER TABLE d.t ALTER COLUMN IF EXISTS missing SET DATA TYPE INT64`)
    await run(`CREATE TABLE d.narrow (x NUMERIC(18, 2))`)
    expect(await refused(`ALTER TABLE d.narrow ALTER COLUMN x SET DATA TYPE NUMERIC(10, 2)`)).toMatch(
      '(NUMERIC(18, 2)) is assignable to the new type (NUMERIC(10, 2))',
    )
    expect(await refused(`ALTER TABLE d.narrow ALTER COLUMN x SET DATA TYPE NUMERIC(19, 1)`)).toMatch(
      'is assignable to the new type (NUMERIC(19, 1))',
    )
    expect(table('narrow')?.columns[0]?.field).toEqual({
      name: 'x',
      type: 'NUMERIC',
      mode: 'NULLABLE',
      precision: '18',
      scale: '2',
    })
  })

  it('DROP COLUMN [IF EXISTS] removes a column and its values; a missing, partitioning or only column is refused', async () => {
    await run(`CREATE TABLE d.t (a INT64, b STRING, c INT64); INSERT INTO d.t (a, b, c) VALUES (1, 'x', 3);`)
    await run(`ALTER TABLE d.t DROP COLUMN b`)
    expect(await rows(`SELECT * FROM d.t`)).toEqual([{ a: '1', c: '3' }])
    expect((await failure(`SELECT b FROM d.t`)).message).toMatch(/Unrecognized name: b/)
    expect((await failure(`ALTER TABLE d.t DROP COLUMN b`)).message).toMatch(/Column not found: b/)
    expect((await run(`ALTER TABLE d.t DROP COLUMN IF EXISTS b`)).ddl?.operation).toBe('ALTER')
    await run(`ALTER TABLE d.t DROP COLUMN c`)
    expect((await failure(`ALTER TABLE d.t DROP COLUMN a`)).message).toMatch('only column of p:d.t')
    await run(`CREATE TABLE d.p (day DATE, k INT64, v INT64) PARTITION BY day CLUSTER BY k`)
    expect((await failure(`ALTER TABLE d.p DROP COLUMN day`)).message).toMatch(
      /partitioned or clustered by it/,
    )
    expect((await failure(`ALTER TABLE d.p DROP COLUMN k`)).message).toMatch(/partitioned or clustered by it/)
    expect(table('p')?.columns).toHaveLength(3)
  })

  it('RENAME COLUMN [IF EXISTS] keeps the values under the new name; a missing column or a taken name is refused', async () => {
    await run(`CREATE TABLE d.t (a INT64, b STRING); INSERT INTO d.t (a, b) VALUES (1, 'x');`)
    await run(`ALTER TABLE d.t RENAME COLUMN b TO renamed`)
    expect(await rows(`SELECT a, renamed FROM d.t`)).toEqual([{ a: '1', renamed: 'x' }])
    expect((await failure(`ALTER TABLE d.t RENAME COLUMN b TO c`)).message).toMatch(
      /ALTER TABLE RENAME COLUMN not found: b/,
    )
    expect((await run(`ALTER TABLE d.t RENAME COLUMN IF EXISTS b TO c`)).ddl?.operation).toBe('ALTER')
    expect((await failure(`ALTER TABLE d.t RENAME COLUMN a TO renamed`)).message).toMatch(
      /Column already exists: renamed/,
    )
    expect(table('t')?.columns.map((c) => c.field.name)).toEqual(['a', 'renamed'])
  })

  it('views and table functions are evaluated from their bodies when read, with the data of that moment', async () => {
    await run(`CREATE TABLE d.t (id INT64, ts TIMESTAMP);
CREATE OR REPLACE VIEW d.v AS SELECT id FROM d.t WHERE id > 1;
CREATE OR REPLACE TABLE FUNCTION d.as_of(cutoff TIMESTAMP) AS SELECT id FROM d.t WHERE ts <= cutoff;
INSERT INTO d.t (id, ts) VALUES (1, TIMESTAMP '2024-01-01 00:00:00+00'), (2, TIMESTAMP '2024-02-01 00:00:00+00');`)
    expect(await rows(`SELECT v.id FROM d.v ORDER BY id`)).toEqual([{ id: '2' }])
    expect(
      await rows(`SELECT id FROM \`p\`.\`d\`.\`as_of\`(TIMESTAMP '2024-01-15 00:00:00+00') ORDER BY id`),
    ).toEqual([{ id: '1' }])
    expect(table('v')?.type).toBe('VIEW')
    expect((await failure(`INSERT INTO d.v (id) VALUES (5)`)).message).toMatch(/Cannot modify p:d\.v/)
    await run(`DROP VIEW d.v; DROP TABLE FUNCTION d.as_of;`)
    expect(table('v')).toBeUndefined()
  })
})

describe('script interpreter: DML and errors on ZetaSQL’s reference implementation', () => {
  beforeEach(async () => {
    await run(`CREATE TABLE d.t (id INT64 NOT NULL, s STRING);
INSERT INTO d.t (id, s) VALUES (1, 'a'), (2, 'b'), (3, 'c');`)
  })

  it('UPDATE, DELETE and TRUNCATE change exactly the rows they match, and count them', async () => {
    expect((await run(`UPDATE d.t SET s = 'x' WHERE id >= 2`)).dmlAffectedRows).toBe(2)
    expect((await run(`DELETE d.t WHERE id = 3`)).dmlAffectedRows).toBe(1)
    expect(await rows(`SELECT id, s FROM d.t ORDER BY id`)).toEqual([
      { id: '1', s: 'a' },
      { id: '2', s: 'x' },
    ])
    expect((await run(`TRUNCATE TABLE d.t`)).dmlAffectedRows).toBe(2)
    expect(table('t')?.rows).toEqual([])
  })

  it('keeps BigQuery’s DML rules: WHERE required, one source row per updated row, REQUIRED columns', async () => {
    expect((await failure(`UPDATE d.t SET s = 'x'`)).message).toMatch(
      /^UPDATE must have a WHERE clause at \[1:1\]$/,
    )
    expect(
      (
        await failure(
          `UPDATE d.t SET s = u.s FROM (SELECT 1 AS id, 'y' AS s UNION ALL SELECT 1, 'z') u WHERE t.id = u.id`,
        )
      ).message,
    ).toMatch(/at most one joined row/)
    expect((await failure(`INSERT INTO d.t (s) VALUES ('no id')`)).message).toMatch(
      /column id of table p:d\.t: the column is REQUIRED/,
    )
  })

  it('reports errors as BigQuery does: invalidQuery at the line and column of the script, notFound for tables and datasets', async () => {
    const error = await failure(`SELECT 1;
SELECT s FROM \`p\`.\`d\`.\`t\` WHERE nope = 1;`)
    expect([error.reason, error.location, error.message]).toEqual([
      'invalidQuery',
      'query',
      'Unrecognized name: nope at [2:33]',
    ])
    expect((await failure(`SELEC 1`)).message).toMatch(/^Syntax error: .* at \[1:1\]$/)
    const missing = await failure(`SELECT * FROM d.missing`)
    expect([missing.reason, missing.message]).toEqual([
      'notFound',
      'Not found: Table p:d.missing was not found in location EU',
    ])
    const elsewhere = await failure(`SELECT * FROM us_data.t`)
    expect([elsewhere.reason, elsewhere.message]).toEqual([
      'notFound',
      'Not found: Dataset p:us_data was not found in location EU',
    ])
    expect((await failure(`MERGE d.t USING d.t s ON FALSE WHEN NOT MATCHED THEN INSERT ROW`)).reason).toBe(
      'notImplemented',
    )
  })

  it('counts the logical bytes of the columns a query reads', async () => {
    const outcome = await run(`SELECT s FROM d.t`)
    expect(outcome.bytesProcessed).toBe(3 * (2 + 1))
  })
})
