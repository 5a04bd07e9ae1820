#!/usr/bin/env node
// The CLI is TypeScript, run from the same source by the installed package and `npm run dimsync` (here compiled once
// into a cache, bin/compile-cache.mjs; by tsx when there is none).
import { readFileSync } from 'node:fs'

import { asksForVersionOnly, needsAllocatorSettings } from './launch-plan.mjs'

/** Signals a scheduler or a terminal uses to stop a job (cron, systemd and Kubernetes send SIGTERM). */
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP']

const commandLine = process.argv.slice(2)
// The allocators read their settings (lib/runtime/allocator-environment.mjs) once, when the process starts, hence a
// second start of Node with them. Where Node can replace its process (process.execve, Node >= 22.15) the worker
// takes the launcher's place: one process, no second Node resident for the whole run; elsewhere the launcher waits
// for its worker. A setting the user gave is kept; the others still get their defaults.
const missing =
  process.platform === 'linux' && needsAllocatorSettings(commandLine)
    ? (await import('../lib/runtime/allocator-environment.mjs')).missingAllocatorSettings(process.env)
    : {}
if (asksForVersionOnly(commandLine)) {
  // The version alone loads nothing else: one start of Node and package.json, the line commander prints.
  const { version } = JSON.parse(readFileSync(`${import.meta.dirname}/../package.json`, 'utf8'))
  process.stdout.write(`${version}\n`)
} else if (Object.keys(missing).length > 0) {
  const [{ spawn }, { fileURLToPath }] = await Promise.all([import('node:child_process'), import('node:url')])
  const args = [...process.execArgv, fileURLToPath(import.meta.url), ...commandLine]
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
