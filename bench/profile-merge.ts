// Per-statement timing of one dimsync merge on the benchmark data (a development aid: npx tsx bench/profile-merge.ts).
import { copyFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { LocalStagingStore } from '../lib/adapters/staging/local-staging-store.ts'
import { DuckDbWarehouse } from '../lib/adapters/warehouse/duckdb-warehouse.ts'
import { mergeBatch } from '../lib/use-cases/merge-batch.ts'
import { benchTable, prepareMergeBenchmark } from './merge.ts'
import { TMP } from './support.ts'

const { base1, batchId, staging } = await prepareMergeBenchmark()
const work = join(TMP, 'profile.duckdb')
rmSync(work, { force: true })
copyFileSync(base1, work)
const warehouse = await DuckDbWarehouse.open({ path: work })
const times: [string, number][] = []
const original = warehouse.transaction.bind(warehouse)
warehouse.transaction = (fn, options) =>
  original(
    (tx) =>
      fn({
        query: tx.query,
        execute: async (s) => {
          const t = performance.now()
          await tx.execute(s)
          times.push([s.label, performance.now() - t])
        },
      }),
    options,
  )
const t = performance.now()
await mergeBatch(
  { warehouse, staging: staging as LocalStagingStore },
  { table: benchTable, schema: 'main', batchId, now: new Date() },
)
console.log(`total ${(performance.now() - t).toFixed(0)} ms`)
for (const [label, ms] of times) console.log(`${ms.toFixed(0).padStart(6)} ms  ${label}`)
await warehouse.close()
