/**
 * The page of `dimsync report` (and of `history --format html`): one self-contained HTML file built from the
 * report's aggregates. Numbers are in tables beside the charts, so the page reads without its script; the charts
 * are uPlot (inlined, no network), drawn from a JSON block of numbers only. Every text from the warehouse or the
 * config goes through the escaping template, and a Content-Security-Policy allows only this page's own script and
 * style (by hash) and no request at all.
 */
import { createHash } from 'node:crypto'

import {
  recentDays,
  runSeconds,
  sumDays,
  type DimensionDay,
  type DimensionReport,
  type FactReport,
  type KeyTimeline,
  type LedgerBatch,
  type ProjectReport,
} from '../../lib/core/history-report.ts'
import type { RunRecord } from '../../lib/core/run-record.ts'
import { html, scriptJson, trusted, type Markup } from './html-template.ts'
import { bitemporalSvg, keyLanesSvg } from './key-timeline-svg.ts'

/** The chart library as the page inlines it. */
export interface ChartAssets {
  /** uPlot's IIFE build (defines the global `uPlot`). */
  readonly script: string
  readonly style: string
}

/** Days a chart spans, up to the last day with activity. */
export const CHART_DAYS = 366
/** Days with activity listed in the table beside a chart. */
const TABLE_DAYS = 10
const DAY_MS = 86_400_000

/** One chart as the page's script draws it: days (UTC midnights, seconds) and series of numbers. */
interface ChartSpec {
  readonly id: string
  readonly x: readonly number[]
  readonly series: readonly {
    readonly label: string
    readonly color: string
    readonly kind: 'bars' | 'line'
    readonly scale: 'count' | 'percent'
    readonly values: readonly (number | null)[]
  }[]
}

const COLOURS = {
  opened: '#2f6f9f',
  closed: '#e07b39',
  deleted: '#c0392b',
  restored: '#2e8b57',
  late: '#7d3c98',
  corrected: '#b08d00',
  facts: '#5b7c99',
  unknown: '#c0392b',
  inferred: '#e07b39',
}

const PAGE_STYLE = `
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2733; margin: 0; background: #f6f7f9; }
main { max-width: 1120px; margin: 0 auto; padding: 16px 24px 40px; }
h1 { font-size: 22px; margin: 8px 0 2px; }
h2 { font-size: 18px; margin: 0 0 8px; }
h2 .target, .muted { color: #66727f; font-weight: normal; }
h3 { font-size: 14px; margin: 18px 0 6px; }
section { background: #fff; border: 1px solid #dde2e7; border-radius: 8px; padding: 16px 20px; margin: 16px 0; }
nav a { margin-right: 12px; }
.cards { display: flex; flex-wrap: wrap; gap: 8px; margin: 8px 0; }
.card { border: 1px solid #e3e7eb; border-radius: 6px; padding: 6px 10px; min-width: 110px; }
.card b { display: block; font-size: 17px; }
.card span { color: #66727f; font-size: 12px; }
.pair { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 16px; align-items: start; }
@media (max-width: 800px) { .pair { grid-template-columns: 1fr; } }
.chart { min-height: 40px; }
table { border-collapse: collapse; font-size: 12.5px; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 8px; border-bottom: 1px solid #eceff2; text-align: right; vertical-align: top; }
th { color: #4b5661; font-weight: 600; background: #f3f5f7; }
td.text, th.text { text-align: left; }
tr.total td { font-weight: 600; border-top: 1px solid #c9d0d6; }
tr.failed td { background: #fdf0ee; }
.error { color: #a8321f; max-width: 420px; overflow-wrap: anywhere; text-align: left; }
.wide { overflow-x: auto; }
dl.legend { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0 0; font-size: 13px; }
dl.legend dt { font-weight: 600; }
dl.legend dd { margin: 0; color: #4b5661; }
svg { width: 100%; height: auto; font: 11px system-ui, sans-serif; }
svg .axis line { stroke: #e1e5e9; }
svg .axis text, svg .lane, svg .axis-title { fill: #4b5661; }
svg .bar text, svg .cell text { fill: #fff; }
svg .bar.null text, svg .bar.deleted text { fill: #333; font-style: italic; }
svg .cell.superseded rect { opacity: 0.55; stroke: #fff; }
svg .cell.known rect { stroke: #1d2733; stroke-width: 1.2; }
`

/** The whole page. `assets` undefined: a page without charts (a key's timeline only), and without any script. */
export function renderReportPage(report: ProjectReport, assets: ChartAssets | undefined): string {
  const charts: ChartSpec[] = []
  const dimensions = report.dimensions.map((r, i) => dimensionSection(r, `table-${i}`, charts))
  const facts = report.facts.map((r, i) => factSection(r, `fact-${i}`, charts))
  const timeline = report.timeline === undefined ? undefined : timelineSection(report.timeline)
  const withCharts = assets !== undefined && charts.length > 0
  const style = PAGE_STYLE + (withCharts ? assets.style : '')
  const bootstrap = withCharts ? CHART_BOOTSTRAP : ''
  const scripts = withCharts ? [assets.script, bootstrap] : []
  for (const script of scripts) assertInlineSafe(script)
  assertInlineSafe(style)
  const policy = [
    "default-src 'none'",
    `style-src ${hashSource(style)}`,
    `script-src ${scripts.length ? scripts.map(hashSource).join(' ') : "'none'"}`,
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ')
  const sections = [...report.dimensions, ...report.facts]
  const title = report.timeline
    ? `${report.timeline.table} key ${report.timeline.key}`
    : `history of ${sections.map((s) => s.name).join(', ') || 'no table'}`
  const page = html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta http-equiv="Content-Security-Policy" content="${policy}" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>dimsync: ${title}</title>
        ${inline('style', style)}
      </head>
      <body>
        <main>
          <header>
            <h1>${sections.length > 0 ? 'dimsync report' : 'dimsync history'}</h1>
            <p class="muted">
              ${report.config} · warehouse ${report.warehouse} · generated
              ${report.generatedAt.replace('T', ' ').slice(0, 19)} UTC
            </p>
            ${
              sections.length > 1
                ? html`<nav>
                    ${report.dimensions.map((d, i) => html`<a href="#table-${i}">${d.name}</a>`)}${report.facts.map((f, i) => html`<a href="#fact-${i}">${f.name}</a>`)}
                  </nav>`
                : undefined
            }
            ${sections.length > 0 ? legend() : undefined}
          </header>
          ${timeline}${dimensions}${facts}
        </main>
        ${withCharts ? inline('script', scriptJson({ charts }), ' type="application/json" id="dimsync-charts"') : undefined}
        ${scripts.map((script) => inline('script', script))}
      </body>
    </html> `
  return page.text
}

function legend(): Markup {
  return html`<dl class="legend">
    <dt>opened, closed</dt>
    <dd>versions whose window starts or ends that day (business time, UTC days)</dd>
    <dt>deleted, restored</dt>
    <dd>keys a batch of that extraction day deleted; versions that bring a deleted key back</dd>
    <dt>late</dt>
    <dd>keys whose history a batch of that day recomputed because an event was older than what was known</dd>
    <dt>corrected</dt>
    <dd>versions a later batch replaced: superseded in system time (bitemporal) or retired (change feeds)</dd>
    <dt>depth</dt>
    <dd>versions per key: median, 99th percentile, maximum</dd>
  </dl>`
}

function card(value: string | number, label: string): Markup {
  return html`<div class="card">
    <b>${typeof value === 'number' ? count(value) : value}</b><span>${label}</span>
  </div>`
}

function dimensionSection(r: DimensionReport, id: string, charts: ChartSpec[]): Markup {
  const heading = html`<h2>
    ${r.name} <span class="target">→ ${r.target}${r.bitemporal ? ' (bitemporal)' : ''}</span>
  </h2>`
  if (!r.loaded)
    return html`<section id="${id}">
      ${heading}
      <p>Not loaded yet: no run has merged a batch into ${r.target}.</p>
      ${runsSection(r.runs)}
    </section>`
  const totals = sumDays(r.days)
  const lastRun = r.runs[0]
  const cards = html`<div class="cards">
    ${[
      card(r.rows, 'versions'),
      card(r.depth.keys, 'keys'),
      card(r.liveKeys, 'live keys'),
      card(r.depth.keys - r.liveKeys, 'deleted keys now'),
      card(`${r.depth.median} / ${r.depth.p99} / ${r.depth.max}`, 'depth: median / p99 / max'),
      card(totals.batches ?? 0, 'batches merged'),
      lastRun ? card(lastRun.status, `last run ${shortTime(lastRun.startedAt)}`) : undefined,
    ]}
  </div>`
  const versions = dayPair(
    `${id}-versions`,
    'Versions opened and closed per day',
    r.days,
    [
      { field: 'opened', label: 'opened', color: COLOURS.opened },
      { field: 'closed', label: 'closed', color: COLOURS.closed },
    ],
    charts,
    totals,
  )
  const restoredNote =
    r.restoredCounting === 'none'
      ? html`<p class="muted">
          This table deletes no key (deletes: ${r.deletes}${r.mode !== 'history' ? `, mode: ${r.mode}` : ''}).
        </p>`
      : undefined
  const deletions =
    (totals.deletedKeys ?? 0) + (totals.restored ?? 0) === 0
      ? (restoredNote ?? html`<p class="muted">No key was deleted or restored.</p>`)
      : dayPair(
          `${id}-deletes`,
          'Keys deleted and restored per day',
          r.days,
          [
            { field: 'deletedKeys', label: 'deleted keys', color: COLOURS.deleted },
            { field: 'restored', label: 'restored', color: COLOURS.restored },
          ],
          charts,
          totals,
        )
  const corrections =
    (totals.lateKeys ?? 0) + (totals.corrected ?? 0) === 0
      ? html`<p class="muted">No late event and no correction.</p>`
      : dayPair(
          `${id}-late`,
          'Late events and corrections per day',
          r.days,
          [
            { field: 'lateKeys', label: 'late keys', color: COLOURS.late },
            { field: 'corrected', label: 'corrected versions', color: COLOURS.corrected },
          ],
          charts,
          totals,
        )
  return html`<section id="${id}">
    ${heading}${cards}${versions}${deletions}${corrections}${depthNote(r)}${runsSection(r.runs)}${batchesSection(r.recentBatches)}
  </section>`
}

function depthNote(r: DimensionReport): Markup | undefined {
  if (r.depth.keys === 0) return html`<p class="muted">The dimension holds no version.</p>`
  return undefined
}

type DayField = Exclude<keyof DimensionDay, 'day'>

/** A chart of two daily counts and, beside it, the last days with activity and the totals. */
function dayPair(
  id: string,
  title: string,
  days: readonly DimensionDay[],
  series: readonly { field: DayField; label: string; color: string }[],
  charts: ChartSpec[],
  totals: Record<string, number>,
): Markup {
  const active = days.filter((d) => series.some((s) => d[s.field] !== 0))
  const shown = recentDays(active, CHART_DAYS)
  const filled = fillDays(shown.map((d) => d.day))
  const byDay = new Map(shown.map((d) => [d.day, d]))
  charts.push({
    id,
    x: filled.map(daySeconds),
    series: series.map((s) => ({
      label: s.label,
      color: s.color,
      kind: 'bars',
      scale: 'count',
      values: filled.map((day) => byDay.get(day)?.[s.field] ?? 0),
    })),
  })
  const rows = active.slice(-TABLE_DAYS).toReversed()
  return html`<h3>${title}</h3>
    <div class="pair">
      <div class="chart" id="${id}"></div>
      <div class="wide">
        <table>
          <thead>
            <tr>
              <th class="text">day</th>
              ${series.map((s) => html`<th>${s.label}</th>`)}
            </tr>
          </thead>
          <tbody>
            ${rows.map(
              (d) =>
                html`<tr>
                  <td class="text">${d.day}</td>
                  ${series.map((s) => html`<td>${count(d[s.field])}</td>`)}
                </tr>`,
            )}
            <tr class="total">
              <td class="text">all days</td>
              ${series.map((s) => html`<td>${count(totals[s.field] ?? 0)}</td>`)}
            </tr>
          </tbody>
        </table>
        ${
          shown.length < active.length
            ? html`<p class="muted">
                The chart shows the ${CHART_DAYS} days up to the last one;
                ${count(active.length - shown.length)} earlier day(s) count in the totals.
              </p>`
            : undefined
        }
        ${
          active.length > TABLE_DAYS
            ? html`<p class="muted">the last ${TABLE_DAYS} of ${count(active.length)} days</p>`
            : undefined
        }
      </div>
    </div>`
}

function factSection(r: FactReport, id: string, charts: ChartSpec[]): Markup {
  const heading = html`<h2>${r.name} <span class="target">→ ${r.target} (fact)</span></h2>`
  if (!r.loaded)
    return html`<section id="${id}">
      ${heading}
      <p>Not loaded yet: no run has loaded a batch into ${r.target}.</p>
      ${runsSection(r.runs)}
    </section>`
  const total = r.days.reduce((sum, d) => sum + d.rows, 0)
  const sumAt = (field: 'unknown' | 'inferred', i: number) =>
    r.days.reduce((sum, d) => sum + (d[field][i] ?? 0), 0)
  const cards = html`<div class="cards">
    ${[
      card(total, 'facts'),
      card(r.days.length, 'event days'),
      r.references.map((ref, i) => [
        card(
          percent(sumAt('unknown', i), total),
          `on the unknown ${ref.dimension} (key ${ref.unknownMemberKey})`,
        ),
        ref.countsInferred
          ? card(percent(sumAt('inferred', i), total), `on inferred ${ref.dimension}`)
          : undefined,
      ]),
    ]}
  </div>`
  const shown = recentDays(r.days, CHART_DAYS)
  const filled = fillDays(shown.map((d) => d.day))
  const byDay = new Map(shown.map((d) => [d.day, d]))
  const share = (field: 'unknown' | 'inferred', i: number) =>
    filled.map((day) => {
      const d = byDay.get(day)
      return d === undefined || d.rows === 0 ? null : round1((100 * (d[field][i] ?? 0)) / d.rows)
    })
  const chartId = `${id}-rows`
  charts.push({
    id: chartId,
    x: filled.map(daySeconds),
    series: [
      {
        label: 'facts',
        color: COLOURS.facts,
        kind: 'bars',
        scale: 'count',
        values: filled.map((day) => byDay.get(day)?.rows ?? 0),
      },
      ...r.references.flatMap((ref, i) => [
        {
          label: `% unknown ${ref.dimension}`,
          color: COLOURS.unknown,
          kind: 'line' as const,
          scale: 'percent' as const,
          values: share('unknown', i),
        },
        ...(ref.countsInferred
          ? [
              {
                label: `% inferred ${ref.dimension}`,
                color: COLOURS.inferred,
                kind: 'line' as const,
                scale: 'percent' as const,
                values: share('inferred', i),
              },
            ]
          : []),
      ]),
    ],
  })
  const columns = r.references.flatMap((ref, i) => [
    {
      label: `unknown ${ref.dimension}`,
      value: (d: (typeof r.days)[number]) => d.unknown[i] ?? 0,
      total: sumAt('unknown', i),
    },
    ...(ref.countsInferred
      ? [
          {
            label: `inferred ${ref.dimension}`,
            value: (d: (typeof r.days)[number]) => d.inferred[i] ?? 0,
            total: sumAt('inferred', i),
          },
        ]
      : []),
  ])
  const rows = r.days.slice(-TABLE_DAYS).toReversed()
  const table = html`<table>
    <thead>
      <tr>
        <th class="text">event day</th>
        <th>facts</th>
        ${columns.map((c) => html`<th>${c.label}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (d) =>
          html`<tr>
            <td class="text">${d.day}</td>
            <td>${count(d.rows)}</td>
            ${columns.map((c) => html`<td>${count(c.value(d))}</td>`)}
          </tr>`,
      )}
      <tr class="total">
        <td class="text">all days</td>
        <td>${count(total)}</td>
        ${columns.map((c) => html`<td>${count(c.total)}</td>`)}
      </tr>
    </tbody>
  </table>`
  return html`<section id="${id}">
    ${heading}${cards}
    <h3>Facts per event day, and the share on unknown and inferred members</h3>
    <div class="pair">
      <div class="chart" id="${chartId}"></div>
      <div class="wide">${table}</div>
    </div>
    ${runsSection(r.runs)}${batchesSection(r.recentBatches)}
  </section>`
}

function runsSection(runs: readonly RunRecord[]): Markup {
  if (runs.length === 0)
    return html`<h3>Last runs</h3>
      <p class="muted">No run record (the state store holds none for this table).</p>`
  const refused = runs.filter((r) => r.status === 'failed')
  return html`<h3>Last runs</h3>
    <div class="wide">
      <table>
        <thead>
          <tr>
            <th class="text">started (UTC)</th>
            <th class="text">status</th>
            <th>seconds</th>
            <th class="text">batch</th>
            <th>rows</th>
            <th>inserted</th>
            <th>closed</th>
            <th>deleted keys</th>
            <th>unchanged</th>
            <th>late keys</th>
          </tr>
        </thead>
        <tbody>
          ${runs.map((run) => {
            const seconds = runSeconds(run)
            const c = run.counts
            return html`<tr class="${run.status === 'failed' ? 'failed' : ''}">
              <td class="text">${shortTime(run.startedAt)}</td>
              <td class="text">${run.status}</td>
              <td>${seconds === undefined ? '' : seconds.toFixed(1)}</td>
              <td class="text">${run.batchId ?? ''}</td>
              <td>${optionalCount(run.rowsExtracted)}</td>
              <td>${optionalCount(c?.insertedVersions)}</td>
              <td>${optionalCount(c?.closedVersions)}</td>
              <td>${optionalCount(c?.deletedKeys)}</td>
              <td>${optionalCount(c?.unchangedEvents)}</td>
              <td>${optionalCount(c?.lateKeys)}</td>
            </tr>`
          })}
        </tbody>
      </table>
    </div>
    ${
      refused.length === 0
        ? undefined
        : html`<h3>Refused or failed runs</h3>
            <p class="muted">
              A refused batch wrote nothing and stays staged: the next run tries it again first (or
              <code>dimsync discard</code> drops it).
            </p>
            <div class="wide">
              <table>
                <thead>
                  <tr>
                    <th class="text">started (UTC)</th>
                    <th class="text">batch</th>
                    <th class="text">why</th>
                  </tr>
                </thead>
                <tbody>
                  ${refused.map(
                    (run) =>
                      html`<tr class="failed">
                        <td class="text">${shortTime(run.startedAt)}</td>
                        <td class="text">${run.batchId ?? ''}</td>
                        <td class="error">${shorten(run.error ?? '', 400)}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>
            </div>`
    }`
}

function batchesSection(batches: readonly LedgerBatch[]): Markup | undefined {
  if (batches.length === 0) return undefined
  return html`<details>
    <summary>Last batches in the ledger (_dimsync_batches)</summary>
    <div class="wide">
      <table>
        <thead>
          <tr>
            <th class="text">batch</th>
            <th class="text">extracted at</th>
            <th class="text">applied at</th>
            <th class="text">mode</th>
            <th>events</th>
            <th>inserted</th>
            <th>closed</th>
            <th>deleted keys</th>
            <th>unchanged</th>
            <th>late keys</th>
          </tr>
        </thead>
        <tbody>
          ${batches.map(
            (b) =>
              html`<tr>
                <td class="text">${b.batchId}</td>
                <td class="text">${shortTime(b.extractedAt)}</td>
                <td class="text">${shortTime(b.appliedAt)}</td>
                <td class="text">${b.mode}</td>
                <td>${count(b.events)}</td>
                <td>${count(b.insertedVersions)}</td>
                <td>${count(b.closedVersions)}</td>
                <td>${count(b.deletedKeys)}</td>
                <td>${count(b.unchangedEvents)}</td>
                <td>${count(b.lateKeys)}</td>
              </tr>`,
          )}
        </tbody>
      </table>
    </div>
  </details>`
}

function timelineSection(t: KeyTimeline): Markup {
  const heading = html`<h2>${t.table} <span class="target">→ ${t.target}</span>, key ${t.key}</h2>`
  if (t.versions.length === 0)
    return html`<section id="key">
      ${heading}
      <p>No version of key ${t.key} in ${t.target}.</p>
    </section>`
  const known = t.versions.filter((v) => v.systemTo === undefined)
  const table = html`<div class="wide">
    <table>
      <thead>
        <tr>
          <th>version</th>
          <th class="text">valid from</th>
          <th class="text">valid to</th>
          ${
            t.bitemporal
              ? html`<th class="text">known from</th>
                  <th class="text">known until</th>`
              : undefined
          }${t.attributes.map((a) => html`<th class="text">${a}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${t.versions.map(
          (v) =>
            html`<tr class="${v.systemTo === undefined ? '' : 'superseded'}">
              <td>#${v.surrogateKey}${v.deleted ? ' deleted' : ''}</td>
              <td class="text">${shortTime(v.validFrom)}</td>
              <td class="text">${v.validTo === undefined ? 'current' : shortTime(v.validTo)}</td>
              ${
                t.bitemporal
                  ? html`<td class="text">${v.systemFrom === undefined ? '' : shortTime(v.systemFrom)}</td>
                      <td class="text">${v.systemTo === undefined ? 'now' : shortTime(v.systemTo)}</td>`
                  : undefined
              }${v.values.map((value) => html`<td class="text">${value === null ? 'NULL' : value}</td>`)}
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`
  const superseded = t.versions.length - known.length
  return html`<section id="key">
    ${heading}
    <p class="muted">
      ${count(known.length)}
      version(s)${t.bitemporal ? `, and ${count(superseded)} row(s) superseded in system time` : ''}; hover a
      bar for its window and value.
    </p>
    <h3>Versions and attribute values over business time</h3>
    ${keyLanesSvg(t)}${
      t.bitemporal
        ? html`<h3>Business time across, system time down</h3>
            <p class="muted">
              Each row ever stored for this key: framed rows are known now; faded ones were superseded by a
              later merge.
            </p>
            ${bitemporalSvg(t)}`
        : undefined
    }
    <h3>Every row</h3>
    ${table}
  </section>`
}

/** Every day from the first to the last (UTC), with one empty day on each side so a single day still has width. */
function fillDays(days: readonly string[]): string[] {
  if (days.length === 0) return []
  const first = Date.parse(`${days[0]}T00:00:00Z`) - DAY_MS
  const last = Date.parse(`${days.at(-1)}T00:00:00Z`) + DAY_MS
  const out: string[] = []
  for (let t = first; t <= last; t += DAY_MS) out.push(new Date(t).toISOString().slice(0, 10))
  return out
}

function daySeconds(day: string): number {
  return Date.parse(`${day}T00:00:00Z`) / 1000
}

function count(n: number): string {
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ',')
}

function optionalCount(n: number | undefined): string {
  return n === undefined ? '' : count(n)
}

function percent(part: number, whole: number): string {
  return whole === 0 ? '0%' : `${round1((100 * part) / whole)}%`
}

function round1(n: number): number {
  return Math.round(n * 10) / 10
}

/** `YYYY-MM-DD HH:MM:SS` of an ISO or warehouse instant text. */
function shortTime(text: string): string {
  return text
    .replace('T', ' ')
    .replace(/(\.\d+)?(Z|[+-]\d{2}(:?\d{2})?)$/, '')
    .slice(0, 19)
}

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}

function hashSource(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`
}

/**
 * A script or style element holding exactly `text` (its hash in the policy is of this text: no template may add
 * whitespace inside it).
 */
function inline(tag: 'script' | 'style', text: string, attributes = ''): Markup {
  return trusted(`<${tag}${attributes}>${text}</${tag}>`)
}

/** An inlined script or style must not be able to end its element early. */
function assertInlineSafe(text: string): void {
  if (/<\/(script|style)/i.test(text) || text.includes('<!--'))
    throw new Error('an inlined asset holds text that would end its element; it cannot be inlined')
}

/**
 * Draws every chart of the JSON block with uPlot: bars per day on the count scale, percentages as lines on a
 * right-hand scale, days labelled in UTC. Plain ES2017, run by the page (not by Node).
 */
const CHART_BOOTSTRAP = `(function () {
  'use strict';
  var block = document.getElementById('dimsync-charts');
  if (!block || typeof uPlot === 'undefined') return;
  var charts = JSON.parse(block.textContent).charts;
  var utc = function (ts) { return uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'); };
  var day = function (u, ts) { return ts == null ? '' : new Date(ts * 1000).toISOString().slice(0, 10); };
  var compact = function (n) {
    if (!Number.isInteger(n)) return '';
    var abs = Math.abs(n);
    return abs >= 1e6 ? +(n / 1e6).toFixed(1) + 'M' : abs >= 1e4 ? +(n / 1e3).toFixed(1) + 'k' : String(n);
  };
  charts.forEach(function (chart) {
    var el = document.getElementById(chart.id);
    if (!el) return;
    var bars = chart.series.filter(function (s) { return s.kind === 'bars'; });
    var percent = chart.series.some(function (s) { return s.scale === 'percent'; });
    var barNo = 0;
    var series = [{ label: 'day', value: day }].concat(chart.series.map(function (s) {
      var out = { label: s.label, stroke: s.color, scale: s.scale, width: 1.5, spanGaps: false };
      if (s.kind === 'bars') {
        var align = bars.length === 1 ? 0 : (barNo++ === 0 ? -1 : 1);
        out.fill = s.color;
        out.width = 0;
        out.points = { show: false };
        out.paths = uPlot.paths.bars({ size: [bars.length === 1 ? 0.7 : 0.42, 28, 3], align: align, gap: 0 });
      } else {
        out.points = { show: true, size: 4 };
        out.value = function (u, v) { return v == null ? '' : v + '%'; };
      }
      return out;
    }));
    // Days only: a tick that is not a UTC midnight (uPlot splits short spans by hours) gets no label.
    var axes = [{ space: 90, values: function (u, ticks) { return ticks.map(function (t) { return t % 86400 === 0 ? day(u, t) : ''; }); } }, { scale: 'count', size: 48, values: function (u, ticks) { return ticks.map(compact); } }];
    if (percent) axes.push({ scale: 'percent', side: 1, grid: { show: false }, values: function (u, ticks) { return ticks.map(function (t) { return t + '%'; }); } });
    var opts = {
      width: Math.max(320, Math.floor(el.clientWidth || 640)),
      height: 220,
      padding: [12, 40, 0, 0],
      tzDate: utc,
      cursor: { points: { show: false } },
      scales: {
        x: { time: true, range: function (u, min, max) { var pad = Math.max(86400, (max - min) * 0.03); return [min - pad, max + pad]; } },
        count: { range: function (u, min, max) { return [0, Math.max(1, max)]; } },
        percent: { range: [0, 100] }
      },
      axes: axes,
      series: series
    };
    new uPlot(opts, [chart.x].concat(chart.series.map(function (s) { return s.values; })), el);
  });
})();
`
