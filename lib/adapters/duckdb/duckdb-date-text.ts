/**
 * @duckdb/node-api writes some dates as other dates when it turns them into text (its JSON rows): an infinite
 * DATE as the day after the largest date (`5881580-07-11`) or before the smallest (`5877642-06-24 (BC)`), and the
 * year 1 BC as a year 0 (`0000-01-01`, `0000-06-30 10:00:00`). These are the texts DuckDB's own CAST to VARCHAR
 * writes for the same values, so `history` and `report` show what the warehouse holds. Pure.
 */

/** The texts the client writes for DATE 'infinity' and '-infinity': dates outside DuckDB's range. */
const INFINITE_DATES: Readonly<Record<string, string>> = Object.freeze({
  '5881580-07-11': 'infinity',
  '5877642-06-24 (BC)': '-infinity',
})

/** The text DuckDB's CAST to VARCHAR gives for a DATE or TIMESTAMP value the client wrote as `text`. */
export function duckDbDateText(text: string): string {
  const infinite = INFINITE_DATES[text]
  if (infinite !== undefined) return infinite
  const yearZero = /^0000-(\d\d-\d\d)(.*)$/.exec(text)
  return yearZero === null ? text : `0001-${yearZero[1]} (BC)${yearZero[2]}`
}

/** Column types whose values the client writes as dates (DuckDB's type names). */
export function isDateTextType(type: string): boolean {
  return type === 'DATE' || type.startsWith('TIMESTAMP')
}
