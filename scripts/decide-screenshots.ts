/**
 * The screenshots of the decision pages in the docs (docs/images/decide-*.png):
 * the scenario of the Chromium test (`test/helpers/decidePages.ts`: a real
 * oidc-provider, `baton serve` of `examples/approvals` on SQLite), alice asks
 * for two expenses, bob signs in and is shot on the decide page at 1280 px
 * and 320 px and on his inbox at 320 px. Ids, times and hashes differ from
 * one run to the next. Needs /usr/bin/chromium.
 *
 *   pnpm docs:screenshots:decide
 */
import { mkdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { hasChromium, launchChromium } from '../test/helpers/chromium.js';
import { signInAt, startDecisionPages } from '../test/helpers/decidePages.js';

const OUT = resolve(import.meta.dirname, '..', 'docs', 'images');
const MAX_BYTES = 200 * 1024;

if (!hasChromium) {
  console.error('decide-screenshots: /usr/bin/chromium is missing (apt-get install -y chromium)');
  process.exit(1);
}

await mkdir(OUT, { recursive: true });
const scenario = await startDecisionPages();
const context = await launchChromium({ width: 1280, height: 900 });
try {
  await scenario.requestExpense(86, 'Train tickets to the Lyon customer visit');
  const id = await scenario.requestExpense(1450, 'Team offsite in Lisbon: venue and catering');
  const link = new URL(`/decide/${id}`, scenario.a.url).href;
  const page = await context.newPage();
  await page.goto(link);
  await signInAt(page, 'bob', new URL(link).origin);
  await page.waitForSelector('form.answer');
  const shoot = async (file: string, width: number, height: number, fullPage: boolean) => {
    await page.setViewportSize({ width, height });
    const path = join(OUT, file);
    await page.screenshot({ path, fullPage });
    const { size } = await stat(path);
    console.log(`${path}: ${Math.round(size / 1024)} KB`);
    if (size > MAX_BYTES) throw new Error(`${file} is ${size} bytes, over ${MAX_BYTES}`);
  };
  await page.check('input[name="f.approve"][value="true"]');
  await page.fill('textarea[name="f.comment"]', 'Fine within the offsite budget.');
  await shoot('decide-1280.png', 1280, 900, false);
  await shoot('decide-320.png', 320, 640, true);
  await page.goto(new URL('/inbox', scenario.a.url).href);
  await page.waitForSelector('body[data-live="true"]');
  await shoot('decide-inbox-320.png', 320, 640, false);
} finally {
  await context.close();
  await scenario.close();
}
