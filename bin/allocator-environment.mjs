// The memory allocators' settings a dimsync process starts with: bin/dimsync.mjs gives them to the CLI's worker,
// infra/constructs/loader-function.ts to the Lambda functions. Each is read once, when the process (glibc) or
// DuckDB (its jemalloc) starts, hence environment variables. Figures: docs/benchmarks.md.
export const ALLOCATOR_DEFAULTS = Object.freeze({
  // DuckDB's worker threads each get a glibc malloc arena, and freed memory stays in them: two arenas keep a large
  // run's resident memory near DuckDB's own limit (a 3M-row load peaked 419 MB instead of 506 MB).
  MALLOC_ARENA_MAX: '2',
  // glibc raises its mmap threshold each time a large block is freed, after which the 64 KiB buffers a socket
  // read fills stay on the heap once freed: a fixed threshold returns them (a 1M-row PostgreSQL run peaked
  // 263-269 MB instead of 288-291 MB).
  MALLOC_MMAP_THRESHOLD_: '65536',
  // One jemalloc arena for DuckDB: the threads that run statements one after another reuse each other's freed
  // pages (a 1M-row run peaked 264-277 MB instead of 308-318 MB).
  DUCKDB_JE_MALLOC_CONF: 'narenas:1',
})

/** The settings of ALLOCATOR_DEFAULTS that `env` does not set: the user's own are kept. */
export function missingAllocatorSettings(env) {
  return Object.fromEntries(Object.entries(ALLOCATOR_DEFAULTS).filter(([name]) => env[name] === undefined))
}
