/**
 * The process state a test file may write and must not pass on: its environment variables and working directory.
 * The test files run one after another in shared worker processes (`isolate: false` in vitest.config.ts), so test/support/restore-process-state.ts takes a snapshot before each file and puts it back
 * after.
 */
export function snapshotProcessState(): { restore(): void } {
  const environment = { ...process.env }
  const directory = process.cwd()
  return {
    restore() {
      for (const name of Object.keys(process.env)) if (!(name in environment)) delete process.env[name]
      for (const [name, value] of Object.entries(environment)) {
        if (process.env[name] !== value) process.env[name] = value
      }
      if (process.cwd() !== directory) process.chdir(directory)
    },
  }
}
