import type { StagedColumn } from '../../core/batch.ts'
import { planDimensionLayout } from '../../core/dimension-layout.ts'
import type { TableSpec } from '../../core/table-spec.ts'
import { bigQueryStorableType } from './bigquery-types.ts'

/**
 * Columns of JSON or array type that the merge would compare value by value (`IS DISTINCT FROM`, not through the
 * row hash), each with a message naming it: untracked (type 1) columns, the sources of type 3 and 6 columns,
 * partial-update columns, and every attribute of a bitemporal table. BigQuery has no equality on JSON or arrays,
 * so the script would fail; such a column is refused before anything is loaded instead (and by dimsync validate).
 * Tracked columns are compared through the row hash, which renders them as text: they are fine.
 */
export function bigQueryUncomparableColumns(
  table: TableSpec,
  batchId: string,
  staged: readonly StagedColumn[],
): string[] {
  const uncomparable = new Set(
    staged
      .filter((c) => {
        const type = bigQueryStorableType(c.type)
        return type === 'JSON' || type?.startsWith('ARRAY<') === true
      })
      .map((c) => c.name),
  )
  if (uncomparable.size === 0) return []
  let layout: ReturnType<typeof planDimensionLayout>
  try {
    layout = planDimensionLayout(table, batchId, staged, undefined)
  } catch {
    return [] // a layout the merge refuses anyway, with its own message
  }
  const roles = new Map<string, string>()
  for (const c of layout.type1) roles.set(c.name, 'untracked (type 1)')
  for (const c of layout.derived)
    roles.set(c.from, `the source of ${c.name} (type ${c.kind === 'previous' ? 3 : 6})`)
  for (const c of [...(layout.partial?.ignoreNulls ?? []), ...(layout.partial?.kept ?? [])])
    roles.set(c.name, 'a partial-update column')
  if (table.systemTime !== undefined)
    for (const c of [...layout.tracked, ...layout.type1])
      roles.set(c.name, 'an attribute of a bitemporal table')
  return [...roles]
    .filter(([name]) => uncomparable.has(name))
    .map(
      ([name, role]) =>
        `column "${name}" is ${role}, which the merge compares value by value, and BigQuery has no equality on ` +
        `its type (${staged.find((c) => c.name === name)!.type}): track it (changes then open versions) or cast it ` +
        'to text in a query source',
    )
}
