import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'

import { chromium, type BrowserContext } from 'playwright-core'

/** Debian's Chromium (.ci/run installs it when missing); DIMSYNC_CHROMIUM points elsewhere. */
export const CHROMIUM = process.env.DIMSYNC_CHROMIUM ?? '/usr/bin/chromium'

const REQUIRED = process.env.DIMSYNC_REQUIRE_SERVICES === '1'

/**
 * Whether Chromium is installed. When it is not, the suite is skipped with a message saying why, unless
 * DIMSYNC_REQUIRE_SERVICES=1 (CI), where a missing browser fails the run instead.
 */
export function chromiumAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true
  const why = `${CHROMIUM} is not installed (apt-get install chromium)`
  if (REQUIRED) throw new Error(`Chromium is required (DIMSYNC_REQUIRE_SERVICES=1) but ${why}`)
  console.warn(`skipping browser tests: ${why}; set DIMSYNC_REQUIRE_SERVICES=1 to fail instead`)
  return false
}

/** What a page did once loaded: its visible text, and everything that would make it untrustworthy. */
export interface OpenedPage {
  readonly text: string
  /** Console messages of type error, and uncaught exceptions. */
  readonly errors: readonly string[]
  /** Requests for anything but the page's own file. */
  readonly requests: readonly string[]
  /** alert(), confirm() and prompt() calls (an injected script would make one). */
  readonly dialogs: readonly string[]
  /** Charts drawn: canvases inside the page's chart containers, and the containers. */
  readonly canvases: number
  readonly chartContainers: number
}

/** Headless Chromium with a fresh profile, no network of its own (no updates, sync or QUIC). */
export class Browser {
  private constructor(
    private readonly context: BrowserContext,
    private readonly profile: string,
  ) {}

  static async start(): Promise<Browser> {
    const profile = mkdtempSync(join(tmpdir(), 'dimsync-chromium-'))
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1200, height: 900 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    return new Browser(context, profile)
  }

  async close(): Promise<void> {
    await this.context.close()
    rmSync(this.profile, { recursive: true, force: true })
  }

  /** Opens the HTML file, lets its scripts run, and keeps a full-page screenshot at `screenshot`. */
  async open(file: string, screenshot: string): Promise<OpenedPage> {
    const page = await this.context.newPage()
    const errors: string[] = []
    const requests: string[] = []
    const dialogs: string[] = []
    const own = pathToFileURL(file).href
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text())
    })
    page.on('pageerror', (error) => errors.push(error.message))
    page.on('request', (request) => {
      if (request.url() !== own) requests.push(request.url())
    })
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message())
      void dialog.dismiss()
    })
    try {
      await page.goto(own, { waitUntil: 'load' })
      await page.waitForTimeout(200)
      mkdirSync(dirname(screenshot), { recursive: true })
      await page.screenshot({ path: screenshot, fullPage: true })
      return {
        text: await page.innerText('body'),
        errors,
        requests,
        dialogs,
        canvases: await page.locator('.chart canvas').count(),
        chartContainers: await page.locator('.chart').count(),
      }
    } finally {
      await page.close()
    }
  }
}
