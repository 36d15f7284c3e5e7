/**
 * The decision app in a real browser: headless Debian Chromium (playwright-core) hosts Baton's
 * `ui://baton/decide` the way an MCP Apps host does. The host is ext-apps' own `AppBridge`
 * (`@modelcontextprotocol/ext-apps/app-bridge`, bundled for the page with esbuild) talking to the
 * app in a sandboxed `srcdoc` iframe over `PostMessageTransport`; its MCP client is the real SDK
 * client in the test process, connected over loopback HTTP to a running `baton serve` with the
 * extension declared, and the bridge's `tools/call` goes to it (`page.exposeFunction`). Covered:
 * the bridge initializes the app (so Baton's own view-side messages pass the official host's
 * schemas); bob sees alice's request with a hostile purpose shown as text, answers the form
 * (approve, comment) and the app says it was recorded, the server's result; alice, opening her
 * own request, sees the four-eyes refusal as the decision page titles it; bob hands one to dave
 * with the app's "hand to someone else" (`baton_delegate` through the host); on the quorum fixture
 * (`board_spend`, two approvals) bob's vote is counted, dave's inbox app lists it with "1 of 2
 * approvals", opens it (the app calls `baton_decide` through the host) and completes it; alice's
 * own expense call shows the run-status app ("Waiting for manager", the summary, the deadline, the
 * steps), which follows the run through `baton_run_status` by itself and shows the outcome once
 * bob approves from his own client. With `BATON_APP_SCREENSHOTS=1` it writes
 * `docs/images/mcp-apps-decide-{1280,400}.png`, `docs/images/mcp-apps-inbox-400.png` and
 * `docs/images/mcp-apps-run{,-done}-400.png`. Skipped
 * (with a message) when /usr/bin/chromium is missing locally; fails under CI=true.
 */
import { join, resolve } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Client, ClientCapabilities } from '@modelcontextprotocol/client';
import { build } from 'esbuild';
import type { BrowserContext, Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, hasChromium, launchChromium } from './helpers/chromium.js';
import { scratchDir, tokenOf as token, writeTokens } from './helpers/e2eLedgers.js';
import { ALL_CAPABILITIES, connectHttp, type ServeProcess, startServe } from './helpers/mcpClients.js';

const inCi = process.env.CI === 'true';
const SKIP_NOTE = `skipped: ${CHROMIUM} is not installed (apt-get install -y chromium)`;
if (!hasChromium && !inCi) console.warn(`mcp-apps.browser.test.ts ${SKIP_NOTE}`);
const SCREENSHOTS = process.env.BATON_APP_SCREENSHOTS === '1';

const UI = 'io.modelcontextprotocol/ui';
const APPS = {
  ...ALL_CAPABILITIES,
  extensions: { [UI]: { mimeTypes: ['text/html;profile=mcp-app'] } },
} as ClientCapabilities;
const HOSTILE = '<img src=x id=pwned onerror="document.title=1"> team dinner';
const ROOT = resolve(import.meta.dirname, '..');

/** The host page's script: ext-apps' AppBridge in front of a sandboxed iframe holding the app. */
const HOST_ENTRY = `
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';
window.startHost = async (html, toolResult) => {
  const iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.style.cssText = 'width:100%;border:1px solid #ccc;border-radius:8px;height:200px';
  document.getElementById('chat').append(iframe);
  const bridge = new AppBridge(null, { name: 'baton-test-host', version: '1.0.0' }, { serverTools: {} });
  bridge.oncalltool = (params) => window.hostCallTool(params);
  bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = height + 'px'; };
  const initialized = new Promise((done) => { bridge.oninitialized = done; });
  // Listening before the app loads: the app's ui/initialize is its first message.
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
  await initialized;
  await bridge.sendToolResult(toolResult);
  window.appInitialized = true;
};
`;

const HOST_PAGE = (script: string) => `<!doctype html><html><head><meta charset="utf-8"><title>host</title>
<style>body{margin:0;padding:16px;font:14px system-ui;background:#f4f5f7}#chat{max-width:760px;margin:auto}
.turn{background:#fff;border-radius:8px;padding:8px 12px;margin-bottom:8px}</style></head>
<body><div id="chat"><div class="turn">Assistant: here is the decision waiting for you.</div></div>
<script type="module">${script.replace(/<\/script/gi, '<\\/script')}</script></body></html>`;

describe.skipIf(!hasChromium && !inCi)('the decision app in headless Chromium, hosted by ext-apps AppBridge', () => {
  const dir = scratchDir('mcp-apps-browser');
  /** `examples/approvals`, and the quorum fixture flows (`board_spend`: two approvals of the board). */
  let approvals: ServeProcess;
  let quorum: ServeProcess;
  let context: BrowserContext;
  let hostScript: string;
  const clients: Client[] = [];
  /** Console errors and uncaught errors of the host page and the app. */
  const problems: string[] = [];

  beforeAll(async () => {
    if (!hasChromium)
      throw new Error(`CI=true but ${CHROMIUM} is missing: install it with apt-get install -y chromium`);
    const tokensFile = writeTokens(dir, {
      alice: { principal: 'alice', roles: ['manager', 'board'] },
      bob: { principal: 'bob', roles: ['manager', 'board'], name: 'Bob Builder' },
      dave: { principal: 'dave', roles: ['board'] },
    });
    const bundled = await build({
      stdin: { contents: HOST_ENTRY, resolveDir: join(ROOT, 'packages/adapters'), loader: 'js' },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      logLevel: 'silent',
    });
    hostScript = bundled.outputFiles[0]!.text;
    const serve = (flows: string, file: string) =>
      startServe(
        [
          flows,
          '--http',
          '127.0.0.1:0',
          '--ledger',
          `sqlite:${join(dir, file)}`,
          '--auth-tokens',
          tokensFile,
          '--wait-in-call',
          '0',
          '--store-principal-names',
          // The run-status app shows the audited steps, and polls every second (the task poll).
          '--audit',
          '--task-poll',
          '1',
        ],
        { BATON_KEYS: generateKey() },
      );
    [approvals, quorum] = await Promise.all([
      serve('examples/approvals', 'approvals.db'),
      serve('test/fixtures/quorum-flows', 'quorum.db'),
    ]);
    context = await launchChromium({ width: 1280, height: 900 });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await context?.close();
    await Promise.all([approvals?.stop(), quorum?.stop()]);
  });

  async function mcp(server: ServeProcess, who: string, capabilities = APPS): Promise<Client> {
    const { client } = await connectHttp(server.url, { token: token(who), capabilities });
    clients.push(client);
    return client;
  }

  /**
   * A host page for `who`: the model called `name` with `args`; the host reads the app the tool
   * declares and renders it with the call's result.
   */
  async function hostApp(
    server: ServeProcess,
    who: string,
    name: string,
    args: Record<string, unknown>,
    width = 1280,
  ): Promise<{ page: Page; app: Frame }> {
    const client = await mcp(server, who);
    const tool = (await client.listTools()).tools.find((t) => t.name === name);
    const uri = (tool?._meta?.ui as { resourceUri?: string } | undefined)?.resourceUri ?? 'missing';
    const read = await client.readResource({ uri });
    const html = (read.contents[0] as { text: string }).text;
    const result = await client.callTool({ name, arguments: args });
    const page = await context.newPage();
    // A CSP violation (a script or style the document's hashes do not allow) is a console error.
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    await page.setViewportSize({ width, height: 900 });
    await page.exposeFunction('hostCallTool', (params: { name: string; arguments?: Record<string, unknown> }) =>
      client.callTool(params),
    );
    await page.setContent(HOST_PAGE(hostScript));
    // Run in the page (the test's tsconfig has no DOM types: `globalThis` is the page's window there).
    await page.evaluate(([h, r]) => (globalThis as any).startHost(h, r), [html, result] as const);
    await page.waitForFunction(() => (globalThis as any).appInitialized === true, undefined, { timeout: 8000 });
    const app = page.frames().find((frame) => frame !== page.mainFrame())!;
    return { page, app };
  }

  async function request(server: ServeProcess, name: string, args: Record<string, unknown>): Promise<string> {
    const alice = await mcp(server, 'alice', ALL_CAPABILITIES);
    const requested = await alice.callTool({ name, arguments: args });
    return (requested.structuredContent as { id: string }).id;
  }
  const expense = () => request(approvals, 'expense_approval', { amount: 250, purpose: HOSTILE });

  it('bob approves alice’s request inside the app; the hostile purpose stays text', async () => {
    const id = await expense();
    const { page, app } = await hostApp(approvals, 'bob', 'baton_decide', { id });
    await app.waitForSelector('h1.message');
    expect(await app.textContent('h1.message')).toContain(HOSTILE);
    expect(await app.$('#pwned')).toBeNull();
    expect(await page.title()).toBe('host');
    expect(await app.textContent('.requester')).toBe('alice');

    if (SCREENSHOTS) {
      await page.screenshot({ path: join(ROOT, 'docs/images/mcp-apps-decide-1280.png'), fullPage: true });
      await page.setViewportSize({ width: 400, height: 900 });
      await page.waitForTimeout(200);
      await page.screenshot({ path: join(ROOT, 'docs/images/mcp-apps-decide-400.png'), fullPage: true });
    }

    await app.check('input[name="approve"][value="true"]');
    await app.fill('textarea[name="comment"]', 'Fine by me');
    await app.click('button.primary');
    await app.waitForSelector('[data-outcome="recorded"]');
    expect(await app.textContent('[data-outcome="recorded"] .sentence')).toMatch(/^Recorded manager_approval/);
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it('alice opening her own request sees the four-eyes refusal', async () => {
    const id = await expense();
    const { page, app } = await hostApp(approvals, 'alice', 'baton_decide', { id }, 400);
    await app.waitForSelector('[data-outcome="refused"]');
    expect(await app.textContent('[data-outcome="refused"] h1')).toBe('You cannot decide your own request');
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it('bob hands a decision to dave from the app (baton_delegate through the host)', async () => {
    const id = await expense();
    const { page, app } = await hostApp(approvals, 'bob', 'baton_decide', { id });
    await app.click('details.hand summary');
    await app.fill('input[name="to"]', 'dave');
    await app.fill('input[name="reason"]', 'on leave');
    await app.click('details.hand button');
    await app.waitForSelector('[data-outcome="recorded"]');
    expect(await app.textContent('[data-outcome="recorded"] h1')).toBe('Handed over');
    expect(await app.textContent('[data-outcome="recorded"] .sentence')).toMatch(/to dave/);
    const dave = await mcp(approvals, 'dave');
    const shown = await dave.callTool({ name: 'baton_decide', arguments: { id } });
    expect(shown.structuredContent).toMatchObject({
      decision: { delegated: { kind: 'handover', onBehalfOf: 'bob', by: 'bob', reason: 'on leave' } },
    });
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);

  it('a quorum vote is counted: bob approves first, dave opens it from the inbox app and sees it, then completes it', async () => {
    const id = await request(quorum, 'board_spend', { amount: 700 });
    const first = await hostApp(quorum, 'bob', 'baton_decide', { id });
    await first.app.waitForSelector('.quorum');
    expect(await first.app.textContent('.quorum')).toBe('0 of 2 approvals · 2 more needed');
    await first.app.check('input[name="approve"][value="true"]');
    await first.app.click('button.primary');
    await first.app.waitForSelector('[data-outcome="recorded"]');
    expect(await first.app.textContent('[data-outcome="recorded"] .sentence')).toMatch(/1 more approval is needed/);
    await first.page.close();

    const inbox = await hostApp(quorum, 'dave', 'baton_inbox', {}, 400);
    const item = `li[data-request="${id}"]`;
    await inbox.app.waitForSelector(item);
    expect(await inbox.app.textContent(`${item} .hint`)).toContain('1 of 2 approvals');
    if (SCREENSHOTS) await inbox.page.screenshot({ path: join(ROOT, 'docs/images/mcp-apps-inbox-400.png') });
    await inbox.app.click(`${item} button`);
    await inbox.app.waitForSelector('.quorum');
    expect(await inbox.app.textContent('.quorum')).toBe('1 of 2 approvals (Bob Builder) · 1 more needed');
    await inbox.app.check('input[name="approve"][value="true"]');
    await inbox.app.click('button.primary');
    await inbox.app.waitForSelector('[data-outcome="recorded"]');
    expect(await inbox.app.textContent('[data-outcome="recorded"] .sentence')).toMatch(/^Recorded/);
    expect(problems).toEqual([]);
    await inbox.page.close();
  }, 60_000);

  it('alice watches her run in the run-status app: waiting for manager, then live the outcome once bob approves', async () => {
    const purpose = 'train to Lyon';
    const { page, app } = await hostApp(approvals, 'alice', 'expense_approval', { amount: 90, purpose }, 400);
    // The waiting result, then the app's own read of the run (baton_run_status through the host).
    await app.waitForSelector('h1.waiting');
    expect(await app.textContent('h1.waiting')).toBe('Waiting for manager');
    // The flow's own summary line (`defineFlow({ summary })` in examples/approvals).
    expect(await app.textContent('h1.summary')).toBe(`Expense of 90 for "${purpose}"`);
    expect(await app.textContent('.state')).toBe('deciding.manager');
    expect(await app.textContent('.waits li .hint')).toMatch(/^manager · decide by \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    expect(await app.textContent('.steps li')).toMatch(/your call: deciding\.manager$/);
    if (SCREENSHOTS) await page.screenshot({ path: join(ROOT, 'docs/images/mcp-apps-run-400.png'), fullPage: true });
    const id = (await app.textContent('.request'))!;

    // Bob approves on the other side (his own client); alice's app updates by itself.
    const bob = await mcp(approvals, 'bob');
    const decided = await bob.callTool({
      name: 'baton_decide',
      arguments: { id, answer: { action: 'accept', content: { approve: true } } },
    });
    expect(decided.structuredContent).toMatchObject({ status: 'recorded' });
    await app.waitForSelector('[data-outcome="completed"]', { timeout: 10_000 });
    expect(await app.textContent('[data-outcome="completed"] h1')).toBe('Finished');
    expect(await app.textContent('[data-outcome="completed"] .sentence')).toBe('Expense of 90 approved.');
    expect(await app.textContent('.state')).toBe('approved');
    expect(await app.$$eval('.steps li', (lis) => lis.map((li) => li.textContent))).toEqual([
      expect.stringMatching(/your call: deciding\.manager$/),
      expect.stringMatching(/a decision in the app: deciding\.manager → approved$/),
    ]);
    expect(await app.$('h1.waiting')).toBeNull();
    if (SCREENSHOTS)
      await page.screenshot({ path: join(ROOT, 'docs/images/mcp-apps-run-done-400.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  }, 60_000);
});
