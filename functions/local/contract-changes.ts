import { describeChange } from '../../lib/core/table-contract.ts'
import type { MergeBatchResult } from '../../lib/use-cases/merge-batch.ts'

/**
 * What a merge says of the config changes it applied since the dimension was built (appended to the run's and
 * the plan's line): `; config changed: tracked columns [name] → [name, price] (current versions rehashed, no
 * version opened)`. Empty when nothing changed.
 */
export function describeContractChanges(merge: MergeBatchResult): string {
  const changes = merge.contractChanges ?? []
  if (changes.length === 0) return ''
  const rehashed = changes.some((c) => c.part === 'tracked')
  return (
    `; config changed: ${changes.map(describeChange).join(', ')} ` +
    `(${rehashed ? 'current versions rehashed, ' : ''}no version opened by the change itself)`
  )
}
