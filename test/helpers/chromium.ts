/**
 * The headless Debian Chromium that the browser tests and
 * `scripts/inspect-screenshots.ts` drive through playwright-core.
 */
import { existsSync } from 'node:fs';
import { type BrowserContext, chromium } from 'playwright-core';

/** Where Debian's `chromium` package installs the browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** Whether it is installed. */
export const hasChromium = existsSync(CHROMIUM);

/** A fresh headless browser context of the given viewport; closing it closes the browser. */
export async function launchChromium(viewport = { width: 1280, height: 900 }): Promise<BrowserContext> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport });
  context.once('close', () => void browser.close());
  return context;
}
