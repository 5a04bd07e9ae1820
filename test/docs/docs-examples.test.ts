/**
 * Every `sh` and `yaml` block of README.md and docs/*.md works as written, or says on the line above it why it is
 * not run here (`<!-- not run: needs an AWS account -->`). A page is run top to bottom as one session in a fresh
 * copy of the repository's examples (`examples/…`, with `bin/` beside them), the way a reader who copied its blocks
 * in order would:
 * - `sh`: each command runs in the session's folder (`cd` moves it); `dimsync`/`npx dimsync` is the repository's CLI,
 *   `npm start` the quickstart; `npm ci`, `npm install` and `npm test` are what this run already is and are listed
 *   as such. Every command must exit 0; a command of any other program fails the test until its block is marked.
 * - `yaml`: resolved by the config parser as a whole dimsync.yaml; `<!-- write: dimsync.yaml -->` also writes it
 *   into the session's folder for the commands after it.
 * - a block marked `<!-- output -->` must appear, line for line, in what the last command printed (times of day
 *   and temporary paths normalised).
 * The test prints every block it ran and skipped.
 */
import { spawnSync } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

import { parseProject } from '../../lib/config/parse-project.ts'
import { cliEnvironment } from '../support/cli-process.ts'
import { markdownBlocks, shellCommands, type MarkdownBlock } from '../support/markdown-blocks.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith('.md'),
)
const RUN_LANGS = new Set(['sh', 'bash', 'shell', 'yaml', 'yml'])
/** What this test run already is: installing the dependencies and running the suite. */
const ALREADY_DONE = [/^npm (ci|install|i)$/, /^npm (test|t)$/, /^npm run test(:\w+)?$/]

const ledger: string[] = []
afterAll(() => {
  console.log(`docs examples:\n${ledger.join('\n')}`)
})

interface Session {
  readonly root: string
  cwd: string
  lastOutput: string
}

function newSession(): Session {
  const root = mkdtempSync(join(tmpdir(), 'dimsync-docs-'))
  cpSync(join(ROOT, 'examples'), join(root, 'examples'), {
    recursive: true,
    filter: (p) => !p.includes('.dimsync'),
  })
  symlinkSync(join(ROOT, 'bin'), join(root, 'bin'))
  return { root, cwd: root, lastOutput: '' }
}

function run(session: Session, file: string, args: readonly string[]): { code: number | null; out: string } {
  const r = spawnSync(file, args, {
    cwd: session.cwd,
    encoding: 'utf8',
    env: cliEnvironment({ NO_COLOR: '1' }),
    timeout: 120_000,
  })
  return { code: r.status, out: `${r.stdout}${r.status === 0 ? '' : r.stderr}` }
}

/** Runs one command of a block; returns a failure message, or undefined when it worked or is this run itself. */
function runCommand(session: Session, words: readonly string[]): string | undefined {
  const text = words.join(' ')
  if (ALREADY_DONE.some((done) => done.test(text))) return undefined
  let result: { code: number | null; out: string }
  if (words[0] === 'cd') {
    const to = resolve(session.cwd, words[1] ?? '.')
    if (!existsSync(to)) return `cd ${words[1]}: no such folder in the examples`
    session.cwd = to
    return undefined
  } else if (text === 'npm start') {
    result = run(session, join(ROOT, 'node_modules', '.bin', 'tsx'), [
      join(session.root, 'examples', 'quickstart', 'quickstart.ts'),
    ])
  } else if (words[0] === 'dimsync' || (words[0] === 'npx' && words[1] === 'dimsync')) {
    const args = words.slice(words[0] === 'npx' ? 2 : 1)
    result = run(session, process.execPath, [join(session.root, 'bin', 'dimsync.mjs'), ...args])
  } else {
    return `\`${text}\` is not a command this test runs: mark the block <!-- not run: why -->`
  }
  session.lastOutput = result.out
  if (result.code !== 0) return `\`${text}\` exited ${result.code}:\n${result.out.trim()}`
  return undefined
}

/** Lines as a reader compares them: trailing spaces dropped, temporary folders named alike. */
function normalised(text: string, session: Session): string[] {
  return text
    .split('\n')
    .map((line) => line.replaceAll(session.root, '<root>').trimEnd())
    .filter((line) => line !== '')
}

function containsInOrder(haystack: readonly string[], needle: readonly string[]): boolean {
  for (let start = 0; start + needle.length <= haystack.length; start++)
    if (needle.every((line, k) => haystack[start + k] === line)) return true
  return false
}

function runBlock(session: Session, block: MarkdownBlock): string | undefined {
  if (block.marker === 'output') {
    const expected = normalised(block.text, session)
    return containsInOrder(normalised(session.lastOutput, session), expected)
      ? undefined
      : `the output block differs from what the command above printed:\n${session.lastOutput}`
  }
  if (block.lang === 'yaml' || block.lang === 'yml') {
    try {
      parseProject(block.text, join(session.cwd, 'dimsync.yaml'))
    } catch (error) {
      return `the YAML is refused: ${(error as Error).message}`
    }
    const write = /^write: (\S+)$/.exec(block.marker ?? '')
    if (write) writeFileSync(join(session.cwd, write[1]!), block.text)
    return undefined
  }
  for (const words of shellCommands(block.text)) {
    const failure = runCommand(session, words)
    if (failure !== undefined) return failure
  }
  return undefined
}

describe('every command and YAML in the README and docs works as written, or says why it is not run', () => {
  it.each(PAGES)('%s', { timeout: 600_000 }, (page) => {
    const blocks = markdownBlocks(page, readFileSync(join(ROOT, page), 'utf8')).filter(
      (b) => RUN_LANGS.has(b.lang) || b.marker === 'output',
    )
    const session = newSession()
    const failures: string[] = []
    try {
      for (const block of blocks) {
        const where = `${page}:${block.line}`
        const skip = /^not run: (.+)$/.exec(block.marker ?? '')
        if (skip) {
          ledger.push(`  skipped ${where} (${block.lang}): ${skip[1]}`)
          continue
        }
        const failure = runBlock(session, block)
        ledger.push(`  ${failure === undefined ? 'ran' : 'FAILED'} ${where} (${block.lang || 'output'})`)
        if (failure !== undefined) failures.push(`${where}: ${failure}`)
      }
    } finally {
      rmSync(session.root, { recursive: true, force: true })
    }
    expect(failures, `run in ${relative(ROOT, session.cwd) || 'a copy of the examples'}`).toEqual([])
  })
})
