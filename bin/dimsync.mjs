#!/usr/bin/env node
// The CLI is TypeScript, run from the same source by the installed package and `npm run dimsync` (here compiled once
// into a cache, bin/compile-cache.mjs; by tsx when there is none).
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

import { missingAllocatorSettings } from '../lib/runtime/allocator-environment.mjs'

/** Signals a scheduler or a terminal uses to stop a job (cron, systemd and Kubernetes send SIGTERM). */
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP']

// The allocators read their settings (lib/runtime/allocator-environment.mjs) once, when the process starts, hence a
// second start of Node with them. Where Node can replace its process (process.execve, Node >= 22.15) the worker
// takes the launcher's place: one process, no second Node resident for the whole run; elsewhere the launcher waits
// for its worker. A setting the user gave is kept; the others still get their defaults.
const missing = process.platform === 'linux' ? missingAllocatorSettings(process.env) : {}
if (Object.keys(missing).length > 0) {
  const args = [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)]
  const env = { ...process.env, ...missing }
  if (typeof process.execve === 'function') {
    try {
      process.execve(process.execPath, [process.execPath, ...args], env)
    } catch {
      // Not replaced: the launcher starts the worker as a child process below.
    }
  }
  const child = spawn(process.execPath, args, { stdio: 'inherit', env })
  // The launcher stays alive until the worker ends, so whoever stops the launcher stops the run.
  const forward = (signal) => child.kill(signal)
  for (const signal of FORWARDED) process.on(signal, forward)
  child.once('error', (error) => {
    process.stderr.write(`dimsync: cannot start the worker process: ${error.message}\n`)
    process.exit(1)
  })
  child.once('exit', (code, signal) => {
    for (const name of FORWARDED) process.off(name, forward)
    // Ending by the same signal tells the caller (a shell: exit status 128 + n) the run was stopped, not failed.
    if (signal) process.kill(process.pid, signal)
    else process.exit(code ?? 1)
  })
} else {
  // The compiled cache of the TypeScript source (compile-cache.mjs); tsx when there is none (DIMSYNC_TSX=1 asks
  // for tsx). Only finding the cache falls back: an error of the CLI itself is the CLI's.
  const compiled =
    process.env.DIMSYNC_TSX === '1'
      ? undefined
      : await import('./compile-cache.mjs')
          .then(
            (cache) => cache.compiledEntry(),
            () => undefined,
          )
          .catch(() => undefined)
  if (compiled !== undefined) {
    if (process.env.DIMSYNC_DEBUG) process.setSourceMapsEnabled(true)
    await import(compiled)
  } else {
    const { register } = await import('tsx/esm/api')
    register()
    await import('../functions/local/cli.ts')
  }
}
