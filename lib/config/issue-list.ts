/** Problems found while resolving dimsync.yaml, collected so the user fixes the file in one pass. */
import { formatPath } from './messages.ts'
import type { ConfigIssue } from './zod-issues.ts'

export type Path = readonly PropertyKey[]

/** Issues are reported in document order: top-level sections first, then tables by index. */
const SECTION_ORDER = ['version', 'warehouse', 'staging', 'state', 'defaults', 'tables']

export class IssueList {
  readonly items: ConfigIssue[] = []
  add(path: Path, message: string): void {
    this.items.push({ path, message })
  }
  render(): string[] {
    const rank = (issue: ConfigIssue) => {
      if (issue.path.length === 0) return [-1, -1] as const
      const section = SECTION_ORDER.indexOf(String(issue.path[0]))
      const table = issue.path[0] === 'tables' && typeof issue.path[1] === 'number' ? issue.path[1] : -1
      return [section === -1 ? SECTION_ORDER.length : section, table] as const
    }
    return this.items
      .map((issue, index) => ({ issue, index, rank: rank(issue) }))
      .sort((a, b) => a.rank[0] - b.rank[0] || a.rank[1] - b.rank[1] || a.index - b.index)
      .map(({ issue }) => `${formatPath(issue.path)}: ${issue.message}`)
  }
}
