/** One replacement of the byte range [start, end) of a text. */
export interface TextEdit {
  readonly start: number
  readonly end: number
  readonly text: string
}

/**
 * Replaces byte ranges of a text (table names by the emulator's names) and maps offsets of the result back
 * to the original, so an error ZetaSQL reports in the edited text points at the statement the user wrote.
 * Edits nested in an earlier, wider edit are dropped (a table function call replaces its arguments too).
 */
export class TextEdits {
  readonly #source: Buffer
  readonly #edits: TextEdit[] = []

  constructor(source: Buffer) {
    this.#source = source
  }

  replace(start: number, end: number, text: string): void {
    this.#edits.push({ start, end, text })
  }

  /** The edited text, and a map from byte offsets in it to byte offsets in the source. */
  apply(): { text: string; toSource: (offset: number) => number } {
    const edits = [...this.#edits].sort((a, b) => a.start - b.start || b.end - a.end)
    const kept: { edit: TextEdit; newStart: number; newEnd: number }[] = []
    const parts: Buffer[] = []
    let cursor = 0
    let written = 0
    for (const edit of edits) {
      if (edit.start < cursor) continue
      const before = this.#source.subarray(cursor, edit.start)
      parts.push(before)
      written += before.length
      const replacement = Buffer.from(edit.text)
      parts.push(replacement)
      kept.push({ edit, newStart: written, newEnd: written + replacement.length })
      written += replacement.length
      cursor = edit.end
    }
    parts.push(this.#source.subarray(cursor))
    const text = Buffer.concat(parts).toString('utf8')
    const toSource = (offset: number) => {
      let delta = 0
      for (const { edit, newStart, newEnd } of kept) {
        if (offset < newStart) break
        if (offset < newEnd) return edit.start
        delta = edit.end - newEnd
      }
      return offset + delta
    }
    return { text, toSource }
  }
}
