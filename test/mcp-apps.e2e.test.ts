/**
 * MCP Apps (issue 38, the decision app): one real `baton serve` of `examples/approvals` on a
 * SQLite file with bearer tokens, names stored and the audit trail on, driven by the real SDK
 * client over loopback HTTP. A client that does not declare `io.modelcontextprotocol/ui` sees
 * exactly the tools it saw before (no `_meta.ui`, no `answer` argument, no extension, no `ui://`
 * resource; declared without the app MIME type, or by a 2025-era client over stateless HTTP, it
 * counts as not declared), and the two lists differ only in the app's metadata and `answer`; one
 * that declares it (with the app MIME type) sees the extension acknowledged,
 * `baton_inbox` and `baton_decide` declaring `ui://baton/inbox` and `ui://baton/decide`, and
 * reads the app's document (its MIME type, its CSP pinning the inline script and style by hash,
 * no remote origin, no HTML built from strings). Through the app's calls, bob sees alice's
 * request as data (an HTML-looking purpose stays data), approves it once (audited `via: 'app'`),
 * and alice gets the four-eyes refusal, bob a second answer's refusal, with the page's titles. The
 * run-status app: the tools of the flows that park declare `ui://baton/run`, and alice reads her
 * own run through `baton_run_status` (waiting for manager, the flow's summary, the deadline, the
 * audited steps; after bob's approval the outcome), which writes nothing; bob is refused it as an
 * unknown request, and a client without the extension has no such tool.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { openAuditLog } from '@baton/store';
import type { Client, ClientCapabilities } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DECISION_APP_BYTES, DECISION_APP_HTML } from '../packages/adapters/src/mcp/apps/decisionApp.js';
import { APP_SCRIPT, APP_STYLE } from '../packages/adapters/src/mcp/apps/decisionAppCode.js';
import { scratchDir, tokenOf as token, writeTokens } from './helpers/e2eLedgers.js';
import { ALL_CAPABILITIES, connectHttp, type ServeProcess, startServe, textOf } from './helpers/mcpClients.js';

const UI = 'io.modelcontextprotocol/ui';
const MIME = 'text/html;profile=mcp-app';
const APPS: ClientCapabilities = {
  ...ALL_CAPABILITIES,
  extensions: { [UI]: { mimeTypes: [MIME] } },
} as ClientCapabilities;

const dir = scratchDir('mcp-apps');
const BATON_KEYS = generateKey();
const ledger = `sqlite:${join(dir, 'ledger.db')}`;
const tokensFile = writeTokens(dir, {
  alice: { principal: 'alice', roles: ['manager'] },
  bob: { principal: 'bob', roles: ['manager'] },
});

let server: ServeProcess;
const clients: Client[] = [];
beforeAll(async () => {
  server = await startServe(
    [
      'examples/approvals',
      '--http',
      '127.0.0.1:0',
      '--ledger',
      ledger,
      '--auth-tokens',
      tokensFile,
      '--wait-in-call',
      '0',
      '--store-principal-names',
      '--audit',
    ],
    { BATON_KEYS },
  );
}, 120_000);
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await server?.stop();
});

async function mcp(who: string, capabilities: ClientCapabilities = ALL_CAPABILITIES): Promise<Client> {
  const { client } = await connectHttp(server.url, { token: token(who), capabilities });
  clients.push(client);
  return client;
}

const toolNamed = async (client: Client, name: string) => (await client.listTools()).tools.find((t) => t.name === name);

describe('MCP Apps negotiation', () => {
  it('a client without the extension sees no ui metadata, no answer argument and no ui resources', async () => {
    for (const capabilities of [
      ALL_CAPABILITIES,
      // Declared without the app MIME type: not MCP Apps, as the spec says.
      { ...ALL_CAPABILITIES, extensions: { [UI]: {} } } as ClientCapabilities,
    ]) {
      const plain = await mcp('bob', capabilities);
      expect(plain.getServerCapabilities()?.extensions?.[UI]).toBeUndefined();
      const { tools } = await plain.listTools();
      for (const tool of tools) {
        expect(tool._meta?.ui).toBeUndefined();
        expect(tool._meta?.['ui/resourceUri']).toBeUndefined();
      }
      const decide = tools.find((t) => t.name === 'baton_decide');
      expect(Object.keys(decide?.inputSchema.properties ?? {})).toEqual(['id', 'key']);
      if (plain.getServerCapabilities()?.resources) {
        const { resources } = await plain.listResources();
        expect(resources.filter((r) => r.uri.startsWith('ui://'))).toEqual([]);
      }
      await expect(plain.readResource({ uri: 'ui://baton/decide' })).rejects.toThrow();
    }
  }, 60_000);

  it('the tool lists differ only where the extension says: the _meta.ui of the app tools, the answer of baton_decide, baton_run_status', async () => {
    const byName = async (client: Client) =>
      new Map((await client.listTools()).tools.map((tool) => [tool.name, structuredClone(tool)] as const));
    const plain = await byName(await mcp('bob'));
    const app = await byName(await mcp('bob', APPS));
    // The one tool more is the run-status app's read, visible to the app only.
    expect(app.get('baton_run_status')?._meta?.ui).toEqual({ resourceUri: 'ui://baton/run', visibility: ['app'] });
    app.delete('baton_run_status');
    expect([...app.keys()]).toEqual([...plain.keys()]);
    // The tools of the flows that park (they await decisions or events) declare the run-status app.
    const parking = new Set(['deploy_production', 'expense_approval', 'grant_temporary_access', 'refund_request']);
    const declaring = [...app.values()].filter(
      (t) => (t._meta?.ui as { resourceUri?: string })?.resourceUri === 'ui://baton/run',
    );
    expect(declaring.map((t) => t.name).sort()).toEqual([...parking]);
    for (const [name, tool] of app) {
      if (name === 'baton_inbox' || name === 'baton_decide' || parking.has(name)) {
        const { ui, 'ui/resourceUri': legacy, ...meta } = tool._meta ?? {};
        expect(ui).toBeDefined();
        expect(legacy).toBeDefined();
        tool._meta = Object.keys(meta).length > 0 ? meta : undefined;
        if (tool._meta === undefined) delete tool._meta;
      }
      if (name === 'baton_decide') {
        delete (tool.inputSchema.properties as Record<string, unknown>).answer;
        tool.description = plain.get(name)?.description;
      }
      expect(tool).toEqual(plain.get(name));
    }
  }, 60_000);

  it('a 2025-era client declaring the extension over stateless HTTP gets no apps (its initialize went elsewhere)', async () => {
    const { client } = await connectHttp(server.url, {
      token: token('bob'),
      capabilities: APPS,
      negotiation: 'legacy',
    });
    clients.push(client);
    const decide = (await client.listTools()).tools.find((t) => t.name === 'baton_decide');
    expect(decide?._meta?.ui).toBeUndefined();
  }, 60_000);

  it('a client with the extension sees it acknowledged, the two tools declaring their apps, and the apps served', async () => {
    const app = await mcp('bob', APPS);
    expect(app.getServerCapabilities()?.extensions?.[UI]).toEqual({});
    const inbox = await toolNamed(app, 'baton_inbox');
    const decide = await toolNamed(app, 'baton_decide');
    expect(inbox?._meta).toMatchObject({
      ui: { resourceUri: 'ui://baton/inbox' },
      'ui/resourceUri': 'ui://baton/inbox',
    });
    expect(decide?._meta).toMatchObject({
      ui: { resourceUri: 'ui://baton/decide' },
      'ui/resourceUri': 'ui://baton/decide',
    });
    expect(Object.keys(decide?.inputSchema.properties ?? {})).toEqual(['id', 'key', 'answer']);
    expect((await toolNamed(app, 'baton_delegate'))?._meta?.ui).toBeUndefined();

    const { resources } = await app.listResources();
    expect(resources.filter((r) => r.uri.startsWith('ui://')).map((r) => [r.uri, r.mimeType])).toEqual([
      ['ui://baton/inbox', MIME],
      ['ui://baton/decide', MIME],
      ['ui://baton/run', MIME],
    ]);
    for (const uri of ['ui://baton/inbox', 'ui://baton/decide', 'ui://baton/run']) {
      const read = await app.readResource({ uri });
      expect(read.contents).toHaveLength(1);
      const [content] = read.contents as [{ uri: string; mimeType: string; text: string; _meta?: unknown }];
      expect(content).toMatchObject({ uri, mimeType: MIME, _meta: { ui: { csp: {}, prefersBorder: true } } });
      expect(content.text).toBe(DECISION_APP_HTML);
    }
  }, 60_000);
});

describe('the decision app document', () => {
  const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

  it('pins its inline script and style by hash, allows no remote origin and posts nowhere', () => {
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(DECISION_APP_HTML)?.[1];
    expect(csp).toBe(
      `default-src 'none'; script-src ${hash(APP_SCRIPT)}; style-src ${hash(APP_STYLE)}; img-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'; object-src 'none'`,
    );
    // The CSP comes before any script or style, and the document holds exactly the hashed ones.
    expect(DECISION_APP_HTML.indexOf('Content-Security-Policy')).toBeLessThan(DECISION_APP_HTML.indexOf('<style>'));
    expect(DECISION_APP_HTML.match(/<script\b[^>]*>/g)).toEqual(['<script>']);
    expect(DECISION_APP_HTML).toContain(`<script>${APP_SCRIPT}</script>`);
    expect(DECISION_APP_HTML).toContain(`<style>${APP_STYLE}</style>`);
    expect(DECISION_APP_HTML).not.toMatch(/https?:\/\/|\bsrc=|<link\b|@import|\bon[a-z]+=/i);
    expect(DECISION_APP_HTML.startsWith('<!doctype html>')).toBe(true);
  });

  it('builds every element with DOM calls and textContent, never from HTML strings, and stays small', () => {
    for (const sink of [
      'innerHTML',
      'outerHTML',
      'insertAdjacentHTML',
      'document.write',
      'eval(',
      'Function(',
      'fetch(',
    ]) {
      expect(APP_SCRIPT).not.toContain(sink);
    }
    expect(APP_SCRIPT).toContain('textContent');
    // Messages are taken from the parent window (the host) only.
    expect(APP_SCRIPT).toContain('if(ev.source!==window.parent)return;');
    expect(DECISION_APP_BYTES).toBe(Buffer.byteLength(DECISION_APP_HTML));
    // Three views (inbox, decision, run): measured in docs/mcp-apps.md.
    expect(DECISION_APP_BYTES).toBeLessThan(20_000);
  });
});

describe('deciding in the app', () => {
  const purpose = '<img src=x onerror=alert(1)> & "offsite"';

  it('bob sees the request as data, approves it once through the app (audited via app); alice gets four eyes', async () => {
    const alice = await mcp('alice');
    const requested = await alice.callTool({ name: 'expense_approval', arguments: { amount: 250, purpose } });
    const id = (requested.structuredContent as { id: string }).id;

    const bob = await mcp('bob', APPS);
    const inbox = await bob.callTool({ name: 'baton_inbox', arguments: {} });
    expect((inbox.structuredContent as { decisions: { id: string }[] }).decisions.map((d) => d.id)).toContain(id);

    const shown = await bob.callTool({ name: 'baton_decide', arguments: { id } });
    expect(shown.isError).toBeFalsy();
    const view = (shown.structuredContent as { decision: Record<string, any> }).decision;
    expect(view).toMatchObject({
      id,
      key: 'manager_approval',
      flow: 'expense_approval',
      requester: 'alice',
      role: 'manager',
      requestedSchema: { type: 'object', properties: { approve: { type: 'boolean' }, comment: { type: 'string' } } },
    });
    expect(view.message).toContain(purpose);
    expect(new Date(view.requestedAt).toISOString()).toBe(view.requestedAt);
    expect(textOf(shown)).toMatch(/^Decision manager_approval on request .*, asked by alice/);

    // Alice, the requester, is refused: four eyes, with the decision page's title.
    const aliceApp = await mcp('alice', APPS);
    const own = await aliceApp.callTool({
      name: 'baton_decide',
      arguments: { id, answer: { action: 'accept', content: { approve: true } } },
    });
    expect(own.isError).toBe(true);
    expect(own.structuredContent).toMatchObject({
      status: 'refused',
      reason: 'four_eyes',
      title: 'You cannot decide your own request',
    });

    // A content the schema refuses is not recorded.
    const invalid = await bob.callTool({
      name: 'baton_decide',
      arguments: { id, answer: { action: 'accept', content: { approve: 'yes' } } },
    });
    expect(invalid.isError).toBe(true);
    expect(invalid.structuredContent).toMatchObject({ status: 'invalid' });

    const recorded = await bob.callTool({
      name: 'baton_decide',
      arguments: { id, answer: { action: 'accept', content: { approve: true, comment: 'ok <b>fine</b>' } } },
    });
    expect(recorded.isError).toBeFalsy();
    expect(textOf(recorded)).toMatch(/^Recorded/);
    expect(recorded.structuredContent).toMatchObject({ status: 'recorded' });

    const again = await bob.callTool({
      name: 'baton_decide',
      arguments: { id, answer: { action: 'accept', content: { approve: true } } },
    });
    expect(again.isError).toBe(true);
    // The flow ended with the approval (250 needs no finance): nothing is left to decide, as the page says.
    expect(again.structuredContent).toMatchObject({
      status: 'refused',
      reason: 'ended',
      title: 'Nothing left to decide',
    });

    const audit = await openAuditLog(ledger, { pruneIntervalMs: 0 });
    try {
      const rounds = await audit.rounds(id);
      const decided = rounds.filter((r) => r.via === 'app');
      expect(decided).toHaveLength(1);
      expect(decided[0]?.principalName).toBe('bob');
    } finally {
      await audit.close();
    }
  }, 60_000);
});

describe('the run-status app', () => {
  it('the requester reads her own run through the app: waiting for manager, then the outcome; bob is refused it', async () => {
    const alice = await mcp('alice', APPS);
    const requested = await alice.callTool({ name: 'expense_approval', arguments: { amount: 120, purpose: 'taxi' } });
    // The waiting result is today's (the tool declares the app; the result is the same).
    expect(requested.structuredContent).toMatchObject({ status: 'waiting', waitingFor: [{ role: 'manager' }] });
    const id = (requested.structuredContent as { id: string }).id;

    const first = await alice.callTool({ name: 'baton_run_status', arguments: { id } });
    expect(first.isError).toBeFalsy();
    const run = (first.structuredContent as { run: Record<string, any> }).run;
    expect(run).toMatchObject({
      id,
      flow: 'expense_approval',
      flowTitle: 'Expense approval',
      summary: 'Expense of 120 for "taxi"',
      status: 'waiting',
      state: 'deciding.manager',
      waitingFor: [{ key: 'manager_approval', role: 'manager', message: 'Approve an expense of 120 for "taxi"?' }],
    });
    expect(new Date(run.waitingFor[0].deadline).getTime()).toBeGreaterThan(Date.now());
    expect(run.steps.map((s: { via: string }) => s.via)).toEqual(['call']);
    expect(run.outcome).toBeUndefined();
    expect(textOf(first)).toMatch(/waiting for manager, in state deciding\.manager/);

    // Anyone else is refused, as for an id that does not exist: no oracle.
    const bob = await mcp('bob', APPS);
    const foreign = await bob.callTool({ name: 'baton_run_status', arguments: { id } });
    expect(foreign.isError).toBe(true);
    expect(foreign.structuredContent).toMatchObject({ status: 'refused', reason: 'unknown' });
    expect(textOf(foreign)).toBe(`There is no request ${id}.`);
    // Reading wrote nothing: the run is where it was.
    const again = await alice.callTool({ name: 'baton_run_status', arguments: { id } });
    expect((again.structuredContent as { run: { updatedAt: string } }).run.updatedAt).toBe(run.updatedAt);

    await bob.callTool({
      name: 'baton_decide',
      arguments: { id, answer: { action: 'accept', content: { approve: true } } },
    });
    const ended = await alice.callTool({ name: 'baton_run_status', arguments: { id } });
    expect((ended.structuredContent as { run: Record<string, unknown> }).run).toMatchObject({
      status: 'completed',
      state: 'approved',
      waitingFor: [],
      outcome: { text: 'Expense of 120 approved.', isError: false },
    });
    const vias = (ended.structuredContent as { run: { steps: { via: string }[] } }).run.steps.map((s) => s.via);
    expect(vias).toEqual(['call', 'app']);
  }, 60_000);

  it('a client without the extension has no baton_run_status', async () => {
    const plain = await mcp('alice');
    expect(await toolNamed(plain, 'baton_run_status')).toBeUndefined();
    await expect(plain.callTool({ name: 'baton_run_status', arguments: { id: 'x'.repeat(22) } })).rejects.toThrow(
      /not found/,
    );
  }, 60_000);
});
