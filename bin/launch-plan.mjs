// What bin/dimsync.mjs decides from the command line alone, before it loads anything: whether the answer is the
// version (printed without loading the CLI), and whether the command is worth a second start of Node with the
// allocator settings (lib/runtime/allocator-environment.mjs).

/** `dimsync --version` (or `-V`) and nothing else: what commander would print, read from package.json. */
export function asksForVersionOnly(args) {
  return args.length === 1 && (args[0] === '--version' || args[0] === '-V')
}

/**
 * Whether the command may read tables (every command but help and the version: even validate extracts a change
 * feed's table to check its operation column), so it gets the allocator settings, which Node, glibc and DuckDB
 * read only when the process starts. Help and the version load no engine: a second start of Node would only
 * double their time.
 */
export function needsAllocatorSettings(args) {
  if (args.includes('--help') || args.includes('-h')) return false
  // The program's own options are --version and --help: the first word that is not an option names the command.
  const command = args.find((arg) => !arg.startsWith('-'))
  return command !== undefined && command !== 'help'
}
