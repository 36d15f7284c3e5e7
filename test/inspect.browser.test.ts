/**
 * `baton inspect` in a real browser: headless Debian Chromium driven by
 * playwright-core, on runs of the approval examples recorded by the real
 * runner in a real SQLite audit log and ledger. Asserts what a person sees:
 * the graph laid out by ELK (no label over another label or a state), the
 * path taken, each instance's status, who started it, its arguments (shown
 * only when the flow records values, never a sensitive one), its decisions,
 * a new round appearing without a reload, the live stream ending when the
 * server closes, a usable page at 800 px, and an operator terminating a
 * waiting run from its view (the ledger and audit trail say so). Skipped (with a message) when
 * /usr/bin/chromium is missing locally; fails under CI=true, where it must be
 * installed.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type InspectServing, serveInspect } from '@baton/adapters';
import { type AuditEntry, createRequestStateCodec, createRunner, generateKey, type Runner } from '@baton/engine';
import { allStates } from '@baton/engine/testing';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import approvals, { deployProduction, expenseApproval } from '../examples/approvals/index.js';
import { routedFlow } from '../packages/engine/test/fixtures/graphFlows.js';
import { CHROMIUM, hasChromium, launchChromium } from './helpers/chromium.js';
import { type InspectScenario, recordInspectScenario } from './helpers/inspectScenario.js';
import { nested, recordedNestedEntries } from './helpers/nestedFlow.js';

const inCi = process.env.CI === 'true';
const QUORUM_FID = 'fi_quorum_1';

/** A decision made by two votes, and a requester's round recorded between them (round 3, before round 2's time). */
function quorumEntries(): AuditEntry[] {
  const at = Date.UTC(2026, 10, 30, 9, 0, 0);
  const base = {
    fid: QUORUM_FID,
    flow: expenseApproval.name,
    hash: expenseApproval.hash,
    principal: 'cmVxdWVzdGVy',
    ms: 2,
  };
  const manager = { deciding: 'manager' };
  return [
    {
      ...base,
      round: 1,
      via: 'call',
      at,
      before: null,
      after: manager,
      path: [manager],
      asked: ['manager_approval'],
      received: [],
      outcome: 'input_required',
    },
    {
      ...base,
      round: 2,
      via: 'decide',
      at: at + 10 * 60_000,
      before: manager,
      after: 'approved',
      path: [manager, 'approved'],
      asked: [],
      received: [
        {
          key: 'manager_approval',
          action: 'accept',
          decider: 'dm90ZXItdHdv',
          via: 'decide',
          votes: [
            { decider: 'dm90ZXItb25l', decidedAt: at + 2 * 60_000, via: 'decide_page', approves: true },
            { decider: 'dm90ZXItdHdv', decidedAt: at + 9 * 60_000, via: 'decide', approves: true },
          ],
        },
      ],
      outcome: 'complete',
    },
    {
      ...base,
      round: 3,
      via: 'call',
      at: at + 5 * 60_000,
      before: manager,
      after: manager,
      path: [manager],
      asked: [],
      received: [],
      outcome: 'input_required',
    },
  ];
}
const OUTPUT = resolve(import.meta.dirname, '..', 'test-results');
const SKIP_NOTE = `skipped: ${CHROMIUM} is not installed (apt-get install -y chromium)`;

if (!hasChromium && !inCi) console.warn(`inspect.browser.test.ts ${SKIP_NOTE}`);

const text = (page: Page, selector: string) => page.locator(selector).innerText();

describe.skipIf(!hasChromium && !inCi)('baton inspect page in headless Chromium', () => {
  let scenario: InspectScenario;
  let serving: InspectServing;
  let context: BrowserContext;
  /** The runner the page's operator actions go through (`baton runs`' functions), with its own keys. */
  let operatorRunner: Runner;

  beforeAll(async () => {
    if (!hasChromium)
      throw new Error(`CI=true but ${CHROMIUM} is missing: install it with apt-get install -y chromium`);
    scenario = await recordInspectScenario();
    for (const entry of recordedNestedEntries()) await scenario.audit.append(entry);
    for (const entry of quorumEntries()) await scenario.audit.append(entry);
    operatorRunner = createRunner({
      flows: approvals,
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      ledger: scenario.ledger,
      audit: scenario.audit,
      holdMs: 1,
      storePrincipalNames: true,
    });
    serving = await serveInspect({
      flows: [...approvals, nested, routedFlow],
      audit: scenario.audit,
      requests: scenario.ledger,
      operators: operatorRunner.operators,
      localOperator: 'oncall',
      pollMs: 200,
    });
    context = await launchChromium();
    await mkdir(OUTPUT, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await context?.close();
    await serving?.close();
    await scenario?.close();
  });

  const open = async (hash: string, page?: Page) => {
    const p = page ?? (await context.newPage());
    await p.goto(new URL(`/#${hash}`, serving.url).href);
    // The same page moves by its hash: wait for the graph of the flow asked for (and the instance's timeline).
    const flow = new URLSearchParams(hash).get('flow');
    const fid = new URLSearchParams(hash).get('fid');
    await p.waitForSelector(`body[data-ready="true"] #graph-svg[aria-label="state graph of ${flow}"]`);
    if (fid) await p.waitForSelector(`#timeline-panel:not([hidden]) #timeline-title:text("Timeline of ${fid}")`);
    return p;
  };

  it('lays the graph out without overlapping labels, and shows a finished deploy with a held answer', async () => {
    const page = await context.newPage();
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    await open('flow=deploy_production', page);

    const ids = await page.$$eval('#graph-svg [data-state-id]', (nodes) =>
      nodes.map((n) => n.getAttribute('data-state-id')),
    );
    expect(ids.sort()).toEqual(allStates(deployProduction).sort());
    expect(await page.$$eval('#graph-svg [data-edge-id] path', (paths) => paths.length)).toBe(10); // 6, and 4 of the wait for ci.finished given a commit

    // No edge label covers another label or a state: what used to overlap near confirmed → deployed/cancelled.
    for (const flow of ['deploy_production', 'expense_approval', 'grant_temporary_access', 'graph_routed']) {
      await open(`flow=${flow}`, page);
      const overlaps = await page.evaluate(() => {
        const rect = (e: any) => e.getBoundingClientRect();
        const labels = [...(globalThis as any).document.querySelectorAll('[data-edge-label] rect.lbg')].map(
          (e: any) => ({
            id: e.parentNode.getAttribute('data-edge-label'),
            r: rect(e),
          }),
        );
        const states = [...(globalThis as any).document.querySelectorAll('g.state > rect.box')].map((e: any) => ({
          id: e.parentNode.getAttribute('data-state-id'),
          r: rect(e),
        }));
        const hit = (a: any, b: any) =>
          Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
          Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
        const found: string[] = [];
        labels.forEach((a, i) => {
          for (const b of labels.slice(i + 1)) if (hit(a.r, b.r)) found.push(`${a.id}/${b.id}`);
          for (const s of states) if (hit(a.r, s.r)) found.push(`${a.id}/${s.id}`);
        });
        return found;
      });
      expect(overlaps, flow).toEqual([]);
    }

    // Root-level `on` edges leave from the "any state" marker; `always` edges are drawn.
    expect(await page.locator('#graph-svg [data-any-state="routed"]').count()).toBe(1);
    const rootEdges = await page.$$eval('#graph-svg g.edge[data-source="routed"]', (n) =>
      n.map((x) => `${x.getAttribute('class')}: ${x.getAttribute('data-target')}`),
    );
    expect(rootEdges.sort()).toEqual([
      'edge after: routed.cancelled',
      'edge root-on: routed.asking',
      'edge root-on: routed.cancelled',
    ]);
    expect(await page.locator('#graph-svg g.edge.always[data-edge-id]').count()).toBe(2);

    // The deploy that finished: its status, who started it (a hash: this server stores no names), no values.
    await open(`flow=deploy_production&fid=${scenario.fids.deployed}`, page);
    await page.waitForSelector('#details:not([hidden])');
    expect(await text(page, '#instance-status')).toBe('finished in deployed');
    expect(await text(page, '#started-by')).toMatch(/^principal [A-Za-z0-9_-]{20,}$/);
    expect(await text(page, '#instance-args')).toBe('hidden: the flow does not record values (auditValues)');
    expect(await text(page, '#instance-times')).toMatch(/^started \d{4}-\d\d-\d\d .* · last round \d{4}-/);
    const taken = await page.$$eval('#graph-svg g.edge.taken[data-edge-id]', (n) =>
      n.map(
        (x) => `${x.getAttribute('data-source')!.split('.').pop()}->${x.getAttribute('data-target')!.split('.').pop()}`,
      ),
    );
    expect(taken.sort()).toEqual(['awaitingApproval->confirmed', 'confirmed->deployed', 'planning->awaitingApproval']);
    const rows = await page.$$eval('#timeline tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td as any).innerText.trim())),
    );
    expect(rows.map((r) => r.slice(2, 6))).toEqual([
      ['∅ → awaitingApproval', 'confirm_deploy, change_ticket', '—', 'input_required'],
      [
        'awaitingApproval → awaitingApproval',
        'change_ticket',
        'confirm_deploy:accept\nchange_ticket:invalid',
        'input_required',
      ],
      // The confirmation, held since round 2, shows in round 3 that used it, with the transition it caused.
      [
        'awaitingApproval → deployed',
        '—',
        'change_ticket:accept → deployed\nconfirm_deploy:accept (held from an earlier round) → confirmed',
        'complete',
      ],
    ]);
    await page.screenshot({ path: join(OUTPUT, 'inspect-deploy.png'), fullPage: true });

    // Abandoned: asked two hours ago, its state expired unanswered.
    await open(`flow=deploy_production&fid=${scenario.fids.abandoned}`, page);
    await page.waitForFunction(
      () => (globalThis as any).document.querySelector('#instance-status')?.dataset.state === 'abandoned',
      undefined,
      { timeout: 10_000 },
    );
    expect(await text(page, '#instance-status')).toMatch(
      /^abandoned: principal \S+ did not answer confirm_deploy, change_ticket before its state expired at 20\d\d-/,
    );
    expect(await text(page, '#instance-times')).toContain(' · expires ');

    expect(errors).toEqual([]);
    expect(requested.filter((url) => !url.startsWith(serving.url.origin))).toEqual([]);
    await page.close();
  });

  it('draws a timer that acts in place (the reminder: after with actions, no target) as a loop on its state', async () => {
    const page = await open('flow=expense_approval');
    const loop = page.locator(
      '#graph-svg g.edge[data-source="expense_approval.deciding.manager"][data-target="expense_approval.deciding.manager"]',
    );
    expect(await loop.count()).toBe(1);
    expect(await loop.getAttribute('class')).toBe('edge after');
    expect(await loop.locator('path').first().getAttribute('d')).toMatch(/^M [\d.]+ [\d.]+ [CL] /);
    const label = await page.$eval(
      `[data-edge-label="${await loop.getAttribute('data-edge-id')}"]`,
      (e: any) => e.textContent,
    );
    expect(label).toContain('after 24 h (in place)');
    await page.close();
  });

  it('orders the timeline by time, each quorum vote an entry of its own', async () => {
    const page = await open(`flow=expense_approval&fid=${QUORUM_FID}`);
    const rows = await page.$$eval('#timeline tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td as any).innerText.trim())),
    );
    // Round 3 (a retry-later round recorded between the votes) sits where its time puts it.
    expect(rows.map((r) => [r[0], r[2], r[4], r[6]])).toEqual([
      ['1', '∅ → deciding.manager', '—', 'requester'],
      ['', 'vote on manager_approval', 'principal dm90ZXItb25l approves', 'decision page'],
      ['3', 'deciding.manager → deciding.manager', '—', 'requester'],
      ['', 'vote on manager_approval', 'principal dm90ZXItdHdv approves', 'baton_decide'],
      ['2', 'deciding.manager → approved', 'manager_approval:accept → approved', 'baton_decide'],
    ]);
    await page.close();
  });

  it('renders without its live stream with ?static, so headless Chromium settles for a screenshot', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'baton-static-'));
    const url = new URL(`/?static#flow=deploy_production&fid=${scenario.fids.deployed}`, serving.url).href;
    // --virtual-time-budget waits for the page to go idle: an open EventSource never lets it.
    // Asynchronously: this process serves the page.
    const shot = await new Promise<{ error: Error | null; stdout: string }>((done) =>
      execFile(
        CHROMIUM,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          `--user-data-dir=${dir}`,
          '--virtual-time-budget=10000',
          '--dump-dom',
          url,
        ],
        { encoding: 'utf8', timeout: 40_000 },
        (error, stdout) => done({ error, stdout }),
      ),
    );
    await rm(dir, { recursive: true, force: true });
    expect(shot.error).toBeNull();
    expect(shot.stdout).toMatch(/<body[^>]*data-live="off"/);
    expect(shot.stdout).toMatch(/<body[^>]*data-ready="true"/);
    expect(shot.stdout).toContain(`Timeline of ${scenario.fids.deployed}`);
  }, 60_000);

  it('shows values where the flow allows them, never a sensitive one, and who decided what', async () => {
    const page = await open(`flow=expense_approval&fid=${scenario.fids.expenseRejected}`);
    await page.waitForSelector('#details:not([hidden])');
    expect(await text(page, '#instance-status')).toBe('finished in rejectedByManager');
    expect(await text(page, '#started-by')).toBe('alice@example.com');
    expect(await text(page, '#instance-args')).toBe('amount=400 purpose="new chair"');
    // A manager's rejection is an accepted form saying no: the protocol's action, then the value.
    const decision = await text(page, '#decisions [data-decision="manager_approval"]');
    expect(decision).toMatch(
      /^manager_approval:accept \{"action":"accept","content":\{"approve":false,"comment":"not this quarter"\}\} by bob@example\.com at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \(round 2\) via decide$/,
    );
    expect(await text(page, '#timeline tbody tr[data-round="2"] .received')).toBe(
      'manager_approval:accept {"action":"accept","content":{"approve":false,"comment":"not this quarter"}} → rejectedByManager',
    );
    await page.screenshot({ path: join(OUTPUT, 'inspect-expense-rejected.png'), fullPage: true });

    // A credential argument is recorded redacted, even though the flow records values.
    await open(`flow=redeem_access_code&fid=${scenario.fids.redeemed}`, page);
    await page.waitForFunction(
      () => (globalThis as any).document.querySelector('#instance-args [data-arg="code"]'),
      undefined,
      {
        timeout: 10_000,
      },
    );
    expect(await text(page, '#instance-args')).toBe('code="[redacted]"');
    expect(await page.content()).not.toContain('SECRET-CODE-42');
    await page.close();
  });

  it('updates live: the finance decision appears without a reload', async () => {
    const page = await open(`flow=expense_approval&fid=${scenario.fids.expenseWaiting}`);
    await page.waitForSelector('body[data-live="true"]');
    expect(await text(page, '#instance-status')).toMatch(/^waiting for finance_approval \(role finance, until 20/);
    expect(await text(page, '#decisions [data-decision="finance_approval"]')).toMatch(
      /^finance_approval: pending \(role finance, until /,
    );
    expect(await page.locator('#timeline tbody tr').count()).toBe(2);
    await page.screenshot({ path: join(OUTPUT, 'inspect-expense-waiting.png'), fullPage: true });
    await page.evaluate(() => {
      (globalThis as any).__sameDocument = true;
    });

    await scenario.approveByFinance();
    await page.waitForSelector('#timeline tbody tr[data-round="3"]', { timeout: 20_000 });
    await page.waitForFunction(
      () => (globalThis as any).document.querySelector('#instance-status')?.textContent === 'finished in approved',
    );
    expect(await page.evaluate(() => (globalThis as any).__sameDocument)).toBe(true);
    expect(await text(page, '#decisions [data-decision="finance_approval"]')).toMatch(
      /^finance_approval:accept \{"action":"accept","content":\{"approve":true\}\} by carol@example\.com at .* \(round 3\) via decide$/,
    );
    expect(
      await page.$$eval('#graph-svg g.state.current', (n) => n.map((x) => x.getAttribute('data-state-id'))),
    ).toEqual(['expense_approval.approved']);
    await page.close();
  });

  it('ends the live stream when the server closes, without retrying', async () => {
    const own = await serveInspect({ flows: approvals, audit: scenario.audit, pollMs: 200 });
    const page = await context.newPage();
    let streams = 0;
    page.on('request', (request) => {
      if (request.url().endsWith('/api/events')) streams++;
    });
    await page.goto(own.url.href);
    await page.waitForSelector('body[data-live="true"]');
    await own.close();
    await page.waitForSelector('body[data-live="closed"]', { timeout: 10_000 });
    expect(await text(page, '#status')).toBe('the inspect server stopped: live updates ended');
    await page.waitForTimeout(4000); // longer than the stream's retry delay (3 s)
    expect(streams).toBe(1);
    await page.close();
  });

  it('works at 800 px: no horizontal scroll of the page; a wide graph scaled into its panel, or scrolled there', async () => {
    const sizesOf = (page: Page) =>
      page.evaluate(() => {
        const graph = (globalThis as any).document.getElementById('graph');
        return {
          page: (globalThis as any).document.documentElement.scrollWidth,
          body: (globalThis as any).document.body.scrollWidth,
          graphRight: graph.getBoundingClientRect().right,
          graphScroll: graph.scrollWidth,
          graphClient: graph.clientWidth,
          svg: (globalThis as any).document.getElementById('graph-svg').getBoundingClientRect().width,
          natural: Number((globalThis as any).document.getElementById('graph-svg').viewBox.baseVal.width),
          scaled: (globalThis as any).document.getElementById('graph-svg').dataset.scaled,
        };
      });
    // At 1280 px, expense_approval (wider than its panel) is scaled down to it, its text at 60 % or more.
    const wide = await open(`flow=expense_approval&fid=${scenario.fids.expenseRejected}`);
    const fitted = await sizesOf(wide);
    expect(fitted.natural).toBeGreaterThan(fitted.graphClient);
    expect(fitted.scaled).toBe('true');
    expect(fitted.svg).toBeLessThanOrEqual(fitted.graphRight);
    expect(fitted.svg / fitted.natural).toBeGreaterThanOrEqual(0.6);
    await wide.close();
    const narrow = await launchChromium({ width: 800, height: 900 });
    try {
      const page = await narrow.newPage();
      await page.goto(new URL(`/#flow=expense_approval&fid=${scenario.fids.expenseRejected}`, serving.url).href);
      await page.waitForSelector('body[data-ready="true"] #details:not([hidden])');
      const sizes = await sizesOf(page);
      expect(sizes.page).toBeLessThanOrEqual(800);
      expect(sizes.body).toBeLessThanOrEqual(800);
      expect(sizes.graphRight).toBeLessThanOrEqual(800);
      // At 800 px it could only fit below 60 %: it keeps its size and scrolls inside its panel, not the page.
      expect(sizes.scaled).toBeUndefined();
      expect(sizes.graphScroll).toBeGreaterThan(sizes.graphClient);
      expect(await page.locator('#instance-status').isVisible()).toBe(true);
      await page.screenshot({ path: join(OUTPUT, 'inspect-800.png'), fullPage: true });
    } finally {
      await narrow.close();
    }
  });

  it('draws nested and parallel states as containers and highlights a path through them', async () => {
    const page = await open('flow=nested_demo&fid=fi_nested_1');
    await page.waitForSelector('#timeline-panel:not([hidden]) tbody tr');
    const containers = await page.$$eval('#graph-svg g.container', (n) =>
      n.map((x) => [x.getAttribute('data-state-id'), x.classList.contains('parallel')]),
    );
    expect(containers).toEqual([
      ['nested_demo.gather', true],
      ['nested_demo.gather.left', false],
      ['nested_demo.gather.right', false],
    ]);
    const inside = await page.evaluate(() => {
      const box = (id: string) =>
        (globalThis as any).document.querySelector(`[data-state-id="${id}"] > rect.box`)!.getBoundingClientRect();
      const pairs = [
        ['nested_demo.gather', 'nested_demo.gather.left'],
        ['nested_demo.gather.left', 'nested_demo.gather.left.askName'],
        ['nested_demo.gather.right', 'nested_demo.gather.right.timedOut'],
      ];
      return pairs.map(([o, i]) => {
        const outer = box(o!);
        const inner = box(i!);
        return (
          inner.left >= outer.left &&
          inner.right <= outer.right &&
          inner.top >= outer.top &&
          inner.bottom <= outer.bottom
        );
      });
    });
    expect(inside).toEqual([true, true, true]);
    const taken = await page.$$eval('#graph-svg g.edge.taken[data-edge-id]', (n) =>
      n.map(
        (x) => `${x.getAttribute('data-source')!.split('.').pop()}->${x.getAttribute('data-target')!.split('.').pop()}`,
      ),
    );
    expect(taken.sort()).toEqual(['askName->named', 'gather->done', 'waiting->picked']);
    await page.screenshot({ path: join(OUTPUT, 'inspect-nested.png'), fullPage: true });
    await page.close();
  });

  it('lets the local operator terminate a waiting run from its view, with a reason', async () => {
    const context_ = { principal: 'alice', method: 'tools/call' as const, target: 'expense_approval' };
    const { fid } = await operatorRunner.run({
      flow: 'expense_approval',
      args: { amount: 70, purpose: 'stuck one' },
      context: context_,
    });
    const page = await open(`flow=expense_approval&fid=${fid}`);
    await page.waitForSelector('#actions-section:not([hidden]) button[data-action="terminate"]:not([disabled])');
    // No reason: refused on the page, nothing sent.
    await page.click('button[data-action="terminate"]');
    expect(await text(page, '#action-result[data-outcome="refused"]')).toMatch(/reason/);
    await page.fill('#action-reason', 'stuck after the finance migration');
    await page.click('button[data-action="terminate"]');
    await page.waitForSelector('#action-result[data-outcome="done"]');
    expect(await text(page, '#action-result')).toMatch(new RegExp(`^Terminated: run ${fid}`));
    await page.waitForSelector('#actions-section button[data-action="terminate"][disabled]');
    expect(await text(page, '#instance-status')).toBe('terminated by an operator: stuck after the finance migration');
    await page.screenshot({ path: join(OUTPUT, 'inspect-operator-terminated.png'), fullPage: true });
    expect((await scenario.ledger.requests.getRequest(fid))?.status).toBe('terminated');
    const audited = (await scenario.audit.rounds(fid)).filter((entry) => entry.via === 'operator');
    expect(audited).toMatchObject([{ principalName: 'oncall', message: 'stuck after the finance migration' }]);
    await page.close();
  });
});
