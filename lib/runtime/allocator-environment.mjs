// The memory allocators' settings a dimsync process starts with: bin/dimsync.mjs gives them to the CLI's worker,
// infra/constructs/loader-function.ts to the Lambda functions. Each is read once, when the process (glibc, V8) or
// DuckDB (its jemalloc) starts, hence environment variables. Figures: docs/benchmarks.md.
/** The V8 option sizing the young generation (MiB per semi-space); a user's own value of it is kept. */
const YOUNG_GENERATION_OPTION = '--max-semi-space-size'

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
  // V8 grows its young generation to 16 MiB semi-spaces while an extract decodes the wire, and keeps them committed
  // through the merge, where JavaScript allocates next to nothing: 2 MiB ones leave the merge about 25 MB more room
  // (a 3M-row PostgreSQL run entered its merge at 138-142 MB instead of 160-174 MB), at the same extract speed.
  NODE_OPTIONS: `${YOUNG_GENERATION_OPTION}=2`,
})

/**
 * The settings of ALLOCATOR_DEFAULTS that `env` does not set: the user's own are kept. NODE_OPTIONS holds other
 * options too: the user's are kept and the young generation size is added unless they size it.
 */
export function missingAllocatorSettings(env) {
  const missing = Object.fromEntries(
    Object.entries(ALLOCATOR_DEFAULTS).filter(([name]) => name !== 'NODE_OPTIONS' && env[name] === undefined),
  )
  const nodeOptions = env.NODE_OPTIONS?.trim() ?? ''
  // V8 reads its flags with either dashes or underscores.
  const sized = nodeOptions
    .split(/\s+/)
    .some((option) => option.replaceAll('_', '-').startsWith(YOUNG_GENERATION_OPTION))
  if (!sized)
    missing.NODE_OPTIONS = [nodeOptions, ALLOCATOR_DEFAULTS.NODE_OPTIONS].filter((o) => o !== '').join(' ')
  return missing
}

/** `env` with the allocator settings it lacks (the user's own kept, NODE_OPTIONS merged): what a dimsync process gets. */
export function withAllocatorSettings(env) {
  return { ...env, ...missingAllocatorSettings(env) }
}
