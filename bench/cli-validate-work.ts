/**
 * The baseline of `dimsync validate` in bench/cli-startup.ts: the work of the command alone (read the config, open
 * the stores, describe each source) in a bare Node process, compiled as the CLI is, without the launcher, the
 * compiled cache's check or the command-line parser.
 */
import { validate } from '../functions/local/commands.ts'

await validate({ config: process.argv[2] ?? 'dimsync.yaml' })
