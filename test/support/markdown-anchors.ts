import { readFileSync } from 'node:fs'

/**
 * The anchors GitHub gives a Markdown page's headings: lowercase, every character that is not a letter, a digit, a
 * space, `-` or `_` dropped, spaces turned into `-`, and a repeated anchor numbered (`-1`, `-2`). Code fences are
 * not headings.
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!heading) continue
    const base = heading[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}

export function fileAnchors(path: string): Set<string> {
  return headingAnchors(readFileSync(path, 'utf8'))
}
