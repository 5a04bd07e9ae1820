import { BigQuery } from '@google-cloud/bigquery'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BigQueryWarehouse } from '../../../../lib/adapters/warehouse/bigquery-warehouse.ts'
import { BigQueryEmulator } from '../../../support/bigquery-emulator/bigquery-emulator.ts'

/**
 * The staged types dimsync records for a dimension's columns (`_dimsync_columns`) are what `describeTable`
 * reports, except where the column's BigQuery type no longer matches the record: the column was rewritten since
 * (`dimsync evolve`, or by hand), and its own type is the truth until the next merge records it again.
 */
const PROJECT = 'acme-dw'
const DATASET = 'history'
let emulator: BigQueryEmulator

beforeAll(async () => {
  emulator = await BigQueryEmulator.start()
  emulator.createDataset(PROJECT, DATASET, { location: 'EU' })
})
afterAll(async () => {
  await emulator?.stop()
})

describe('describeTable with recorded column types', () => {
  it('reports a recorded type where the BigQuery type matches it, the column own type where it does not', async () => {
    await new BigQuery({ projectId: PROJECT, ...emulator.clientOptions() })
      .dataset(DATASET)
      .table('dim_account')
      .create({
        schema: {
          fields: [
            { name: 'seats', type: 'INTEGER' },
            { name: 'code', type: 'STRING' },
            { name: 'price', type: 'NUMERIC', precision: '18', scale: '2' },
          ],
        },
      })
    await emulator.query(
      PROJECT,
      `CREATE TABLE \`${PROJECT}.${DATASET}._dimsync_columns\` (target STRING NOT NULL, column_name STRING NOT NULL,
         source_type STRING NOT NULL, recorded_at TIMESTAMP NOT NULL)`,
    )
    // code was an INTEGER when recorded, and has been rewritten as STRING since; price was DECIMAL(12,2).
    await emulator.query(
      PROJECT,
      `INSERT INTO \`${PROJECT}.${DATASET}._dimsync_columns\` VALUES
         ('dim_account', 'seats', 'INTEGER', TIMESTAMP '2024-01-01 00:00:00+00'),
         ('dim_account', 'code', 'INTEGER', TIMESTAMP '2024-01-01 00:00:00+00'),
         ('dim_account', 'price', 'DECIMAL(12,2)', TIMESTAMP '2024-01-01 00:00:00+00')`,
    )
    const warehouse = new BigQueryWarehouse({ project: PROJECT, location: 'EU', ...emulator.clientOptions() })
    expect(await warehouse.describeTable({ schema: DATASET, name: 'dim_account' })).toEqual([
      { name: 'seats', type: 'INTEGER' },
      { name: 'code', type: 'VARCHAR' },
      { name: 'price', type: 'DECIMAL(18,2)' },
    ])
  })
})
