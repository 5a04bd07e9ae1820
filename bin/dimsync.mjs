#!/usr/bin/env node
// The CLI is TypeScript run through tsx, so the installed package and `npm run dimsync` execute the same source.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// DuckDB's worker threads each get a glibc malloc arena, and freed memory stays in them: capping the arenas keeps
// a large run's resident memory within the documented bound (measured on a 3M-row load: 506 MB → 419 MB peak).
// glibc reads the variable at startup only, hence the child process.
if (process.platform === 'linux' && process.env.MALLOC_ARENA_MAX === undefined) {
  const child = spawnSync(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    {
      stdio: 'inherit',
      env: { ...process.env, MALLOC_ARENA_MAX: '2' },
    },
  )
  if (child.signal) process.kill(process.pid, child.signal)
  process.exit(child.status ?? 1)
}

const { register } = await import('tsx/esm/api')
register()
await import('../functions/local/cli.ts')
