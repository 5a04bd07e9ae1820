import { checkTableAgainstSource } from '../config/index.ts'
import { ConfigError } from '../core/errors.ts'
import type { ProjectSpec, TableSpec } from '../core/table-spec.ts'
import type { Source } from '../ports/source.ts'

/**
 * Checks every table's source against its config (key, tracked, cursor ... columns exist) without staging
 * anything. Returns one line per table; throws one ConfigError listing every problem of every table.
 */
export async function validateProject(
  project: ProjectSpec,
  openSource: (table: TableSpec) => Source,
): Promise<string[]> {
  const issues: string[] = []
  const lines: string[] = []
  for (const [index, table] of project.tables.entries()) {
    const source = openSource(table)
    try {
      const columns = await source.describe(table)
      const problems = checkTableAgainstSource(
        project,
        index,
        columns.map((c) => c.name),
      )
      issues.push(...problems)
      if (problems.length === 0)
        lines.push(`${table.name}: ok (${columns.map((c) => `${c.name} ${c.type}`).join(', ')})`)
    } catch (error) {
      issues.push(
        `tables[${index}] (${table.name}): ${error instanceof Error ? error.message : String(error)}`,
      )
    } finally {
      await source.close()
    }
  }
  if (issues.length > 0) throw new ConfigError(project.configPath, issues)
  return lines
}
