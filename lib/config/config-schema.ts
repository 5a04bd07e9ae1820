/**
 * The shape of dimsync.yaml as a zod schema: types, enums, identifier patterns and unknown keys. Rules that
 * span fields (defaults precedence, collisions, incremental deletes) live in resolve-project.ts, where they
 * can name both ends of a conflict. Every schema carries its own message because zod's defaults
 * ("Invalid input") do not tell a user what to write instead.
 */
import { z } from 'zod'
import {
  METADATA_COLUMN_KEYS,
  METADATA_COLUMNS,
  PRESET_NAMES,
  type MetadataColumnOption,
} from '../core/metadata-columns.ts'
import { mustBe, oneOfText } from './messages.ts'
import {
  expecting,
  IDENTIFIER_PATTERN,
  IDENTIFIER_TEXT,
  list,
  nonEmpty,
  oneOf,
  patterned,
  strict,
} from './schema-primitives.ts'
import { anyWarehouseSchema } from './warehouse-configs.ts'

export { IDENTIFIER_PATTERN } from './schema-primitives.ts'

export const TABLE_NAME_PATTERN = /^[a-z][a-z0-9_]{0,62}$/
export const TARGET_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/
export const ENV_NAME_PATTERN = /^[A-Z_][A-Z0-9_]*$/
/** `customers`, `public.customers` or `project.dataset.customers`. */
export const SOURCE_TABLE_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$/
/** A date, or a date-time that says its time zone: a zone-less time would depend on the machine running it. */
export const OPEN_END_PATTERN = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/

export const DELETE_POLICIES = ['ignore', 'invalidate', 'new_record'] as const
export const TABLE_MODES = ['history', 'mirror', 'append'] as const
export const FILE_FORMATS = ['csv', 'parquet', 'json'] as const
export const FILE_SELECTIONS = ['all', 'new_only'] as const
export const SOURCE_TYPES = ['file', 'postgres', 'mysql'] as const

const column = patterned(IDENTIFIER_PATTERN, `a column name (${IDENTIFIER_TEXT})`)
const columnList = list(column, 'a list of column names')

const CSV_TYPE_TEXT = 'a type such as BIGINT, DECIMAL(38,0), DOUBLE, DATE, TIMESTAMP or VARCHAR'
const csvTypeName = nonEmpty(CSV_TYPE_TEXT)
/** A declared CSV column type: `DECIMAL(38,0)`, or `{ type: DATE, format: '%d/%m/%Y' }` (strptime format). */
const csvColumnTypeSchema = z.union(
  [
    csvTypeName,
    strict(
      {
        type: csvTypeName,
        format: nonEmpty('a strptime format such as %d/%m/%Y').optional(),
      },
      'a mapping { type, format }',
    ),
  ],
  { error: expecting(`${CSV_TYPE_TEXT}, or a mapping { type: DATE, format: '%d/%m/%Y' }`) },
)

export const fileSourceSchema = strict({
  type: z.literal('file'),
  path: nonEmpty('a file path or glob').describe(
    "Path or glob relative to the config file's folder, or s3://bucket/key-or-glob.",
  ),
  files: oneOf(FILE_SELECTIONS)
    .optional()
    .describe(
      'all (default): every run reads every matching file as one snapshot. new_only: each run reads only the ' +
        'files not merged yet, as a delta (a key missing from it is not deleted).',
    ),
  time_from_name: nonEmpty('a file name pattern with %Y (and %m %d %H %M %S), e.g. customers_%Y-%m-%d.csv')
    .optional()
    .describe(
      'files: new_only only: how to read the time in a file name (%Y %m %d %H %M %S, * for anything; UTC). New ' +
        'files are read in that order, and a file dated before the last merged one is refused (snapshot tables) ' +
        'or slotted in at its change times (valid_from: { column }).',
    ),
  format: oneOf(FILE_FORMATS)
    .optional()
    .describe('Inferred from the extension (.csv, .parquet) when omitted.'),
  delimiter: z
    .string({ error: expecting('a single character') })
    .length(1, { error: expecting('a single character') })
    .optional()
    .describe("CSV only. Default ','."),
  header: z
    .boolean({ error: expecting('true or false') })
    .optional()
    .describe('CSV only. Default true.'),
  columns: z
    .record(column, csvColumnTypeSchema, {
      error: (issue) =>
        // `{ acct: DECIMAL(38,0) }`: YAML splits a plain scalar at a comma inside { }, leaving a key `0)`.
        /^\s*\d+\s*\)$/.test(String(issue.input))
          ? "a DECIMAL type inside { } must be quoted: acct: 'DECIMAL(38,0)' (YAML splits it at its comma)"
          : mustBe(`a column name (${IDENTIFIER_TEXT})`, issue.input),
    })
    .optional()
    .describe(
      "CSV only: columns whose type is declared rather than chosen from the first load's values, e.g. " +
        "{ acct: DECIMAL(38,0), d: { type: DATE, format: '%d/%m/%Y' } }.",
    ),
})

export const databaseSourceSchema = strict({
  type: oneOf(['postgres', 'mysql']),
  url_env: patterned(ENV_NAME_PATTERN, 'the name of an environment variable (A-Z, 0-9, _)').describe(
    'Environment variable that holds the connection URL.',
  ),
  table: patterned(SOURCE_TABLE_PATTERN, 'a table name, optionally schema-qualified (public.customers)')
    .optional()
    .describe('Set exactly one of table or query.'),
  query: nonEmpty('a SELECT query').optional().describe('Set exactly one of table or query.'),
  // ---- database source options (PostgreSQL / MySQL sources) ----
  chunks: z
    .number({ error: expecting('a whole number from 1 to 64') })
    .int({ error: expecting('a whole number from 1 to 64') })
    .min(1, { error: expecting('a whole number from 1 to 64') })
    .max(64, { error: expecting('a whole number from 1 to 64') })
    .optional()
    .describe('Read the extract as this many key ranges over parallel connections, one snapshot. Default 1.'),
  slice_rows: z
    .number({ error: expecting('a whole number of rows, 1 or more') })
    .int({ error: expecting('a whole number of rows, 1 or more') })
    .min(1, { error: expecting('a whole number of rows, 1 or more') })
    .optional()
    .describe(
      'AWS extract function only: rows per key range of an extract that may continue in another invocation ' +
        'when it nears the time limit (each pass reads whole ranges). Default 1000000.',
    ),
  statement_timeout_seconds: z
    .number({ error: expecting('a whole number of seconds, 1 or more') })
    .int({ error: expecting('a whole number of seconds, 1 or more') })
    .min(1, { error: expecting('a whole number of seconds, 1 or more') })
    .optional()
    .describe('Longest time one statement of an extract may run on the source. Default: no limit.'),
})

export const sourceSchema = z.discriminatedUnion('type', [fileSourceSchema, databaseSourceSchema], {
  error: (issue) => {
    const input = issue.input
    if (input === null || typeof input !== 'object' || Array.isArray(input))
      return mustBe('a mapping with a type (file, postgres or mysql)', input)
    return mustBe(oneOfText(SOURCE_TYPES), (input as { type?: unknown }).type, SOURCE_TYPES)
  },
})

const lookbackMinutes = z
  .number({ error: expecting('a whole number of minutes, 0 or more') })
  .int({ error: expecting('a whole number of minutes, 0 or more') })
  .min(0, { error: expecting('a whole number of minutes, 0 or more') })
  .optional()
  .describe('Re-read this many minutes before the watermark. Default 0.')

const incrementalSchema = strict({
  mode: z.literal('incremental'),
  cursor: column.describe('Source column that grows with every change (updated_at, an id).'),
  lookback_minutes: lookbackMinutes,
})

// ---- change feeds (extract: { mode: changes }) ----

/** AWS DMS output: `Op` holds I, U or D. */
export const DMS_OPERATION = Object.freeze({ column: 'Op', insert: ['I'], update: ['U'], delete: ['D'] })
/** Debezium: `op` is c (create), r (snapshot read), u, d or t (truncate). */
export const DEBEZIUM_OPERATION = Object.freeze({
  column: 'op',
  insert: ['c', 'r'],
  update: ['u'],
  delete: ['d'],
  truncate: ['t'],
})

const OPERATION_VALUE_TEXT = 'a value or a list of values'
const operationValues = z.union(
  [nonEmpty(OPERATION_VALUE_TEXT), list(nonEmpty(OPERATION_VALUE_TEXT), OPERATION_VALUE_TEXT, 1)],
  { error: expecting(OPERATION_VALUE_TEXT) },
)

/** A change feed's operation: its column, or the column and the values of each operation (dimensions and facts). */
export const operationSchema = z
  .union(
    [
      column,
      strict({
        column: column.optional().describe('Default Op.'),
        insert: operationValues.optional().describe('Default I.'),
        update: operationValues.optional().describe('Default U.'),
        delete: operationValues.optional().describe('Default D.'),
      }),
    ],
    { error: expecting('a column name or a mapping { column, insert, update, delete }') },
  )
  .optional()
  .describe(
    'The operation column and its values. Default { column: Op, insert: I, update: U, delete: D } (AWS DMS).',
  )

/** Which values of the operation column mean what, by rule; `ignore` skips rows (dimensions and facts). */
export const opsSchema = strict({
  insert: operationValues.optional().describe('Default I.'),
  update: operationValues.optional().describe('Default U.'),
  delete: operationValues.optional().describe('Default D.'),
  truncate: operationValues
    .optional()
    .describe('Dimensions: a truncate closes every current version at its change time. Default none.'),
  ignore: operationValues
    .optional()
    .describe('Rows skipped by the extract (before-images, heartbeats). Default none.'),
})
  .optional()
  .describe(
    'The values of the operation column meaning insert, update, delete and truncate, and those whose rows are skipped (ignore). Default { insert: I, update: U, delete: D }.',
  )

/** Layouts of change files a CDC tool writes that a file source reads as they are. */
export const CHANGE_FORMATS = ['dms', 'debezium'] as const

const changesSchema = strict({
  mode: z.literal('changes'),
  format: oneOf(CHANGE_FORMATS)
    .optional()
    .describe(
      'File sources: dms reads AWS DMS output as DMS writes it (full-load LOAD files without Op are inserts, ' +
        'read before the change files; a STRING timestamp column is read as times); debezium reads Debezium ' +
        'change events (JSON lines: after for c/u/r, the key of before for d, t a truncate). Default: none.',
    ),
  operation: operationSchema,
  ops: opsSchema,
  sequence: column
    .optional()
    .describe(
      'Orders the events of a key that share a change time (the last one wins); a database feed is read by it unless cursor is given. Default: none.',
    ),
  cursor: column
    .optional()
    .describe(
      "Database sources: read the events after this column's watermark; it must only grow in the order events are written (never the valid_from column). Default: the sequence.",
    ),
  lookback_minutes: lookbackMinutes,
})

// ---- end change feeds ----

const EXTRACT_MODES = ['full', 'incremental', 'changes'] as const
const EXTRACT_TEXT = '"full" or a mapping { mode: incremental, cursor: <column> } or { mode: changes }'
export const extractSchema = z.union(
  [
    z.literal('full'),
    z.discriminatedUnion('mode', [strict({ mode: z.literal('full') }), incrementalSchema, changesSchema], {
      error: (issue) =>
        mustBe(oneOfText(EXTRACT_MODES), (issue.input as { mode?: unknown }).mode, EXTRACT_MODES),
    }),
  ],
  {
    error: (issue) =>
      issue.input === 'incremental'
        ? `must be ${EXTRACT_TEXT} (got "incremental": an incremental extract needs a cursor column)`
        : mustBe(EXTRACT_TEXT, issue.input, ['full']),
  },
)

const VALID_FROM_TEXT = '"extracted_at" or a mapping { column: <column> }'
export const validFromSchema = z.union([z.literal('extracted_at'), strict({ column })], {
  error: expecting(VALID_FROM_TEXT, ['extracted_at']),
})

export const trackedSchema = z.union(
  [list(column, 'a list of column names', 1), strict({ all_except: columnList })],
  { error: expecting('a list of column names or a mapping { all_except: [<column>, ...] }') },
)

/** One renaming option per metadata column (`valid_to: ended_at`), described from the column's contract. */
const metadataColumnRenames = Object.fromEntries(
  METADATA_COLUMN_KEYS.map((key) => {
    const { option, meaning, names } = METADATA_COLUMNS[key]
    return [
      option,
      column.describe(`Name of the metadata column: ${meaning} (default ${names.dimsync}).`).optional(),
    ]
  }),
) as Record<MetadataColumnOption, z.ZodOptional<typeof column>>

export const columnsOverrideSchema = strict({
  preset: oneOf(PRESET_NAMES).optional(),
  ...metadataColumnRenames,
})

export const columnsSchema = z.union([oneOf(PRESET_NAMES), columnsOverrideSchema], {
  error: expecting(
    `a preset (${PRESET_NAMES.join(', ')}) or a mapping like { preset: dbt, valid_to: my_valid_to }`,
    PRESET_NAMES,
  ),
})

// ---- AWS deployment options: per-table schedule and function size, top-level `aws` (read by infra/) ----

export const LAMBDA_SIZE_CLASSES = ['small', 'medium', 'large', 'xlarge'] as const
/** CloudWatch Logs accepts only these retention periods. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const

function wholeNumber(what: string, min: number, max: number) {
  const text = `${what}: a whole number from ${min} to ${max}`
  return z
    .number({ error: expecting(text) })
    .int({ error: expecting(text) })
    .min(min, { error: expecting(text) })
    .max(max, { error: expecting(text) })
}

const SCHEDULE_EXPRESSION_TEXT = 'a schedule expression like rate(1 hour) or cron(0 3 * * ? *)'
const scheduleExpression = nonEmpty(SCHEDULE_EXPRESSION_TEXT)
export const scheduleSchema = z.union(
  [
    scheduleExpression,
    strict({
      expression: scheduleExpression
        .optional()
        .describe('rate(1 hour), rate(15 minutes), cron(0 3 * * ? *).'),
      timezone: nonEmpty('an IANA time zone like Europe/Paris')
        .optional()
        .describe('Time zone cron expressions are read in. Default UTC.'),
      enabled: z
        .boolean({ error: expecting('true or false') })
        .optional()
        .describe('false deploys the schedule disabled. Default true.'),
      flexible_window_minutes: wholeNumber('minutes', 0, 1440)
        .optional()
        .describe('Let EventBridge start the run up to this many minutes late (spreads load). Default 0.'),
    }),
  ],
  {
    error: expecting(
      `${SCHEDULE_EXPRESSION_TEXT}, or a mapping { expression, timezone, enabled, flexible_window_minutes }`,
    ),
  },
)

export const lambdaSizeSchema = z.union(
  [
    oneOf(LAMBDA_SIZE_CLASSES),
    strict({
      class: oneOf(LAMBDA_SIZE_CLASSES).optional(),
      memory_mb: wholeNumber('megabytes', 128, 10240).optional().describe('Overrides the class memory.'),
      timeout_seconds: wholeNumber('seconds', 1, 900).optional().describe('Overrides the class timeout.'),
    }),
  ],
  {
    error: expecting(
      `${oneOfText(LAMBDA_SIZE_CLASSES)}, or a mapping { class, memory_mb, timeout_seconds }`,
      LAMBDA_SIZE_CLASSES,
    ),
  },
)

const SECRET_TEXT = 'a Secrets Manager secret name or ARN'
const secretRef = z
  .string({ error: expecting(SECRET_TEXT) })
  .regex(
    /^(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+|[A-Za-z0-9/_+=.@-]{1,512})$/,
    {
      error: expecting(SECRET_TEXT),
    },
  )

const TAG_KEY_TEXT = 'a tag key (at most 128 letters, digits, spaces or _.:/=+-@, not starting with aws:)'

export const awsSchema = strict({
  stack_name: patterned(/^[A-Za-z][A-Za-z0-9-]{0,127}$/, 'a CloudFormation stack name (letters, digits, -)')
    .optional()
    .describe('Default Dimsync.'),
  architecture: oneOf(['arm64', 'x86_64'])
    .optional()
    .describe('Lambda architecture. Default arm64 (synth fetches the arm64 DuckDB binding; see README).'),
  secrets: z
    .record(patterned(ENV_NAME_PATTERN, 'the name of an environment variable (A-Z, 0-9, _)'), secretRef, {
      error: expecting('a mapping of url_env names to secret names or ARNs'),
    })
    .optional()
    .describe("A source's url_env → Secrets Manager secret (name or ARN) whose value is the connection URL."),
  bigquery_secret: secretRef.optional().describe('Secret holding the BigQuery service-account JSON.'),
  secrets_kms_keys: list(
    patterned(
      /^arn:aws(-[a-z]+)*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/,
      'a KMS key ARN (arn:aws:kms:<region>:<account>:key/<key id>)',
    ),
    'a list of KMS key ARNs',
    1,
  )
    .optional()
    .describe(
      'Customer-managed KMS keys the secrets are encrypted with: the functions may decrypt with them ' +
        '(through Secrets Manager only). Not needed for the default aws/secretsmanager key.',
    ),
  vpc: strict({
    vpc_id: patterned(/^vpc-[0-9a-f]{8,17}$/, 'a VPC id (vpc-...)'),
    subnet_ids: list(
      patterned(/^subnet-[0-9a-f]{8,17}$/, 'a subnet id (subnet-...)'),
      'a list of subnet ids',
      1,
    ),
    security_group_ids: list(
      patterned(/^sg-[0-9a-f]{8,17}$/, 'a security group id (sg-...)'),
      'a list of security group ids',
    )
      .optional()
      .describe('Default: a new security group with outbound access only.'),
    gateway_endpoints: strict({
      route_table_ids: list(
        patterned(/^rtb-[0-9a-f]{8,17}$/, 'a route table id (rtb-...)'),
        'a list of route table ids',
        1,
      ),
    })
      .optional()
      .describe(
        'Add S3 and DynamoDB gateway endpoints to the route tables of the subnets (free; staging and state ' +
          'traffic then bypasses the NAT). Leave out when the VPC already has them.',
      ),
  })
    .optional()
    .describe('Run the functions in these (private) subnets, to reach databases that are not public.'),
  reserved_concurrency: strict({
    extract: wholeNumber('concurrent executions', 1, 1000)
      .optional()
      .describe('At most this many extracts at once per size class (protects the source databases).'),
    merge: wholeNumber('concurrent executions', 1, 1000)
      .optional()
      .describe('At most this many merges at once per size class.'),
  })
    .optional()
    .describe(
      'Reserved concurrency of each extract and merge function (taken from the account quota). A run ' +
        'throttled by it waits and retries for up to about 40 minutes. Default: none.',
    ),
  execution_logs: strict({
    level: oneOf(['off', 'fatal', 'error', 'all'])
      .optional()
      .describe('What the state machine logs: error (the default) logs failed states only.'),
    include_data: z
      .boolean({ error: expecting('true or false') })
      .optional()
      .describe(
        "Log each state's input, output and error cause. Default false: they can hold key values and SQL.",
      ),
  })
    .optional()
    .describe(
      'State machine execution logs (CloudWatch Logs). Default { level: error, include_data: false }.',
    ),
  alarm_email: patterned(/^[^@\s]+@[^@\s]+\.[^@\s]+$/, 'an email address').optional(),
  log_retention_days: z
    .union(LOG_RETENTION_DAYS.map((d) => z.literal(d)) as unknown as [z.ZodLiteral<1>, z.ZodLiteral<3>], {
      error: expecting(`one of ${LOG_RETENTION_DAYS.join(', ')}`),
    })
    .optional()
    .describe('Default 30.'),
  permissions_boundary: patterned(
    /^(arn:aws(-[a-z]+)*:iam::(\d{12}|aws):policy\/([\w+=,.@-]+\/)*[\w+=,.@-]{1,128}|[\w+=,.@-]{1,128})$/,
    'a managed policy name or ARN (arn:aws:iam::<account>:policy/<name>)',
  )
    .optional()
    .describe(
      'Managed policy set as the permissions boundary of every IAM role the stack creates (accounts whose ' +
        'SCPs require one). A name is a policy of the deploying account.',
    ),
  role_name_prefix: patterned(/^[\w+=,.@-]{1,32}$/, 'a role name prefix (at most 32 of A-Z a-z 0-9 +=,.@_-)')
    .optional()
    .describe(
      'Every IAM role the stack creates is named <prefix><unique part> (at most 64 characters); deploying ' +
        'then needs CAPABILITY_NAMED_IAM, which cdk deploy asks for. Default: names CloudFormation generates.',
    ),
  tags: z
    .record(
      patterned(/^(?!aws:)[\p{L}\p{Z}\p{N}_.:/=+@-]{1,128}$/u, TAG_KEY_TEXT),
      z
        .string({ error: expecting('a tag value (a text of at most 256 characters)') })
        .max(256, { error: expecting('a tag value (a text of at most 256 characters)') }),
      {
        // zod reports a wrong key with the record's message: say what a key must be.
        error: (issue) =>
          mustBe(
            issue.code === 'invalid_key' ? TAG_KEY_TEXT : 'a mapping of tag keys to values',
            issue.input,
          ),
      },
    )
    .optional()
    .describe('Tags put on every resource of the stack that takes tags.'),
  bootstrap_qualifier: patterned(
    /^[A-Za-z0-9_-]{1,10}$/,
    'a CDK bootstrap qualifier (at most 10 letters, digits, _ or -)',
  )
    .optional()
    .describe(
      'Qualifier of the CDK bootstrap stack to deploy with (cdk bootstrap --qualifier ...), for accounts ' +
        'bootstrapped with their own. Default: the CDK default (hnb659fds).',
    ),
  kms_key: patterned(
    /^(create|arn:aws(-[a-z]+)*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+)$/,
    'create, or a KMS key ARN (arn:aws:kms:<region>:<account>:key/<key id>)',
  )
    .optional()
    .describe(
      'Customer-managed KMS key of the staging bucket and of every log group: a key ARN (its policy must let ' +
        'CloudWatch Logs use it), or create (a new key with rotation). Default: SSE-S3 and the logs service key.',
    ),
  staging_versioning: z
    .boolean({ error: expecting('true or false') })
    .optional()
    .describe(
      'Keep earlier versions of staged objects (S3 versioning); they expire 30 days after being replaced or ' +
        'deleted. Default false.',
    ),
  function_versions_kept: wholeNumber('versions', 1, 100)
    .optional()
    .describe(
      'Published versions kept per function: each deploy deletes older ones, once replaced for more than 24 ' +
        'hours (no execution can still use them). Default 5.',
    ),
  // Still a known key, so the error says why it went instead of "unknown key".
  staging_expiry_days: z
    .unknown()
    .optional()
    .describe('Removed: staged batches are deleted when merged or discarded, never by age.'),
  removal_policy: oneOf(['retain', 'destroy'])
    .optional()
    .describe('What deleting the stack does to the bucket and state table. Default retain.'),
})

const OPEN_END_TEXT = "null or an ISO timestamp with a time zone, like '9999-12-31T23:59:59Z'"

/** Options a table may set and `defaults` may set for every table. */
export const tableOptionsShape = {
  // YAML's null (`removed_columns: null`, or `~`) means the same as the text 'null'.
  removed_columns: oneOf(['null', 'keep_last'])
    .nullable()
    .transform((value) => value ?? 'null')
    .optional()
    .describe(
      'What new versions hold in a column the source stopped sending: null (default) or keep_last (the ' +
        "key's last value).",
    ),
  system_time: z
    .boolean({ error: expecting('true or false') })
    .optional()
    .describe(
      'Bitemporal history: each row also records when dimsync learned it (system_from) and when a later merge ' +
        'superseded it (system_to); no row is ever rewritten. Default false. See docs/bitemporal.md.',
    ),
  mode: oneOf(TABLE_MODES)
    .optional()
    .describe(
      'history (default: versions with validity windows), mirror (only the current state: updates overwrite, ' +
        'deletes delete) or append (every extract appended with its extraction time).',
    ),
  extract: extractSchema
    .optional()
    .describe(
      'full (default), { mode: incremental, cursor, lookback_minutes } or { mode: changes, operation, sequence }.',
    ),
  valid_from: validFromSchema
    .optional()
    .describe('extracted_at (default) or { column: <change time column> }.'),
  tracked: trackedSchema
    .optional()
    .describe('Columns whose changes open a new version. Default { all_except: [] }.'),
  exclude: columnList.optional().describe('Source columns not stored at all. Default [].'),
  deletes: z
    .union(
      [
        oneOf(DELETE_POLICIES),
        strict({
          when: nonEmpty('a condition such as "is_deleted = true"').describe(
            "A row is a delete when <column> = <value> (true, false, a number or 'text'); the column is not stored.",
          ),
          policy: oneOf(DELETE_POLICIES)
            .optional()
            .describe('What a delete (and absence from a full extract) does. Default invalidate.'),
        }),
      ],
      {
        error: (issue) =>
          issue.input !== null && typeof issue.input === 'object'
            ? mustBe(
                '{ when: "<column> = <value>", policy: <ignore, invalidate or new_record> }',
                issue.input,
              )
            : mustBe(oneOfText(DELETE_POLICIES), issue.input, DELETE_POLICIES),
      },
    )
    .optional()
    .describe(
      'What absence from a full extract means (ignore, invalidate or new_record), or { when, policy }: rows that ' +
        'are deletes. Default ignore.',
    ),
  max_delete_share: z
    .number({ error: expecting('a number greater than 0 and at most 1') })
    .gt(0, { error: expecting('a number greater than 0 and at most 1') })
    .lte(1, { error: expecting('a number greater than 0 and at most 1') })
    .optional()
    .describe('Largest share of current keys one batch may delete. Default 0.5.'),
  open_end: z
    .string({ error: expecting(OPEN_END_TEXT) })
    .regex(OPEN_END_PATTERN, { error: expecting(OPEN_END_TEXT) })
    .nullable()
    .optional()
    .describe(
      'valid_to of open versions: null or a far-future sentinel after 2100-01-01. Default null; ' +
        'with the fivetran preset 9999-12-31T23:59:59.999Z.',
    ),
  columns: columnsSchema
    .optional()
    .describe('Metadata column names: a preset (default dimsync) or overrides.'),
  soft_delete_column: column
    .nullable()
    .optional()
    .describe('Source column whose non-NULL (or true) value marks a row as deleted.'),
  schedule: scheduleSchema
    .optional()
    .describe('AWS: when the table runs. Default: no schedule (started by hand only).'),
  lambda: lambdaSizeSchema
    .optional()
    .describe('AWS: function size class (default medium) or memory/timeout.'),
}

export const defaultsSchema = strict(tableOptionsShape)

export const tableSchema = strict({
  name: patterned(
    TABLE_NAME_PATTERN,
    'a table name: a-z, 0-9 and _, starting with a letter, at most 63 characters',
  ),
  source: sourceSchema,
  target: patterned(TARGET_PATTERN, `a table name (${IDENTIFIER_TEXT}, at most 128 characters)`)
    .optional()
    .describe('Dimension table in the warehouse. Default dim_<name>.'),
  key: z
    .union([column, list(column, 'a list of column names', 1)], {
      error: expecting('a column name or a non-empty list of column names'),
    })
    .describe('Natural key: one column or a list.'),
  keep_first: columnList
    .optional()
    .describe("Type 0: columns that keep the value of the key's first version; later changes are ignored."),
  previous_value: columnList
    .optional()
    .describe('Type 3: tracked columns that get previous_<column>: the value before the last change.'),
  current_value: columnList
    .optional()
    .describe('Type 6: tracked columns that get current_<column>: the newest value, on every version.'),
  ignore_null_updates: z
    .union([z.literal('all'), list(column, 'a list of column names', 1), strict({ except: columnList })], {
      error: expecting('all, a list of column names or a mapping { except: [<column>, ...] }'),
    })
    .optional()
    .describe(
      'Partial updates: columns where a NULL in a row means "unchanged" (the key keeps its value). ' +
        'all, [columns] or { except: [columns] }. Default: none (a NULL sets NULL).',
    ),
  columns_to_update: list(column, 'a list of column names', 1)
    .optional()
    .describe(
      'Partial updates: the only columns a row of an existing key updates; the others keep their values. ' +
        'Default: all columns.',
    ),
  change_detection: strict({
    version_column: column.describe(
      'The source column whose growth opens a new version (a time such as updated_at, or a number). It must be ' +
        'tracked.',
    ),
    on_same_version: oneOf(['refuse', 'overwrite'])
      .optional()
      .describe(
        'A row whose content changed while its version column did not: refuse (default) stops the batch, ' +
          'overwrite writes the new content into that version in place.',
      ),
  })
    .optional()
    .describe(
      "Which column decides a new version (dbt's timestamp strategy): { version_column, on_same_version }. " +
        'Default: any change of a tracked column (the row hash). Not for change feeds.',
    ),
  renamed: z
    .record(column, column, { error: expecting('a mapping { <old column name>: <new column name> }') })
    .optional()
    .describe(
      'Columns the source renamed, { old_name: new_name }: the dimension column is renamed and its history ' +
        'carried over, with no version opened by the rename.',
    ),
  ...tableOptionsShape,
})

export const localStoreSchema = strict({
  type: oneOf(['local']).optional(),
  path: nonEmpty('a folder path').optional().describe("Folder, relative to the config file's folder."),
})

export const configDocumentSchema = strict(
  {
    version: z.literal(1, { error: expecting('1') }).describe('Config format version. Must be 1.'),
    warehouse: anyWarehouseSchema.nullable().optional(),
    staging: localStoreSchema.nullable().optional(),
    state: localStoreSchema.nullable().optional(),
    defaults: defaultsSchema
      .nullable()
      .optional()
      .describe('Options applied to every table unless it sets them.'),
    tables: list(tableSchema, 'a list of tables', 1),
    // Checked against the tables by resolve-facts.ts (its shape is fact-schema.ts, which builds on this file).
    facts: z.unknown().optional().describe('Fact tables keyed to the dimension versions true at their time.'),
    aws: awsSchema.nullable().optional().describe('AWS deployment options (cdk deploy).'),
  },
  'a mapping with version and tables',
)

export type ConfigDocument = z.output<typeof configDocumentSchema>
export type TableDocument = z.output<typeof tableSchema>
export type TableOptionsDocument = z.output<typeof defaultsSchema>
