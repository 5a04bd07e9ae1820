/**
 * The shape of one `facts:` entry of dimsync.yaml (see docs/facts.md). Rules that need the project's dimensions
 * (a reference to a dimension that exists, with as many key columns as its key) live in resolve-facts.ts.
 */
import { z } from 'zod'
import {
  IDENTIFIER_PATTERN,
  operationSchema,
  opsSchema,
  sourceSchema,
  TABLE_NAME_PATTERN,
  TARGET_PATTERN,
} from './config-schema.ts'
import { mustBe, unknownKeysMessage } from './messages.ts'

type ErrorInput = { readonly input?: unknown }
const expecting = (what: string) => (issue: ErrorInput) => mustBe(what, issue.input)

const COLUMN_TEXT = 'a column name (letters, digits and _, not starting with a digit)'
const column = z
  .string({ error: expecting(COLUMN_TEXT) })
  .regex(IDENTIFIER_PATTERN, { error: expecting(COLUMN_TEXT) })
const COLUMNS_TEXT = 'a column name or a non-empty list of column names'
const columns = z.union([column, z.array(column).min(1)], { error: expecting(COLUMNS_TEXT) })

function strict<T extends z.core.$ZodLooseShape>(shape: T, what: string) {
  const known = Object.keys(shape)
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys' ? unknownKeysMessage(issue.keys, known) : mustBe(what, issue.input),
  })
}

const UNKNOWN_KEY_TEXT = 'a whole number, 0 or below'

export const factReferenceSchema = strict(
  {
    dimension: z
      .string({ error: expecting('the name of a table under tables:') })
      .describe('Name of the dimension (a `tables:` entry) the fact points at.'),
    key: columns.describe("Fact columns holding the dimension's natural key, in the order of its key."),
    as: z
      .string({ error: expecting('a name (a-z, 0-9, _)') })
      .regex(TABLE_NAME_PATTERN, { error: expecting('a name (a-z, 0-9, _)') })
      .optional()
      .describe(
        "Name of the reference: its surrogate key column is <as>_sk and the views' prefix <as>_. Default: the dimension's name.",
      ),
    surrogate_key: column.optional().describe('Name of the surrogate key column. Default <as>_sk.'),
    natural_key: z
      .boolean({ error: expecting('true or false') })
      .optional()
      .describe('Also store the natural key columns (type 7): the as-is view joins by them. Default false.'),
    inferred: z
      .boolean({ error: expecting('true or false') })
      .optional()
      .describe(
        'A natural key the dimension has never held creates a placeholder version of it (flagged is_inferred) that the fact points at; the first real extract of the key completes it in place. Default false.',
      ),
    unknown_member_key: z
      .number({ error: expecting(UNKNOWN_KEY_TEXT) })
      .int({ error: expecting(UNKNOWN_KEY_TEXT) })
      .max(0, { error: expecting(UNKNOWN_KEY_TEXT) })
      .optional()
      .describe("Surrogate key of the dimension's unknown member. Default 0."),
  },
  'a mapping { dimension, key }',
)

const EXTRACT_TEXT =
  '"full" or a mapping { mode: incremental, cursor: <column> } or { mode: changes, operation, sequence, cursor }'
const factExtractSchema = z.union(
  [
    z.literal('full'),
    strict({ mode: z.literal('full') }, EXTRACT_TEXT),
    strict(
      {
        mode: z.literal('incremental'),
        cursor: column.describe('Source column that grows with every new fact.'),
        lookback_minutes: z
          .number({ error: expecting('a whole number of minutes, 0 or more') })
          .int({ error: expecting('a whole number of minutes, 0 or more') })
          .min(0, { error: expecting('a whole number of minutes, 0 or more') })
          .optional(),
      },
      EXTRACT_TEXT,
    ),
    strict(
      {
        mode: z.literal('changes'),
        operation: operationSchema,
        ops: opsSchema,
        sequence: column
          .optional()
          .describe(
            'Orders the changes of one fact within a batch (the last one wins). Default: the cursor; without either, a batch may hold one change per fact.',
          ),
        cursor: column
          .optional()
          .describe(
            "Database sources: read the changes after this column's watermark; it must only grow in the order changes are written (never the event time). Default: the sequence.",
          ),
        lookback_minutes: z
          .number({ error: expecting('a whole number of minutes, 0 or more') })
          .int({ error: expecting('a whole number of minutes, 0 or more') })
          .min(0, { error: expecting('a whole number of minutes, 0 or more') })
          .optional(),
      },
      EXTRACT_TEXT,
    ),
  ],
  { error: expecting(EXTRACT_TEXT) },
)

export const factSchema = strict(
  {
    name: z
      .string({ error: expecting('a name: a-z, 0-9 and _, starting with a letter, at most 63 characters') })
      .regex(TABLE_NAME_PATTERN, {
        error: expecting('a name: a-z, 0-9 and _, starting with a letter, at most 63 characters'),
      }),
    source: sourceSchema,
    target: z
      .string({ error: expecting('a table name') })
      .regex(TARGET_PATTERN, { error: expecting('a table name') })
      .optional()
      .describe('Fact table in the warehouse. Default fact_<name>.'),
    extract: factExtractSchema
      .optional()
      .describe(
        'full (default: each batch is the whole fact table), { mode: incremental, cursor } or { mode: changes } (a change feed: inserts add facts, updates replace them, deletes remove them).',
      ),
    grain: columns.describe('Columns that identify one fact.'),
    event_time: column.describe('Column holding when the fact happened (a timestamp or a date).'),
    measures: z
      .array(column, { error: expecting('a list of column names') })
      .optional()
      .describe('Default [].'),
    references: z
      .array(factReferenceSchema, { error: expecting('a list of references { dimension, key }') })
      .optional()
      .describe('Dimensions the fact points at. Default [].'),
  },
  'a mapping with name, source, grain, event_time',
)

export type FactDocument = z.output<typeof factSchema>
