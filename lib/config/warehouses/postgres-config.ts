/** `warehouse: { type: postgres, url_env, schema }`: its keys and its spec. */
import type { PostgresWarehouseSpec } from '../../core/table-spec.ts'
import { IDENTIFIER_PATTERN, IDENTIFIER_TEXT, patterned } from '../schema-primitives.ts'
import type { WarehouseConfig } from '../warehouse-configs.ts'

/** Environment variable names: letters, digits and _, not starting with a digit. */
const ENV_VARIABLE_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Where a postgres warehouse keeps dimensions when the config names no schema. */
const DEFAULT_POSTGRES_SCHEMA = 'public'

const shape = {
  url_env: patterned(ENV_VARIABLE_PATTERN, 'an environment variable name (DIMSYNC_PG_URL)').describe(
    'Environment variable holding the connection URL (postgres://user:password@host:5432/database); the URL is never written in this file.',
  ),
  schema: patterned(IDENTIFIER_PATTERN, `a schema name (${IDENTIFIER_TEXT})`)
    .optional()
    .describe('PostgreSQL schema that holds the dimensions, views and the batch ledger. Default public.'),
}

export const postgresWarehouseConfig: WarehouseConfig<PostgresWarehouseSpec, typeof shape> = {
  type: 'postgres',
  shape,
  resolve(section) {
    return { type: 'postgres', urlEnv: section!.url_env, schema: section!.schema ?? DEFAULT_POSTGRES_SCHEMA }
  },
}
