/**
 * `baton inspect` in a real browser: headless Debian Chromium driven by
 * playwright-core. Skipped (with a message) when /usr/bin/chromium is
 * missing locally; fails under CI=true, where it must be installed.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type InspectServing, serveInspect } from '@baton/adapters';
import type { AuditEntry } from '@baton/engine';
import { allStates } from '@baton/engine/testing';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import approvals, { deployProduction, expenseApproval } from '../examples/approvals/index.js';
import { CANCELLED_FID, DEPLOYED_FID, memoryAuditLog, recordedDeployEntries } from './helpers/auditFixtures.js';
import { nested, recordedNestedEntries } from './helpers/nestedFlow.js';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const inCi = process.env.CI === 'true';
const OUTPUT = resolve(import.meta.dirname, '..', 'test-results');
/** An expense request whose first round left it waiting on a manager (as the runner records it). */
const WAITING_FID = 'fi_expense_waiting_1';
const waitingExpense: AuditEntry = {
  fid: WAITING_FID,
  flow: expenseApproval.name,
  hash: expenseApproval.hash,
  round: 1,
  at: Date.UTC(2026, 10, 29, 10, 0, 0),
  ms: 4,
  principal: 'cHJpbmNpcGFsLWhhc2g',
  before: null,
  after: 'manager',
  path: ['manager'],
  asked: [],
  received: [],
  outcome: 'input_required',
};
const SKIP_NOTE = `skipped: ${CHROMIUM} is not installed (apt-get install -y chromium)`;

if (!hasChromium && !inCi) console.warn(`inspect.browser.test.ts ${SKIP_NOTE}`);

describe.skipIf(!hasChromium && !inCi)('baton inspect page in headless Chromium', () => {
  let serving: InspectServing;
  let context: BrowserContext;
  let profile: string;

  beforeAll(async () => {
    if (!hasChromium)
      throw new Error(`CI=true but ${CHROMIUM} is missing: install it with apt-get install -y chromium`);
    serving = await serveInspect({
      flows: [...approvals, nested],
      audit: memoryAuditLog([...recordedDeployEntries(), ...recordedNestedEntries(), waitingExpense]),
    });
    profile = await mkdtemp(join(tmpdir(), 'baton-inspect-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 900 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });

  afterAll(async () => {
    await context?.close();
    await serving?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
  });

  it('renders the graph, highlights a recorded path and lists its rounds, offline', async () => {
    const page = await context.newPage();
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });

    await page.goto(new URL('/#flow=deploy_production', serving.url).href);
    await page.waitForSelector('body[data-ready="true"] #graph-svg');

    // Every state of deploy_production is an SVG node; the asking ones are marked with what they ask.
    const ids = await page.$$eval('#graph-svg [data-state-id]', (nodes) =>
      nodes.map((n) => n.getAttribute('data-state-id')),
    );
    expect(ids.sort()).toEqual(allStates(deployProduction).sort());
    const asking = await page.$$eval('#graph-svg g.state.asks', (nodes) =>
      nodes.map((n) => [n.getAttribute('data-state-id'), n.getAttribute('data-asks'), n.textContent]),
    );
    expect(asking.map(([id, keys]) => [id, keys])).toEqual([
      ['deploy_production.awaitingApproval', 'confirm_deploy change_ticket'],
      ['deploy_production.confirmed', 'change_ticket'],
    ]);
    expect(asking[0]![2]).toContain('asks confirm_deploy (form)');
    expect(await page.$$eval('#graph-svg [data-edge-id] path', (paths) => paths.length)).toBe(6);
    expect(await page.locator('#graph-svg .edge.taken').count()).toBe(0);

    // Both recorded instances are listed, newest first; select the deployed one.
    const listed = await page.$$eval('#instances [data-fid]', (b) => b.map((x) => x.getAttribute('data-fid')));
    expect(listed).toEqual([DEPLOYED_FID, CANCELLED_FID]);
    await page.click(`#instances [data-fid="${DEPLOYED_FID}"]`);
    await page.waitForSelector('#timeline-panel:not([hidden]) tbody tr');

    const visited = await page.$$eval('#graph-svg g.state.visited', (n) =>
      n.map((x) => x.getAttribute('data-state-id')),
    );
    expect(visited.map((id) => id!.split('.').pop()).sort()).toEqual(
      ['awaitingApproval', 'confirmed', 'deployed', 'planning'].sort(),
    );
    expect(await page.getAttribute('#graph-svg g.state.current', 'data-state-id')).toBe('deploy_production.deployed');
    const taken = await page.$$eval('#graph-svg g.edge.taken[data-edge-id]', (n) =>
      n.map(
        (x) => `${x.getAttribute('data-source')!.split('.').pop()}->${x.getAttribute('data-target')!.split('.').pop()}`,
      ),
    );
    expect(taken.sort()).toEqual(['awaitingApproval->confirmed', 'confirmed->deployed', 'planning->awaitingApproval']);
    const unvisitedDimmed = await page.$$eval('#graph-svg g.state.dimmed', (n) => n.length);
    expect(unvisitedDimmed).toBe(2); // cancelled and expired

    const rows = await page.$$eval('#timeline tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim())),
    );
    expect(rows).toHaveLength(2);
    expect(rows[0]!.slice(2, 6)).toEqual([
      '∅ → awaitingApproval',
      'confirm_deploy, change_ticket',
      '—',
      'input_required',
    ]);
    expect(rows[1]!.slice(2, 6)).toEqual([
      'awaitingApproval → deployed',
      '—',
      'confirm_deploy:accept, change_ticket:accept',
      'complete',
    ]);
    expect(rows[0]![1]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$/);

    await mkdir(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, 'inspect.png'), fullPage: true });

    // One round alone: round 2 shows only its own transitions.
    await page.click('#timeline tbody tr[data-round="2"]');
    expect(await page.locator('#graph-svg g.edge.taken[data-edge-id]').count()).toBe(2);
    await page.screenshot({ path: join(OUTPUT, 'inspect-round2.png'), fullPage: true });

    // The cancelled instance takes the other branch.
    await page.click(`#instances [data-fid="${CANCELLED_FID}"]`);
    await page.waitForFunction(
      () =>
        (globalThis as any).document.querySelector('#graph-svg g.state.current')?.getAttribute('data-state-id') ===
        'deploy_production.cancelled',
    );

    // A flow with other shapes renders too.
    await page.click('#flows [data-flow="expense_approval"]');
    await page.waitForFunction(() =>
      (globalThis as any).document
        .querySelector('#graph-svg')
        ?.getAttribute('aria-label')
        ?.includes('expense_approval'),
    );
    await page.screenshot({ path: join(OUTPUT, 'inspect-expense.png'), fullPage: true });

    expect(errors).toEqual([]);
    const origin = serving.url.origin;
    expect(requested.filter((url) => !url.startsWith(origin))).toEqual([]);
    await page.close();
  });

  it('draws nested and parallel states as containers and highlights a path through them', async () => {
    const page = await context.newPage();
    await page.goto(new URL('/#flow=nested_demo&fid=fi_nested_1', serving.url).href);
    await page.waitForSelector('body[data-ready="true"] #timeline-panel:not([hidden]) tbody tr');
    const containers = await page.$$eval('#graph-svg g.container', (n) =>
      n.map((x) => [x.getAttribute('data-state-id'), x.classList.contains('parallel')]),
    );
    expect(containers).toEqual([
      ['nested_demo.gather', true],
      ['nested_demo.gather.left', false],
      ['nested_demo.gather.right', false],
    ]);
    // Children sit inside their container's box.
    const inside = await page.evaluate(() => {
      const box = (id: string) => {
        const rect = (globalThis as any).document
          .querySelector(`[data-state-id="${id}"] > rect.box`)!
          .getBoundingClientRect();
        return rect;
      };
      const outer = box('nested_demo.gather.left');
      const inner = box('nested_demo.gather.left.askName');
      return (
        inner.left >= outer.left && inner.right <= outer.right && inner.top >= outer.top && inner.bottom <= outer.bottom
      );
    });
    expect(inside).toBe(true);
    const taken = await page.$$eval('#graph-svg g.edge.taken[data-edge-id]', (n) =>
      n.map(
        (x) => `${x.getAttribute('data-source')!.split('.').pop()}->${x.getAttribute('data-target')!.split('.').pop()}`,
      ),
    );
    expect(taken.sort()).toEqual(['askName->named', 'gather->done', 'waiting->picked']);
    expect(
      await page.$$eval('#graph-svg g.state.dimmed', (n) => n.map((x) => x.getAttribute('data-state-id'))),
    ).toEqual(['nested_demo.gather.right.timedOut']);
    await mkdir(OUTPUT, { recursive: true });
    await page.screenshot({ path: join(OUTPUT, 'inspect-nested.png'), fullPage: true });
    await page.close();
  });

  it('says what a recorded flow waits for, and from whom', async () => {
    const page = await context.newPage();
    await page.goto(new URL(`/#flow=expense_approval&fid=${WAITING_FID}`, serving.url).href);
    await page.waitForSelector('body[data-ready="true"] #timeline-panel:not([hidden]) tbody tr');
    expect(await page.locator('#waiting').isVisible()).toBe(true);
    expect(await page.textContent('#waiting')).toBe(`${WAITING_FID}: waiting for manager_approval (role manager)`);
    await page.goto(new URL(`/#flow=deploy_production&fid=${DEPLOYED_FID}`, serving.url).href);
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#waiting')?.hidden === true);
    await page.close();
  });
});
