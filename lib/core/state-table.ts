/**
 * The contract of the DynamoDB state table, shared by the state store that reads and writes it and the stack
 * that creates it and scopes each function's access to it: one home, so the two cannot drift apart.
 */

/** Key schema (both keys strings) and TTL attribute (epoch seconds) of the state table. */
export const STATE_TABLE_KEYS = Object.freeze({
  partitionKey: 'pk',
  sortKey: 'sk',
  ttl: 'expiresAt',
} as const)

/**
 * Partition keys of the state table items of one dimsync table (its watermark and lease; its run records). The
 * stack scopes each function's DynamoDB access to the partitions of its own tables (`dynamodb:LeadingKeys`).
 */
export const STATE_PARTITIONS = Object.freeze({
  table: (table: string) => `TABLE#${table}`,
  runs: (table: string) => `RUNS#${table}`,
})
