export declare const ALLOCATOR_DEFAULTS: Readonly<{
  MALLOC_ARENA_MAX: string
  MALLOC_MMAP_THRESHOLD_: string
  DUCKDB_JE_MALLOC_CONF: string
  NODE_OPTIONS: string
}>
export declare function missingAllocatorSettings(
  env: Record<string, string | undefined>,
): Record<string, string>
export declare function withAllocatorSettings<E extends Record<string, string | undefined>>(
  env: E,
): E & Record<string, string>
