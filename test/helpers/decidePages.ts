/**
 * The decision pages end to end, for the Chromium test and the docs'
 * screenshots: a real oidc-provider with three people (bob and dave managers,
 * alice the requester, carol without a role) and the pages' web client; two
 * `baton serve` instances of `examples/approvals` on one SQLite ledger, both
 * with `--oauth-issuer` and `--login-client-id`; a loopback webhook receiver
 * that captures the `decision.requested` notifications; and helpers to make a
 * request as alice over MCP and to play a person's part of the provider's
 * sign-in in a browser page.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Page } from 'playwright-core';
import { connectHttp, type ServeProcess, startServe, textOf } from './mcpClients.js';
import { startIdentityProvider, type TestClient, type TestIdentityProvider, type TestUser } from './oidcProvider.js';

/** The requester's service identity (a client-credentials token has `sub` = the client id = alice's account). */
const aliceClient: TestClient = { clientId: 'alice', clientSecret: 'alice-secret-0123456789', name: 'Alice' };

/** The people who sign in to the pages. */
export const PEOPLE = {
  bob: { accountId: 'bob', groups: ['managers'], name: 'Bob Manager' },
  dave: { accountId: 'dave', groups: ['managers'], name: 'Dave Manager' },
  alice: { accountId: 'alice', groups: ['managers'], name: 'Alice' },
  carol: { accountId: 'carol', name: 'Carol' },
} as const satisfies Record<string, TestUser>;

const WEB_CLIENT = { clientId: 'baton-web', clientSecret: 'baton-web-secret-0123456789' };

/** A `decision.requested` notification as delivered. */
export interface CapturedNotification {
  readonly type: string;
  readonly data: { readonly requestId: string; readonly key?: string; readonly url?: string; [field: string]: unknown };
}

/** The running scenario. */
export interface DecisionPagesScenario {
  readonly idp: TestIdentityProvider;
  /** The two instances (`a.url`: its `/mcp` URL). */
  readonly a: ServeProcess;
  readonly b: ServeProcess;
  /** alice asks for an expense over MCP on instance `a`; resolves with the request id. */
  requestExpense(amount: number, purpose: string): Promise<string>;
  /** alice starts `quick_approval` (its decision expires 3 s after it is asked) on instance `a`. */
  requestQuick(): Promise<string>;
  /** The `decision.requested` notification of a request, once delivered. */
  notification(id: string): Promise<CapturedNotification>;
  /** alice's `baton_resume` of a request, over MCP on instance `b`: the flow's text. */
  resumeOnB(id: string): Promise<string>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Start the provider, the receiver and the two instances. */
export async function startDecisionPages(): Promise<DecisionPagesScenario> {
  const ports = [await freePort(), await freePort()];
  const idp = await startIdentityProvider([aliceClient], Object.values(PEOPLE), [
    { ...WEB_CLIENT, redirectUris: ports.map((port) => `http://127.0.0.1:${port}/auth/callback`) },
  ]);
  const dir = mkdtempSync(join(tmpdir(), 'baton-pages-'));
  writeFileSync(join(dir, 'groups.json'), JSON.stringify({ managers: 'manager' }));
  writeFileSync(join(dir, 'web.secret'), `${WEB_CLIENT.clientSecret}\n`);

  const captured: CapturedNotification[] = [];
  const waiters: (() => void)[] = [];
  const receiver: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on('end', () => {
      try {
        captured.push(JSON.parse(body) as CapturedNotification);
      } catch {
        // not ours
      }
      for (const wake of waiters.splice(0)) wake();
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;

  const BATON_KEYS = generateKey();
  const serve = (port: number) =>
    startServe(
      [
        'test/fixtures/page-flows/index.ts',
        '--http',
        `127.0.0.1:${port}`,
        '--ledger',
        `sqlite:${join(dir, 'ledger.db')}`,
        '--wait-in-call',
        '0',
        '--oauth-issuer',
        idp.issuer,
        '--roles-claim',
        'groups',
        '--group-roles',
        join(dir, 'groups.json'),
        '--login-client-id',
        WEB_CLIENT.clientId,
        '--login-client-secret-file',
        join(dir, 'web.secret'),
        '--public-url',
        `http://127.0.0.1:${port}`,
        '--notify-webhook',
        hook,
        // Names, so that a page can say who asked and who decided (else keyed hashes).
        '--store-principal-names',
      ],
      { BATON_KEYS },
    );
  const a = await serve(ports[0]!);
  const b = await serve(ports[1]!);

  const alice = async (url: URL) => {
    const token = await idp.token(aliceClient, { resource: url.href });
    return (await connectHttp(url, { token })).client;
  };

  return {
    idp,
    a,
    b,
    async requestExpense(amount, purpose) {
      const client = await alice(a.url);
      try {
        const result = await client.callTool({ name: 'expense_approval', arguments: { amount, purpose } });
        return (result.structuredContent as { id: string }).id;
      } finally {
        await client.close();
      }
    },
    async requestQuick() {
      const client = await alice(a.url);
      try {
        const result = await client.callTool({ name: 'quick_approval', arguments: {} });
        return (result.structuredContent as { id: string }).id;
      } finally {
        await client.close();
      }
    },
    async notification(id) {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const found = captured.find((n) => n.type === 'decision.requested' && n.data.requestId === id);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no decision.requested notification for ${id}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 500);
        });
      }
    },
    async resumeOnB(id) {
      const client = await alice(b.url);
      try {
        return textOf(await client.callTool({ name: 'baton_resume', arguments: { id } }));
      } finally {
        await client.close();
      }
    },
    async close() {
      await Promise.all([a.stop(), b.stop()]);
      await idp.close();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Play a person's part at the provider's development sign-in in `page` (already sent there by
 * the pages): log in as `accountId` (any password), consent, and wait to be back on `origin`.
 */
export async function signInAt(page: Page, accountId: string, origin: string): Promise<void> {
  await page.waitForSelector('input[name="login"]');
  await page.fill('input[name="login"]', accountId);
  await page.fill('input[name="password"]', 'any');
  await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
  if (!page.url().startsWith(origin)) {
    await page.waitForSelector('input[name="prompt"][value="consent"]', { state: 'attached' });
    await Promise.all([page.waitForURL((url) => url.href.startsWith(origin)), page.click('button[type="submit"]')]);
  }
}
