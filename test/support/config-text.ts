import { expect } from 'vitest'
import { parseProject } from '../../lib/config/parse-project.ts'
import { ConfigError } from '../../lib/core/errors.ts'

/** Where the config tests pretend their dimsync.yaml lives (relative source paths resolve against it). */
export const CONFIG_PATH = '/projects/shop/dimsync.yaml'

/**
 * A dimsync.yaml with one table named customers: `lines` holds its options one per line (blank lines dropped),
 * `defaults` is top-level text placed before `tables:` (for instance a `defaults:` block).
 */
export function oneTableYaml(lines: string, defaults = ''): string {
  const options = ['name: customers', ...lines.split('\n').filter((line) => line.trim() !== '')]
  return `version: 1\n${defaults}tables:\n  - ${options.join('\n    ')}\n`
}

/** The issues a ConfigError lists for this dimsync.yaml text; fails the test when the text is accepted. */
export function configIssues(text: string): readonly string[] {
  try {
    parseProject(text, CONFIG_PATH)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return (error as ConfigError).issues
  }
  throw new Error('expected a ConfigError')
}
