/**
 * HTML built from templates where every interpolated value is escaped unless it is markup this module built:
 * table names, keys and attribute values come from users' data, and none of them may become markup.
 */

/** Markup already escaped (built by `html`), inserted as it is. */
export class Markup {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

type Value = Markup | string | number | boolean | null | undefined | readonly Value[]

/** A template whose values are escaped (arrays joined, null, undefined and false left out). */
export function html(strings: TemplateStringsArray, ...values: readonly Value[]): Markup {
  let out = strings[0]!
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!
  })
  return new Markup(out)
}

/** Markup from text this program wrote (a stylesheet, a script, an SVG path): never users' data. */
export function trusted(text: string): Markup {
  return new Markup(text)
}

function render(value: Value): string {
  if (value instanceof Markup) return value.text
  if (Array.isArray(value)) return value.map((v: Value) => render(v)).join('')
  if (value === null || value === undefined || value === false) return ''
  return escapeHtml(String(value))
}

/** Text safe in an element or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;')
}

/** JSON safe inside a `<script type="application/json">` element: no `<` can close it. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replaceAll('<', '\\u003c')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029')
}
