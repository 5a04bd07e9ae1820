/**
 * Partition keys of the state table items of one dimsync table (its watermark and lease; its run records). The
 * stack scopes each function's DynamoDB access to the partitions of its own tables (`dynamodb:LeadingKeys`).
 */
export const STATE_PARTITIONS = Object.freeze({
  table: (table: string) => `TABLE#${table}`,
  runs: (table: string) => `RUNS#${table}`,
})
