import type { CompiledStatement } from '../dialect.ts'
import { EVENTS_FROM_VARIABLE } from './bigquery-script.ts'

/**
 * One read of a merge script as BigQuery can dry-run it on its own, or why it cannot: BigQuery's dry run of a
 * whole script stops after its first DDL statement (dimsync's scripts begin with the ledger's), so `dimsync plan`
 * prices each read separately instead.
 */
export type StandaloneRead =
  { readonly label: string; readonly sql: string } | { readonly label: string; readonly notEstimable: string }

const TEMP_TABLE_AS = /^CREATE\s+(?:OR\s+REPLACE\s+)?TEMP(?:ORARY)?\s+TABLE\s+`([^`]+)`\s+AS\s+/i
const ASSIGNMENT = /^SET\s+\w+\s*=\s*/i
const DDL = /^(?:CREATE|ALTER|DROP)\b/i
const READS = /^(?:SELECT|WITH|INSERT|UPDATE|DELETE|MERGE|\()/i

/**
 * The reads of `statements` in script order: each query and DML statement as written, the query of each
 * temporary table (`CREATE TEMP TABLE t AS <query>`: a temporary table needs a script, its query does not), the
 * query a variable is set from, and each guard a statement runs under (`IF <guard> THEN`), once. A read that names
 * a temporary table the script builds, or a script variable, cannot be priced alone: BigQuery knows neither
 * outside the script. DDL that reads nothing (CREATE TABLE, views, DROP) is left out.
 */
export function standaloneReads(statements: readonly CompiledStatement[]): StandaloneRead[] {
  const temps: string[] = []
  const guards = new Set<string>()
  const reads: StandaloneRead[] = []
  const add = (label: string, sql: string) => {
    const temp = temps.find((name) => new RegExp(`(?<![.\\w])\`${escape(name)}\``).test(sql))
    if (temp !== undefined)
      reads.push({ label, notEstimable: `reads temporary table ${temp}, which the script builds` })
    else if (new RegExp(`\\b${EVENTS_FROM_VARIABLE}\\b`).test(sql))
      reads.push({
        label,
        notEstimable: `reads script variable ${EVENTS_FROM_VARIABLE}, set while the script runs`,
      })
    else reads.push({ label, sql })
  }
  for (const statement of statements) {
    if (statement.onlyIf !== undefined && !guards.has(statement.onlyIf)) {
      guards.add(statement.onlyIf)
      add(`guard of ${statement.label}`, `SELECT ${statement.onlyIf}`)
    }
    const sql = statement.sql.trim()
    const temp = TEMP_TABLE_AS.exec(sql)
    if (temp !== null) {
      add(statement.label, sql.slice(temp[0].length))
      temps.push(temp[1]!)
    } else if (ASSIGNMENT.test(sql)) add(statement.label, `SELECT ${sql.replace(ASSIGNMENT, '')}`)
    else if (READS.test(sql) && !DDL.test(sql)) add(statement.label, sql)
  }
  return reads
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
