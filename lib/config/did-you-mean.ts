/**
 * Suggestions for misspelt keys, enum values and column names. Comparison ignores case so that `Customer_ID`
 * finds `customer_id`, because case slips are the most common typo against case-sensitive column matching.
 */

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions, each substring edited once). */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0
  if (a.length === 0) return b.length
  if (b.length === 0) return a.length
  // Three rolling rows are enough: a transposition looks back two rows.
  let beforePrev: number[] = []
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const cur = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, beforePrev[j - 2]! + 1)
      cur.push(d)
    }
    beforePrev = prev
    prev = cur
  }
  return prev[b.length]!
}

/**
 * The candidate closest to `word`, if it is close enough to be a plausible typo: at most 2 edits, or at most a
 * third of the word's length for long words. Never more edits than the word has characters, or `x` would
 * "suggest" any two-letter name. Ties go to the earlier candidate, so callers order candidates by likelihood.
 */
export function suggest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase()
  const allowed = Math.min(Math.max(2, Math.floor(word.length / 3)), word.length - 1)
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of candidates) {
    if (candidate === word) continue
    const d = editDistance(lower, candidate.toLowerCase())
    if (d <= allowed && d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best
}

/** `; did you mean "x"?`, or nothing: appended to messages so every caller words suggestions alike. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  const hit = suggest(word, candidates)
  return hit === undefined ? '' : `; did you mean "${hit}"?`
}
