/**
 * One key's versions drawn as SVG, built here rather than in the browser so the picture needs no script: a lane of
 * versions as bars on a time axis and a lane per attribute with its value per version; for bitemporal tables a
 * second picture with business time across and system time down, one rectangle per row ever stored.
 */
import { instantMs, type KeyTimeline, type TimelineVersion } from '../../lib/core/history-report.ts'
import { html, type Markup } from './html-template.ts'

const WIDTH = 960
const LABEL_WIDTH = 150
const RIGHT_MARGIN = 24
const LANE_HEIGHT = 24
const LANE_GAP = 6
const AXIS_HEIGHT = 26
const CHAR_WIDTH = 6.6
const DAY_MS = 86_400_000
/** Colours of attribute values, by order of first appearance in the lane (the same value, the same colour). */
const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#76b7b2', '#edc948', '#ff9da7', '#9c755f']

/** `YYYY-MM-DD HH:MM` (UTC), without the time when it is midnight. */
export function shortInstant(ms: number): string {
  const iso = new Date(ms).toISOString()
  const time = iso.slice(11, 16)
  return time === '00:00' ? iso.slice(0, 10) : `${iso.slice(0, 10)} ${time}`
}

interface Scale {
  readonly from: number
  readonly to: number
  /** Where open ends are drawn: past the last instant, so they read as "still going". */
  readonly open: number
  x(ms: number): number
}

function scaleOf(instants: readonly number[]): Scale {
  const finite = instants.filter((t) => Number.isFinite(t))
  let from = Math.min(...finite)
  let to = Math.max(...finite)
  if (!Number.isFinite(from)) from = to = 0
  if (to <= from) to = from + DAY_MS
  const span = to - from
  const end = to + span * 0.12
  const open = to + span * 0.1
  const plot = WIDTH - LABEL_WIDTH - RIGHT_MARGIN
  return { from, to: end, open, x: (ms) => LABEL_WIDTH + ((ms - from) / (end - from)) * plot }
}

/** At most six ticks at whole hours, days, weeks, or first days of months or years (UTC). */
function ticks(scale: Scale): number[] {
  const span = scale.to - scale.from
  const aligned = (step: number) => {
    const out: number[] = []
    for (let t = Math.ceil(scale.from / step) * step; t <= scale.to; t += step) out.push(t)
    return out
  }
  for (const step of [1, 3, 6, 12].map((h) => h * 3_600_000).concat([1, 2, 7, 14].map((d) => d * DAY_MS)))
    if (span / step <= 6) return aligned(step)
  const months = [1, 2, 3, 6, 12, 24, 60, 120, 240, 600, 1200].find((m) => span / (m * 30.44 * DAY_MS) <= 6)
  if (months === undefined) return []
  const start = new Date(scale.from)
  let index = start.getUTCFullYear() * 12 + start.getUTCMonth()
  if (Date.UTC(Math.floor(index / 12), index % 12, 1) < scale.from) index++
  index = Math.ceil(index / months) * months
  const out: number[] = []
  for (; ; index += months) {
    const t = Date.UTC(Math.floor(index / 12), index % 12, 1)
    if (t > scale.to) return out
    out.push(t)
  }
}

function axis(scale: Scale, y: number, height: number): Markup {
  return html`<g class="axis"
    >${ticks(scale).map((t) => {
      const x = scale.x(t).toFixed(1)
      return html`<line x1="${x}" x2="${x}" y1="${y}" y2="${y + height}"></line
        ><text x="${x}" y="${y - 6}" text-anchor="middle">${shortInstant(t)}</text>`
    })}</g
  >`
}

/** The text that fits `width` pixels, cut with an ellipsis; '' when not even two characters fit. */
function fitted(text: string, width: number): string {
  const chars = Math.floor((width - 6) / CHAR_WIDTH)
  if (chars < 2) return ''
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}…`
}

function windowText(v: TimelineVersion): string {
  return `${v.validFrom} → ${v.validTo ?? (v.deleted ? 'deleted, current' : 'current')}`
}

function valueText(value: string | null): string {
  return value === null ? 'NULL' : value
}

/** The bar of one version in a lane: a rectangle, its text if it fits, and the full text on hover. */
function bar(
  scale: Scale,
  v: TimelineVersion,
  y: number,
  label: string,
  title: string,
  fill: string,
  classes: string,
): Markup {
  const x1 = scale.x(instantMs(v.validFrom))
  const x2 = v.validTo === undefined ? scale.x(scale.open) : scale.x(instantMs(v.validTo))
  const width = Math.max(2, x2 - x1)
  const text = fitted(label, width)
  return html`<g class="${classes}"
    ><title>${title}</title
    ><rect
      x="${x1.toFixed(1)}"
      y="${y}"
      width="${width.toFixed(1)}"
      height="${LANE_HEIGHT}"
      rx="3"
      fill="${fill}"
    ></rect
    >${
      text === ''
        ? undefined
        : html`<text x="${(x1 + 4).toFixed(1)}" y="${y + LANE_HEIGHT / 2 + 4}">${text}</text>`
    }${v.validTo === undefined ? html`<path d="M${(x1 + width).toFixed(1)} ${y} l8 ${LANE_HEIGHT / 2} l-8 ${LANE_HEIGHT / 2} z" fill="${fill}"></path>` : undefined}</g
  >`
}

/** Versions known now, one lane of bars plus one lane per attribute. */
export function keyLanesSvg(timeline: KeyTimeline): Markup {
  const versions = timeline.versions.filter((v) => v.systemTo === undefined)
  const scale = scaleOf(versions.flatMap((v) => [v.validFrom, v.validTo ?? v.validFrom].map(instantMs)))
  const lanes = ['versions', ...timeline.attributes]
  const height = AXIS_HEIGHT + lanes.length * (LANE_HEIGHT + LANE_GAP) + 4
  const laneY = (i: number) => AXIS_HEIGHT + i * (LANE_HEIGHT + LANE_GAP)
  const versionLane = versions.map((v) =>
    bar(
      scale,
      v,
      laneY(0),
      `#${v.surrogateKey}${v.deleted ? ' deleted' : ''}`,
      `version #${v.surrogateKey}: ${windowText(v)}${v.deleted ? ' (records a deletion)' : ''}`,
      v.deleted ? '#b0b0b0' : '#35556f',
      v.deleted ? 'bar deleted' : 'bar version',
    ),
  )
  const attributeLanes = timeline.attributes.map((attribute, a) => {
    const colours = new Map<string, string>()
    return versions.map((v) => {
      const value = valueText(v.values[a] ?? null)
      if (!colours.has(value)) colours.set(value, PALETTE[colours.size % PALETTE.length]!)
      return bar(
        scale,
        v,
        laneY(a + 1),
        value,
        `${attribute} = ${value} (version #${v.surrogateKey}: ${windowText(v)})`,
        v.deleted ? '#d9d9d9' : colours.get(value)!,
        v.values[a] === null ? 'bar null' : 'bar value',
      )
    })
  })
  const labels = lanes.map(
    (lane, i) =>
      html`<text class="lane" x="${LABEL_WIDTH - 8}" y="${laneY(i) + LANE_HEIGHT / 2 + 4}" text-anchor="end"
        >${fitted(lane, LABEL_WIDTH - 8)}</text
      >`,
  )
  return html`<svg
    class="timeline"
    viewBox="0 0 ${WIDTH} ${height}"
    role="img"
    aria-label="versions of key ${timeline.key} of ${timeline.table} over business time"
  >
    ${axis(scale, AXIS_HEIGHT, height - AXIS_HEIGHT)}${labels}${versionLane}${attributeLanes}
  </svg>`
}

/**
 * Bitemporal tables: business time across, system time down; each row ever stored is a rectangle from when it
 * was valid and from when dimsync knew it, open ends reaching the right and bottom edges.
 */
export function bitemporalSvg(timeline: KeyTimeline): Markup {
  const versions = timeline.versions
  const business = scaleOf(versions.flatMap((v) => [v.validFrom, v.validTo ?? v.validFrom].map(instantMs)))
  const known = versions.flatMap((v) => [v.systemFrom, v.systemTo].filter((t) => t !== undefined))
  const system = scaleOf(known.map(instantMs))
  const plotHeight = 220
  const top = AXIS_HEIGHT
  const y = (ms: number) => top + ((ms - system.from) / (system.to - system.from)) * plotHeight
  // The instants the key's rows were learned and superseded (a merge each), or regular ticks when there are many.
  const merges = [...new Set(known.map(instantMs))]
    .filter((t) => Number.isFinite(t))
    .toSorted((a, b) => a - b)
  const marks = merges.length <= 8 ? merges : ticks(system)
  const sysTicks = marks.filter((t, i) => i === 0 || y(t) - y(marks[i - 1]!) >= 12)
  const colours = new Map<string, string>()
  const rects = versions.map((v) => {
    const state = v.deleted ? 'deleted' : v.values.map(valueText).join(' · ')
    if (!colours.has(state)) colours.set(state, PALETTE[colours.size % PALETTE.length]!)
    const x1 = business.x(instantMs(v.validFrom))
    const x2 = v.validTo === undefined ? business.x(business.open) : business.x(instantMs(v.validTo))
    const y1 = v.systemFrom === undefined ? top : y(instantMs(v.systemFrom))
    const y2 = v.systemTo === undefined ? y(system.open) : y(instantMs(v.systemTo))
    const width = Math.max(2, x2 - x1)
    const height = Math.max(2, y2 - y1)
    const text = fitted(`#${v.surrogateKey} ${state}`, width)
    const title =
      `version #${v.surrogateKey}: ${windowText(v)}; known ${v.systemFrom ?? '?'} → ${v.systemTo ?? 'now'}` +
      (timeline.attributes.length
        ? `; ${timeline.attributes.map((a, i) => `${a} = ${valueText(v.values[i] ?? null)}`).join(', ')}`
        : '')
    return html`<g class="${v.systemTo === undefined ? 'cell known' : 'cell superseded'}"
      ><title>${title}</title
      ><rect
        x="${x1.toFixed(1)}"
        y="${y1.toFixed(1)}"
        width="${width.toFixed(1)}"
        height="${height.toFixed(1)}"
        fill="${v.deleted ? '#d9d9d9' : colours.get(state)!}"
      ></rect
      >${
        text === '' || height < 14
          ? undefined
          : html`<text x="${(x1 + 4).toFixed(1)}" y="${(y1 + 13).toFixed(1)}">${text}</text>`
      }</g
    >`
  })
  const yAxis = sysTicks.map(
    (t) =>
      html`<g class="axis"
        ><line
          x1="${LABEL_WIDTH}"
          x2="${WIDTH - RIGHT_MARGIN}"
          y1="${y(t).toFixed(1)}"
          y2="${y(t).toFixed(1)}"
        ></line
        ><text x="${LABEL_WIDTH - 8}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end"
          >${merges.length <= 8 ? new Date(t).toISOString().slice(0, 19).replace('T', ' ') : shortInstant(t)}</text
        ></g
      >`,
  )
  const height = top + plotHeight + 30
  return html`<svg
    class="bitemporal"
    viewBox="0 0 ${WIDTH} ${height}"
    role="img"
    aria-label="rows of key ${timeline.key} of ${timeline.table}: business time across, system time down"
  >
    ${axis(business, top, plotHeight)}${yAxis}${rects}
    <text class="axis-title" x="${WIDTH - RIGHT_MARGIN}" y="${height - 8}" text-anchor="end">
      business time (valid_from → valid_to) →
    </text>
    <text class="axis-title" x="4" y="${top - 8}">system time ↓</text>
  </svg>`
}
