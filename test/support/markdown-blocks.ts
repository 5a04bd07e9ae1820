/**
 * The fenced blocks of a Markdown page, with the marker a page puts on the line above a block (an HTML comment, so
 * readers do not see it): `<!-- not run: why -->`, `<!-- output -->`, `<!-- write: dimsync.yaml -->`.
 */
export interface MarkdownBlock {
  readonly file: string
  /** 1-based line of the opening fence. */
  readonly line: number
  /** The fence's info string's first word (`sh`, `yaml`), or '' for a bare fence. */
  readonly lang: string
  readonly text: string
  /** The text of the HTML comment on the last non-blank line above the fence. */
  readonly marker?: string
}

const FENCE = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/
const MARKER = /^\s*<!--\s*(.*?)\s*-->\s*$/

export function markdownBlocks(file: string, markdown: string): MarkdownBlock[] {
  const lines = markdown.split('\n')
  const blocks: MarkdownBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!)
    if (open === null) continue
    const [, indent, fence] = open
    const body: string[] = []
    let j = i + 1
    for (; j < lines.length && !lines[j]!.trimStart().startsWith(fence!); j++)
      body.push(lines[j]!.slice(Math.min(indent!.length, lines[j]!.length - lines[j]!.trimStart().length)))
    let above = i - 1
    while (above >= 0 && lines[above]!.trim() === '') above--
    const marker = above >= 0 ? MARKER.exec(lines[above]!)?.[1] : undefined
    blocks.push({ file, line: i + 1, lang: open[3] ?? '', text: body.join('\n'), marker })
    i = j
  }
  return blocks
}

/**
 * The commands of a shell block: continuation lines joined, comments dropped, `a && b` split, each command as its
 * words (single and double quotes grouped, as a shell would, without expansion).
 */
export function shellCommands(text: string): string[][] {
  const joined = text.replace(/\\\n/g, ' ')
  const commands: string[][] = []
  for (const line of joined.split('\n')) {
    let words: string[] = []
    let word = ''
    let inWord = false
    let quote: string | undefined
    const end = () => {
      if (inWord) words.push(word)
      word = ''
      inWord = false
    }
    for (let k = 0; k < line.length; k++) {
      const c = line[k]!
      if (quote !== undefined) {
        if (c === quote) quote = undefined
        else word += c
      } else if (c === "'" || c === '"') {
        quote = c
        inWord = true
      } else if (c === '#' && !inWord) {
        break
      } else if (c === '&' && line[k + 1] === '&') {
        end()
        if (words.length > 0) commands.push(words)
        words = []
        k++
      } else if (/\s/.test(c)) {
        end()
      } else {
        word += c
        inWord = true
      }
    }
    end()
    if (words.length > 0) commands.push(words)
  }
  return commands
}
