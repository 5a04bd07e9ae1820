import { afterEach, describe, expect, it } from 'vitest'

import { readHistory } from '../../../lib/use-cases/read-history.ts'
import { runTable } from '../../../lib/use-cases/run-table.ts'
import { customersYaml, makeEmbeddedProject, type EmbeddedProject } from '../../support/embedded-project.ts'

/**
 * A source that soft-deletes with a column named like dimsync's metadata column (is_deleted), read from a CSV file
 * into DuckDB: deletes: { when: "is_deleted = true" } marks its deletes, and the flag, read and never stored, does
 * not collide with the dimension's is_deleted.
 */

let embedded: EmbeddedProject | undefined
afterEach(async () => {
  await embedded?.dispose()
  embedded = undefined
})

describe('deletes: { when } on a file source', () => {
  it('a snapshot whose is_deleted flag is true deletes the key (deletes: new_record flags a version)', async () => {
    embedded = await makeEmbeddedProject(
      customersYaml('deletes: { when: "is_deleted = true", policy: new_record }'),
    )
    const { deps, project } = embedded
    const table = project.tables[0]!
    embedded.writeCsv('customers.csv', 'customer_id,region,is_deleted', ['1,South,false', '2,North,false'])
    await runTable(deps, table, { extractedAt: new Date('2024-01-01T00:00:00Z') })
    embedded.writeCsv('customers.csv', 'customer_id,region,is_deleted', ['1,South,false', '2,North,true'])
    await runTable(deps, table, { extractedAt: new Date('2024-01-02T00:00:00Z') })
    const rows = await readHistory(await deps.openWarehouse(), { table, schema: 'main' })
    expect(rows.map((r) => [r.customer_id, r.region, r.is_current, r.is_deleted])).toEqual([
      [1, 'South', true, false],
      [2, 'North', false, false],
      [2, 'North', true, true],
    ])
  })

  it("a text status: status = 'D' is a delete, any other value is not", async () => {
    embedded = await makeEmbeddedProject(customersYaml('deletes: { when: "status = \'D\'" }'))
    const { deps, project } = embedded
    const table = project.tables[0]!
    embedded.writeCsv('customers.csv', 'customer_id,region,status', ['1,South,A', '2,North,A', '3,East,d'])
    await runTable(deps, table, { extractedAt: new Date('2024-01-01T00:00:00Z') })
    embedded.writeCsv('customers.csv', 'customer_id,region,status', ['1,South,D', '2,North,A', '3,East,d'])
    await runTable(deps, table, { extractedAt: new Date('2024-01-02T00:00:00Z') })
    const rows = await readHistory(await deps.openWarehouse(), { table, schema: 'main' })
    expect(rows.map((r) => [r.customer_id, r.is_current])).toEqual([
      [1, false],
      [2, true],
      [3, true],
    ])
    expect(Object.keys(rows[0]!)).not.toContain('status')
  })
})
