import { createHash } from 'node:crypto'

import { describe, expect, it } from 'vitest'
import {
  depthStats,
  mergeDimensionDays,
  type DimensionReport,
  type FactReport,
  type KeyTimeline,
  type ProjectReport,
} from '../../lib/core/history-report.ts'
import { escapeHtml, html, scriptJson } from '../../functions/local/html-template.ts'
import { renderReportPage } from '../../functions/local/report-page.ts'

const EVIL = '<script>alert(1)</script>'
const EVIL_IMG = '"><img src=x onerror=alert(2)>'
const ASSETS = { script: 'window.uPlot = function () {};', style: '.u-legend { color: red; }' }

function dimension(overrides: Partial<DimensionReport> = {}): DimensionReport {
  return {
    kind: 'dimension',
    name: 'customers',
    target: 'dim_customer',
    mode: 'history',
    deletes: 'invalidate',
    bitemporal: false,
    restoredCounting: 'gaps',
    loaded: true,
    rows: 5,
    liveKeys: 3,
    depth: depthStats([
      { versions: 1, keys: 1 },
      { versions: 2, keys: 2 },
    ]),
    days: mergeDimensionDays([
      { day: '2024-01-01', opened: 3, batches: 1 },
      { day: '2024-02-01', opened: 1, closed: 2, deletedKeys: 1, batches: 1 },
      { day: '2024-03-01', opened: 1, restored: 1, batches: 1 },
    ]),
    recentBatches: [],
    runs: [
      {
        runId: 'run-1',
        table: 'customers',
        status: 'failed',
        startedAt: '2024-03-02T00:00:00.000Z',
        finishedAt: '2024-03-02T00:00:01.500Z',
        batchId: 'b2',
        error: `table customers: 2 rows share key customer_id=${EVIL}; nothing was written`,
      },
      {
        runId: 'run-0',
        table: 'customers',
        status: 'succeeded',
        startedAt: '2024-03-01T00:00:00.000Z',
        finishedAt: '2024-03-01T00:00:00.250Z',
        batchId: 'b1',
        rowsExtracted: 3,
        counts: {
          events: 3,
          insertedVersions: 1,
          closedVersions: 0,
          deletedKeys: 0,
          unchangedEvents: 2,
          lateKeys: 0,
        },
      },
    ],
    ...overrides,
  }
}

const fact: FactReport = {
  kind: 'fact',
  name: 'orders',
  target: 'fact_orders',
  loaded: true,
  references: [
    { dimension: 'customers', surrogateKeyColumn: 'customer_sk', unknownMemberKey: 0, countsInferred: true },
  ],
  days: [
    { day: '2024-01-15', rows: 4, unknown: [1], inferred: [2] },
    { day: '2024-01-17', rows: 2, unknown: [0], inferred: [0] },
  ],
  recentBatches: [],
  runs: [],
}

const timeline: KeyTimeline = {
  table: 'customers',
  target: 'dim_customer',
  key: EVIL,
  attributes: ['region', EVIL_IMG],
  bitemporal: true,
  versions: [
    {
      surrogateKey: '1',
      validFrom: '2024-01-01 09:00:00+00',
      validTo: '2024-03-10 14:30:00+00',
      deleted: false,
      current: false,
      systemFrom: '2024-01-02 00:00:00+00',
      values: ['South', EVIL],
    },
    {
      surrogateKey: '4',
      validFrom: '2024-03-10 14:30:00+00',
      deleted: false,
      current: true,
      systemFrom: '2024-03-11 00:00:00+00',
      values: [EVIL_IMG, null],
    },
  ],
}

const report = (overrides: Partial<ProjectReport> = {}): ProjectReport => ({
  config: `/home/${EVIL}/dimsync.yaml`,
  warehouse: 'duckdb',
  generatedAt: '2024-06-01T12:00:00.000Z',
  dimensions: [dimension({ name: EVIL })],
  facts: [fact],
  timeline,
  ...overrides,
})

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`
const elements = (page: string, tag: string) =>
  [...page.matchAll(new RegExp(`<${tag}([^>]*)>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => ({
    attributes: m[1]!,
    text: m[2]!,
  }))

/** The page's Content-Security-Policy, as the browser reads the attribute. */
const policyOf = (page: string) =>
  /http-equiv="Content-Security-Policy" content="([^"]*)"/
    .exec(page)![1]!
    .replaceAll('&#39;', "'")
    .replaceAll('&quot;', '"')
    .replaceAll('&amp;', '&')

describe('the report page', () => {
  it('escapes every text from the warehouse, the config and the run records: no value becomes markup', () => {
    const page = renderReportPage(report(), ASSETS)
    expect(page).not.toContain(EVIL)
    expect(page).not.toContain('<img')
    expect(page).toContain(escapeHtml(EVIL))
    expect(page).toContain(escapeHtml(EVIL_IMG))
    // The only scripts are the page's own: the JSON block of numbers, the library and the drawing script.
    const scripts = elements(page, 'script')
    expect(scripts.map((s) => s.attributes)).toEqual([' type="application/json" id="dimsync-charts"', '', ''])
    expect(scripts[1]!.text).toBe(ASSETS.script)
    // Links stay on the page.
    for (const [, href] of page.matchAll(/\s(?:href|src)="([^"]*)"/g)) expect(href).toMatch(/^#/)
  })

  it('allows by hash exactly its own script and style, and no request', () => {
    const page = renderReportPage(report(), ASSETS)
    const policy = policyOf(page)
    const directives = Object.fromEntries(
      policy.split('; ').map((d) => [d.split(' ')[0]!, d.split(' ').slice(1).join(' ')]),
    )
    const executable = elements(page, 'script').filter((s) => !s.attributes.includes('application/json'))
    expect(directives['default-src']).toBe("'none'")
    expect(directives['script-src']).toBe(executable.map((s) => sha256(s.text)).join(' '))
    expect(directives['style-src']).toBe(sha256(elements(page, 'style')[0]!.text))
  })

  it('draws each chart from numbers only, one bar per day with the empty days filled', () => {
    const page = renderReportPage(report({ dimensions: [dimension()] }), ASSETS)
    const json = elements(page, 'script')[0]!.text
    const { charts } = JSON.parse(json) as {
      charts: { id: string; x: number[]; series: { label: string; values: (number | null)[] }[] }[]
    }
    expect(charts.map((c) => c.id)).toEqual(['table-0-versions', 'table-0-deletes', 'fact-0-rows'])
    const versions = charts[0]!
    // 2023-12-31 to 2024-03-02: the days of the changes with one empty day on each side.
    expect(versions.x).toHaveLength(63)
    expect(versions.x[1]).toBe(Date.parse('2024-01-01T00:00:00Z') / 1000)
    expect(versions.series.map((s) => [s.label, s.values.reduce((a, b) => a! + b!, 0)])).toEqual([
      ['opened', 5],
      ['closed', 2],
    ])
    // The fact's shares per day: 1 of 4 on the unknown member, 2 of 4 inferred; days without facts have none.
    const facts = charts[2]!
    expect(facts.series.map((s) => [s.label, s.values.filter((v) => v !== null && v !== 0)])).toEqual([
      ['facts', [4, 2]],
      ['% unknown customers', [25]],
      ['% inferred customers', [50]],
    ])
    expect(facts.series[1]!.values[2]).toBeNull()
  })

  it('puts the numbers beside the charts: the days with activity and the totals', () => {
    const page = renderReportPage(
      report({ dimensions: [dimension()], facts: [], timeline: undefined }),
      ASSETS,
    )
    const text = page.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ')
    expect(text).toContain('day opened closed 2024-03-01 1 0 2024-02-01 1 2 2024-01-01 3 0 all days 5 2')
    expect(text).toContain('depth: median / p99 / max')
    expect(text).toContain('2 / 2 / 2')
    expect(text).toContain('Refused or failed runs')
    expect(text).toContain('No late event and no correction.')
  })

  it("a key's timeline alone needs no script at all", () => {
    const page = renderReportPage(report({ dimensions: [], facts: [] }), undefined)
    expect(elements(page, 'script')).toEqual([])
    expect(policyOf(page)).toContain("script-src 'none'")
    expect(page).toMatch(/<svg\s+class="timeline"/)
    expect(page).toMatch(/<svg\s+class="bitemporal"/)
    expect(page).not.toContain(EVIL)
  })

  it('refuses to inline an asset that would end its element early', () => {
    expect(() => renderReportPage(report(), { ...ASSETS, script: 'var s = "</script>"' })).toThrow(
      'cannot be inlined',
    )
  })
})

describe('html templates', () => {
  it('escape the five characters that matter in text and attributes, and leave built markup alone', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;',
    )
    const inner = html`<b>${'<i>'}</b>`
    expect(html`<p>${inner}${[1, null, undefined, false, 'x']}</p>`.text).toBe('<p><b>&lt;i&gt;</b>1x</p>')
    expect(scriptJson({ a: '</script><!--' })).toBe('{"a":"\\u003c/script>\\u003c!--"}')
  })
})
