/**
 * The screenshots of `baton inspect` in the docs (docs/images/inspect-*.png):
 * the approval examples run through the real runner into a SQLite audit log
 * and ledger on a fixed clock (30 Nov 2026, 09:00 UTC, stepping 50 ms per
 * reading), served by `serveInspect` on the same clock, and shot in headless
 * Chromium at fixed viewports. Ids and hashes are random: the pictures differ
 * only there from one run to the next. Needs /usr/bin/chromium.
 *
 *   pnpm docs:screenshots
 */
import { mkdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { serveInspect } from '@baton/adapters';
import approvals from '../examples/approvals/index.js';
import { hasChromium, launchChromium } from '../test/helpers/chromium.js';
import { recordInspectScenario } from '../test/helpers/inspectScenario.js';

const OUT = resolve(import.meta.dirname, '..', 'docs', 'images');
const MAX_BYTES = 300 * 1024;

if (!hasChromium) {
  console.error('inspect-screenshots: /usr/bin/chromium is missing (apt-get install -y chromium)');
  process.exit(1);
}

let time = Date.UTC(2026, 10, 30, 9, 0, 0);
const clock = () => {
  time += 50;
  return time;
};

await mkdir(OUT, { recursive: true });
const scenario = await recordInspectScenario(clock);
const serving = await serveInspect({ flows: approvals, audit: scenario.audit, requests: scenario.ledger, now: clock });
const shots: [string, string, { width: number; height: number }][] = [
  ['inspect-deploy.png', `flow=deploy_production&fid=${scenario.fids.deployed}`, { width: 1280, height: 1000 }],
  [
    'inspect-expense-waiting.png',
    `flow=expense_approval&fid=${scenario.fids.expenseWaiting}`,
    { width: 1280, height: 1000 },
  ],
  ['inspect-abandoned.png', `flow=deploy_production&fid=${scenario.fids.abandoned}`, { width: 1280, height: 900 }],
  ['inspect-800.png', `flow=expense_approval&fid=${scenario.fids.expenseRejected}`, { width: 800, height: 1100 }],
];
try {
  for (const [file, hash, viewport] of shots) {
    const context = await launchChromium(viewport);
    try {
      const page = await context.newPage();
      await page.goto(new URL(`/#${hash}`, serving.url).href);
      await page.waitForSelector('body[data-ready="true"] #details:not([hidden])');
      await page.waitForSelector('body[data-live="true"]');
      const path = join(OUT, file);
      await page.screenshot({ path, fullPage: false });
      const { size } = await stat(path);
      console.log(`${path}: ${Math.round(size / 1024)} KB`);
      if (size > MAX_BYTES) throw new Error(`${file} is ${size} bytes, over ${MAX_BYTES}`);
    } finally {
      await context.close();
    }
  }
} finally {
  await serving.close();
  await scenario.close();
}
