import type { Command, CommanderError } from 'commander'

/** Commander's codes for what it printed itself (help, version): nothing more to say. */
const PRINTED = new Set(['commander.helpDisplayed', 'commander.version', 'commander.help'])

/**
 * Commander's argument error as one line, pointing at the --help of the command it is about:
 * `unknown option '--bogus' (see dimsync run --help)`. Undefined when commander already printed what the user
 * asked for (help, version).
 */
export function oneLineArgumentError(
  error: CommanderError,
  program: Command,
  args: readonly string[],
): string | undefined {
  if (PRINTED.has(error.code)) return undefined
  let text = error.message.replace(/^error: /, '').trim()
  const invalid = /^option '[^']*?(--[\w-]+)[^']*' argument '(.*)' is invalid\. (.*)$/s.exec(text)
  if (invalid) {
    const [, flag, value, why] = invalid
    const choices = /^Allowed choices are (.*)\.$/.exec(why!)
    text = `${flag}: ${choices ? `'${value}' is not one of ${choices[1]}` : why}`
  }
  // Options before the command are the program's own (--help, --version): the first word names the command.
  const first = args.find((arg) => !arg.startsWith('-'))
  const command = program.commands.find((c) => c.name() === first)
  const help =
    command && error.code !== 'commander.unknownCommand'
      ? `dimsync ${command.name()} --help`
      : 'dimsync --help'
  return `${text.split('\n')[0]} (see ${help})`
}
