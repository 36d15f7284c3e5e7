/**
 * The HTTP decision API end to end: two real `baton serve` processes sharing
 * one ledger (a SQLite file, then the PostgreSQL the suite starts) serving
 * `examples/approvals` with bearer tokens, `--public-url` and signed
 * notifications to a loopback receiver; a third on SQLite against the real
 * oidc-provider for the scope check. Alice requests an expense over MCP; the
 * `decision.requested` notification verifies with `standardwebhooks` and
 * carries the decision page's link; bob's inbox lists it (not alice's); GET
 * one shows its schema; a wrong answer is 422 naming the field and records
 * nothing; alice (four eyes) and carol (wrong role) are refused; bob's POST
 * with an `Idempotency-Key` advances the flow (alice's `baton_resume` on the
 * other instance sees it) and its retry on the other instance answers the
 * same, recorded once; dave's POST then gets 409 saying bob decided; an OAuth
 * token without `baton:decide` gets 403 with the `insufficient_scope`
 * challenge. Every error is `application/problem+json`. The Slack-style
 * receiver of `examples/slack-approvals` is driven with a captured
 * notification and signed clicks against the real API. With `--auth-tokens`
 * (no sign-in pages), `--public-url` warns once at start-up and the link of a
 * notification answers a page saying how this server takes decisions. With
 * OAuth, the 401 and 403 challenges of `/api/*` and `/events/*` name the
 * resource metadata, and the decision pages answer the server's refusals (a
 * foreign Origin or Host, a body over the limit, a wrong method) as pages.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { openLedger } from '@baton/store';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { createReceiver, type SlackMessage } from '../examples/slack-approvals/receiver.js';
// standardwebhooks is a dependency of @baton/adapters (which signs with it), not of the workspace root.
import { Webhook } from '../packages/adapters/node_modules/standardwebhooks/dist/index.js';
import { createTestDatabase } from '../packages/store/test/helpers/postgres.js';
import { connectHttp, runCli, type ServeProcess, startServe, textOf } from './helpers/mcpClients.js';
import { startIdentityProvider, type TestClient, type TestIdentityProvider } from './helpers/oidcProvider.js';
import { type Delivery, startWebhookReceiver, type WebhookReceiver } from './helpers/webhookReceiver.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-decisions-api-'));
const BATON_KEYS = generateKey();
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const PUBLIC_URL = 'https://baton.example.com/approvals';
const token = (name: string) => `${name}-token-${'x'.repeat(24)}`;
const tokensFile = join(dir, 'tokens.json');
writeFileSync(
  tokensFile,
  JSON.stringify({
    [token('alice')]: { principal: 'alice', roles: ['manager'] },
    [token('bob')]: { principal: 'bob', roles: ['manager'] },
    [token('dave')]: { principal: 'dave', roles: ['manager'] },
    [token('carol')]: { principal: 'carol', roles: ['finance'] },
  }),
);

let receiver: WebhookReceiver;
let deliveries: Delivery[] = [];
let hookUrl = '';
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  ({ deliveries, url: hookUrl } = receiver);
});
afterAll(async () => {
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

const waitFor = async <T>(find: () => T | undefined, ms: number): Promise<T> => {
  const until = Date.now() + ms;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

/** A call of the API as `who` (a bearer token, or none). */
async function api(
  base: URL,
  path: string,
  init: { who?: string; method?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const response = await fetch(new URL(path, base), {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: {
      ...(init.who ? { authorization: `Bearer ${init.who}` } : {}),
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

const PROBLEM = 'application/problem+json';

/** A GET with a foreign Host header (node:http: fetch does not let a caller set Host). */
function foreignHost(base: URL, path: string, who: string) {
  return new Promise<{ status: number; headers: Headers; body: any }>((resolve, reject) => {
    const req = httpRequest(
      { host: base.hostname, port: base.port, path, headers: { host: 'evil.example', authorization: `Bearer ${who}` } },
      (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: new Headers(res.headers as Record<string, string>),
            body: JSON.parse(text),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const pgUrl = inject('batonPgUrl');
const ledgers: [string, string | undefined][] = [
  ['SQLite', `sqlite:${join(dir, 'ledger.db')}`],
  ['PostgreSQL', pgUrl || undefined],
];

describe.each(ledgers)('the decision API on two instances sharing one %s ledger', (name, given) => {
  const servers: ServeProcess[] = [];
  let ledger = given;
  let drop = async () => {};
  const serve = () =>
    startServe(
      [
        'examples/approvals',
        '--http',
        '127.0.0.1:0',
        '--ledger',
        ledger!,
        '--auth-tokens',
        tokensFile,
        '--wait-in-call',
        '0',
        '--store-principal-names',
        '--public-url',
        `${PUBLIC_URL}/`,
        '--notify-webhook',
        hookUrl,
        '--notify-secret',
        SECRET,
      ],
      { BATON_KEYS },
    );
  beforeAll(async () => {
    if (!ledger) return;
    if (name === 'PostgreSQL') {
      const database = await createTestDatabase(given!);
      ledger = database.url;
      drop = database.drop;
    }
    servers.push(...(await Promise.all([serve(), serve()])));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await drop();
  });
  const url = (i: number) => servers[i]!.url;

  /** Alice's expense request, over MCP on instance `i`: its id. */
  async function request(i: number, amount = 250): Promise<string> {
    const { client } = await connectHttp(url(i), { token: token('alice') });
    clients.push(client);
    const result = await client.callTool({ name: 'expense_approval', arguments: { amount, purpose: 'conference' } });
    const waiting = result.structuredContent as { status: string; id: string };
    expect(waiting.status).toBe('waiting');
    return waiting.id;
  }

  it.skipIf(!ledger)(
    'lists, shows and records a decision; refuses four eyes, the wrong role and a wrong schema',
    async () => {
      const id = await request(0);

      // The signed notification carries the page's link (no secret in it).
      const requested = await waitFor(
        () => deliveries.find((d) => d.json.type === 'decision.requested' && d.json.data.requestId === id),
        20_000,
      );
      const verified = new Webhook(SECRET).verify(requested.body, {
        'webhook-id': String(requested.headers['webhook-id']),
        'webhook-timestamp': String(requested.headers['webhook-timestamp']),
        'webhook-signature': String(requested.headers['webhook-signature']),
      }) as { data: Record<string, unknown> };
      expect(verified.data).toMatchObject({
        requestId: id,
        key: 'manager_approval',
        role: 'manager',
        url: `${PUBLIC_URL}/decide/${id}?key=manager_approval`,
      });

      // Bob's inbox lists it; alice's (her own request) does not.
      const inbox = await api(url(1), '/api/decisions', { who: token('bob') });
      expect(inbox.status).toBe(200);
      expect(inbox.body.decisions).toContainEqual({
        id,
        key: 'manager_approval',
        flow: 'expense_approval',
        message: 'Approve an expense of 250 for "conference"?',
        requestedAt: expect.any(String),
        deadline: expect.any(String),
        href: `/api/decisions/${id}?key=manager_approval`,
      });
      const own = await api(url(1), '/api/decisions', { who: token('alice') });
      expect(own.body.decisions.map((d: { id: string }) => d.id)).not.toContain(id);

      // One decision, with its schema and who asked.
      const one = await api(url(1), `/api/decisions/${id}`, { who: token('bob') });
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({
        id,
        key: 'manager_approval',
        role: 'manager',
        requester: 'alice',
        requestedSchema: { type: 'object', properties: { approve: { type: 'boolean' } }, required: ['approve'] },
        decided: [],
      });

      // Refusals, as problem details.
      const fourEyes = await api(url(0), `/api/decisions/${id}`, {
        who: token('alice'),
        body: { action: 'accept', content: { approve: true } },
      });
      expect(fourEyes.status).toBe(403);
      expect(fourEyes.headers.get('content-type')).toBe(PROBLEM);
      expect(fourEyes.body).toMatchObject({
        type: 'urn:baton:problem:not_allowed',
        status: 403,
        reason: 'not_allowed',
        detail: expect.stringMatching(/four eyes/),
      });
      const wrongRole = await api(url(0), `/api/decisions/${id}`, { who: token('carol') });
      expect(wrongRole).toMatchObject({
        status: 403,
        body: { reason: 'not_allowed', detail: expect.stringMatching(/role "manager"/) },
      });
      const unknown = await api(url(0), `/api/decisions/${'A'.repeat(22)}`, { who: token('bob') });
      expect(unknown).toMatchObject({ status: 404, body: { reason: 'unknown' } });
      const anonymous = await api(url(0), '/api/decisions');
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('content-type')).toBe(PROBLEM);
      expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);

      // A wrong answer: 422 naming the field; nothing recorded.
      const wrong = await api(url(0), `/api/decisions/${id}`, {
        who: token('bob'),
        body: { action: 'accept', content: { approve: 'yes' } },
        headers: { 'idempotency-key': 'slack-action-1' },
      });
      expect(wrong.status).toBe(422);
      expect(wrong.headers.get('content-type')).toBe(PROBLEM);
      expect(wrong.body).toMatchObject({
        reason: 'invalid_answer',
        errors: [{ field: 'approve', hint: 'must be true or false' }],
      });
      expect((await api(url(1), `/api/decisions/${id}`, { who: token('bob') })).status).toBe(200);

      // The same Idempotency-Key with the corrected answer records it, and the flow advances.
      const answer = { action: 'accept', content: { approve: true, comment: 'ok' } };
      const recorded = await api(url(0), `/api/decisions/${id}`, {
        who: token('bob'),
        body: answer,
        headers: { 'idempotency-key': 'slack-action-1' },
      });
      expect(recorded).toMatchObject({
        status: 200,
        body: {
          status: 'recorded',
          id,
          key: 'manager_approval',
          next: 'The flow has ended: Expense of 250 approved.',
        },
      });
      // A retry on the other instance answers the same; the decision is recorded once.
      const retried = await api(url(1), `/api/decisions/${id}`, {
        who: token('bob'),
        body: answer,
        headers: { 'idempotency-key': 'slack-action-1' },
      });
      expect(retried).toEqual({ ...recorded, headers: retried.headers });
      const store = await openLedger(ledger!);
      try {
        expect((await store.decisions.listDecisions({ id })).map((r) => [r.key, r.status, r.deciderName])).toEqual([
          ['manager_approval', 'decided', 'bob'],
        ]);
      } finally {
        await store.close();
      }

      // The requester sees it on the other instance.
      const { client } = await connectHttp(url(1), { token: token('alice') });
      clients.push(client);
      expect(textOf(await client.callTool({ name: 'baton_resume', arguments: { id } }))).toBe(
        'Expense of 250 approved.',
      );

      // Ended: a later answer is refused as such.
      const late = await api(url(1), `/api/decisions/${id}?key=manager_approval`, {
        who: token('dave'),
        body: answer,
      });
      expect(late.status).toBe(410);
      expect(late.body).toMatchObject({ reason: 'ended' });
    },
    60_000,
  );

  it.skipIf(!ledger)('says who decided first: 409 with decidedBy', async () => {
    // Above 1000 the request waits for finance after the manager: the manager's decision is "decided", not ended.
    const id = await request(1, 2000);
    await waitFor(
      () => deliveries.find((d) => d.json.type === 'decision.requested' && d.json.data.requestId === id),
      20_000,
    );
    const answer = { action: 'accept', content: { approve: true } };
    const first = await api(url(0), `/api/decisions/${id}`, { who: token('bob'), body: answer });
    expect(first.body).toMatchObject({
      status: 'recorded',
      next: `Request ${id} now waits for finance_approval (role finance).`,
    });
    const second = await api(url(1), `/api/decisions/${id}?key=manager_approval`, { who: token('dave'), body: answer });
    expect(second.status).toBe(409);
    expect(second.headers.get('content-type')).toBe(PROBLEM);
    expect(second.body).toMatchObject({
      reason: 'already_decided',
      decidedBy: { key: 'manager_approval', decider: 'bob', you: false, decidedAt: expect.any(String) },
    });
    // The next decision's notification has its link too (one decision at a time: no ?key=).
    const finance = await waitFor(
      () =>
        deliveries.find(
          (d) =>
            d.json.type === 'decision.requested' &&
            d.json.data.requestId === id &&
            d.json.data.key === 'finance_approval',
        ),
      20_000,
    );
    expect(finance.json.data.url).toBe(`${PUBLIC_URL}/decide/${id}?key=finance_approval`);
    const carol = await api(url(0), `/api/decisions/${id}`, { who: token('carol') });
    expect(carol.body).toMatchObject({
      key: 'finance_approval',
      decided: [{ key: 'manager_approval', decider: 'bob', you: false }],
    });
  });

  it.skipIf(!ledger)(
    'without sign-in pages: warns at start-up, and the link answers a page saying how to decide',
    async () => {
      for (const server of servers) {
        const warned = server
          .stderr()
          .split('\n')
          .filter((line) => line.includes('--public-url'));
        expect(warned).toEqual([
          'baton: warning: --public-url: decision links (data.url) open a page that points to baton_decide and the decision API: the signed-in decision pages need --oauth-issuer and --login-client-id',
        ]);
      }
      const id = await request(0);
      const requested = await waitFor(
        () => deliveries.find((d) => d.json.type === 'decision.requested' && d.json.data.requestId === id),
        20_000,
      );
      // The proxy in front maps PUBLIC_URL to the server's root: follow the link's path there.
      const link = new URL(requested.json.data.url as string);
      const path = `${link.pathname.slice(new URL(PUBLIC_URL).pathname.length)}${link.search}`;
      expect(path).toBe(`/decide/${id}?key=manager_approval`);
      for (const at of [path, '/inbox']) {
        const page = await fetch(new URL(at, url(1)));
        expect(page.status).toBe(200);
        expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
        expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
        const text = await page.text();
        expect(text).toContain('baton_decide');
        expect(text).toContain('/api/decisions');
        if (at === path) expect(text).toContain(`<code>${id}</code>`);
      }
      const css = await fetch(new URL('/pages/pages.css', url(1)));
      expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
      const post = await fetch(new URL(path, url(1)), { method: 'POST', body: 'x' });
      expect(post.status).toBe(405);
      expect(post.headers.get('content-type')).toBe('text/html; charset=utf-8');
      // Still pending: the page decides nothing.
      expect((await api(url(1), `/api/decisions/${id}`, { who: token('bob') })).status).toBe(200);
    },
  );

  it.skipIf(!ledger || name !== 'SQLite')(
    'the Slack-style example: a verified notification becomes buttons, a signed click decides once',
    async () => {
      const id = await request(0);
      const delivery = await waitFor(
        () => deliveries.find((d) => d.json.type === 'decision.requested' && d.json.data.requestId === id),
        20_000,
      );
      const messages: SlackMessage[] = [];
      const slackSecret = 'slack-signing-secret-for-the-test';
      const receiver = createReceiver({
        batonSecret: SECRET,
        batonUrl: url(1).origin,
        slackSigningSecret: slackSecret,
        tokens: { U_BOB: token('bob'), U_ALICE: token('alice') },
        post: (message) => void messages.push(message),
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      const at = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
      try {
        // Baton's notification, as delivered: verified, it becomes a message with buttons and the link.
        const forwarded = await fetch(`${at}/baton`, {
          method: 'POST',
          headers: {
            'webhook-id': String(delivery.headers['webhook-id']),
            'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
            'webhook-signature': String(delivery.headers['webhook-signature']),
          },
          body: delivery.body,
        });
        expect(forwarded.status).toBe(204);
        const forged = await fetch(`${at}/baton`, { method: 'POST', body: delivery.body });
        expect(forged.status).toBe(401);
        expect(messages).toHaveLength(1);
        expect(JSON.stringify(messages[0])).toContain(`${PUBLIC_URL}/decide/${id}`);
        const actions = messages[0]!.blocks.find((b) => b.type === 'actions') as {
          elements: { action_id: string; value: string }[];
        };
        const approveButton = actions.elements.find((e) => e.action_id === 'approve')!;

        // A click, signed as Slack signs interactions.
        const click = async (user: string, actionTs: string) => {
          const body = new URLSearchParams({
            payload: JSON.stringify({
              user: { id: user },
              actions: [{ action_id: 'approve', value: approveButton.value, action_ts: actionTs }],
            }),
          }).toString();
          const ts = String(Math.floor(Date.now() / 1000));
          const signature = `v0=${createHmac('sha256', slackSecret).update(`v0:${ts}:${body}`).digest('hex')}`;
          const response = await fetch(`${at}/slack/actions`, {
            method: 'POST',
            headers: {
              'content-type': 'application/x-www-form-urlencoded',
              'x-slack-request-timestamp': ts,
              'x-slack-signature': signature,
            },
            body,
          });
          return (await response.json()) as { text: string; replace_original: boolean };
        };
        // Alice clicks her own request's button: Baton refuses (four eyes), the receiver says so.
        expect(await click('U_ALICE', '1.1')).toMatchObject({
          replace_original: false,
          text: expect.stringMatching(/four eyes/),
        });
        // Bob's click, and Slack's retry of it, record once.
        const first = await click('U_BOB', '2.2');
        expect(first).toMatchObject({
          replace_original: true,
          text: expect.stringMatching(/^Recorded manager_approval/),
        });
        expect(await click('U_BOB', '2.2')).toEqual(first);
        const store = await openLedger(ledger!);
        try {
          expect((await store.decisions.listDecisions({ id })).filter((r) => r.status === 'decided')).toHaveLength(1);
        } finally {
          await store.close();
        }
      } finally {
        await new Promise((resolve) => receiver.close(resolve));
      }
    },
    60_000,
  );

  it.skipIf(!ledger || name !== 'SQLite')('answers what it cannot read as problem details, never 500', async () => {
    const id = await request(0);
    const path = `/api/decisions/${id}`;
    const bob = token('bob');
    const cases = [
      [await api(url(0), path, { who: bob, body: '{"action":' }), 400, 'bad_json'],
      [await api(url(0), path, { who: bob, body: '[1]' }), 400, 'bad_body'],
      [await api(url(0), path, { who: bob, body: { action: 'maybe' } }), 422, 'invalid_answer'],
      [await api(url(0), path, { who: bob, body: { action: 'accept', content: 'yes' } }), 422, 'invalid_answer'],
      [
        await api(url(0), path, { who: bob, body: 'x', headers: { 'content-type': 'text/plain' } }),
        415,
        'unsupported_media_type',
      ],
      [await api(url(0), path, { who: bob, method: 'DELETE' }), 405, 'method_not_allowed'],
      [await api(url(0), `${path}/more`, { who: bob }), 404, 'unknown'],
      [
        await api(url(0), path, { who: bob, body: { action: 'accept' }, headers: { 'idempotency-key': 'a b' } }),
        400,
        'bad_idempotency_key',
      ],
      [await foreignHost(url(0), path, bob), 403, 'forbidden'],
      [await api(url(0), path, { who: bob, body: 'x'.repeat(1024 * 1024 + 1) }), 413, 'too_large'],
    ] as const;
    for (const [response, status, reason] of cases) {
      expect({ status: response.status, reason: response.body?.reason }).toEqual({ status, reason });
      expect(response.headers.get('content-type')).toBe(PROBLEM);
    }
    // Still pending after all of that.
    expect((await api(url(1), path, { who: bob })).status).toBe(200);
  });
});

describe('the decision API with OAuth (a real provider on loopback)', () => {
  const bob: TestClient = { clientId: 'bob', clientSecret: 'bob-secret-0123456789', groups: ['managers'] };
  const carol: TestClient = {
    clientId: 'carol',
    clientSecret: 'carol-secret-0123456789',
    groups: ['managers'],
    scope: 'baton:call',
  };
  let idp: TestIdentityProvider;
  let server: ServeProcess;
  beforeAll(async () => {
    // The pages' web client: nobody signs in here (its redirect URI is never followed).
    const web = { clientId: 'baton-web', clientSecret: 'baton-web-secret-0123456789' };
    idp = await startIdentityProvider([bob, carol], [], [{ ...web, redirectUris: ['http://127.0.0.1/auth/callback'] }]);
    writeFileSync(join(dir, 'groups.json'), JSON.stringify({ managers: 'manager' }));
    writeFileSync(join(dir, 'web.secret'), `${web.clientSecret}\n`);
    server = await startServe(
      [
        'examples/approvals',
        '--http',
        '127.0.0.1:0',
        '--ledger',
        `sqlite:${join(dir, 'oauth.db')}`,
        '--oauth-issuer',
        idp.issuer,
        '--roles-claim',
        'groups',
        '--group-roles',
        join(dir, 'groups.json'),
        '--login-client-id',
        'baton-web',
        '--login-client-secret-file',
        join(dir, 'web.secret'),
      ],
      { BATON_KEYS },
    );
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
    await idp?.close();
  });

  it('needs the scope baton:decide: 403 insufficient_scope without it', async () => {
    const without = await idp.token(carol, { resource: server.url.href });
    const refused = await api(server.url, '/api/decisions', { who: without });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toBe(PROBLEM);
    expect(refused.headers.get('www-authenticate')).toMatch(/error="insufficient_scope".*scope="baton:decide"/);
    expect(refused.body).toMatchObject({ reason: 'insufficient_scope', status: 403 });
    const withScope = await idp.token(bob, { resource: server.url.href });
    const listed = await api(server.url, '/api/decisions', { who: withScope });
    expect(listed).toMatchObject({ status: 200, body: { decisions: [] } });
  });

  it('names the resource metadata in the 401 and 403 challenges of /api and /events, as /mcp does', async () => {
    const metadata = `resource_metadata="${new URL('/.well-known/oauth-protected-resource/mcp', server.url).href}"`;
    const mcp = await fetch(server.url, { method: 'POST', body: '{}' });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get('www-authenticate')).toContain(metadata);
    const without = await idp.token(carol, { resource: server.url.href });
    const event = (who?: string) =>
      fetch(new URL('/events/ci.finished', server.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(who ? { authorization: `Bearer ${who}` } : {}) },
        body: JSON.stringify({ data: { commit: 'a1b2c3d', status: 'success' } }),
      });
    const answers = [
      ['GET /api/decisions, no token', await api(server.url, '/api/decisions'), 401],
      ['GET /api/decisions, no baton:decide', await api(server.url, '/api/decisions', { who: without }), 403],
      ['POST /events, no token', await event(), 401],
      ['POST /events, an unknown token', await event('not-a-token'), 401],
      ['POST /events, no baton:events', await event(without), 403],
    ] as const;
    for (const [what, response, status] of answers) {
      expect({ what, status: response.status, type: response.headers.get('content-type') }).toEqual({
        what,
        status,
        type: PROBLEM,
      });
      expect(response.headers.get('www-authenticate'), what).toMatch(/^Bearer /);
      expect(response.headers.get('www-authenticate'), what).toContain(metadata);
    }
  });

  it('answers the refusals of the server on the decision pages as pages, not JSON-RPC', async () => {
    const page = async (response: Response) => ({
      status: response.status,
      type: response.headers.get('content-type'),
      csp: response.headers.get('content-security-policy')?.includes("default-src 'none'"),
      title: /<h1>([^<]*)<\/h1>/.exec(await response.text())?.[1],
    });
    const decide = new URL(`/decide/${'A'.repeat(22)}`, server.url);
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    // A form posted from another site (no session needed: the Origin check comes first).
    const forged = await fetch(decide, {
      method: 'POST',
      headers: { ...form, origin: 'http://evil.example' },
      body: 'a=1',
    });
    expect(await page(forged)).toEqual({
      status: 403,
      type: 'text/html; charset=utf-8',
      csp: true,
      title: 'This form cannot be accepted',
    });
    // A body over the limit (1 MiB).
    const large = await fetch(decide, { method: 'POST', headers: form, body: 'a='.padEnd(1024 * 1024 + 10, 'x') });
    expect(await page(large)).toEqual({ status: 413, type: 'text/html; charset=utf-8', csp: true, title: 'Too much' });
    // A wrong method: a page with Allow.
    const put = await fetch(new URL('/inbox', server.url), { method: 'PUT', body: 'x' });
    expect(put.headers.get('allow')).toBe('GET, HEAD');
    expect(await page(put)).toMatchObject({ status: 405, type: 'text/html; charset=utf-8', title: 'Not here' });
    // A foreign Host (DNS rebinding), with node:http: fetch does not let a caller set Host.
    const rebound = await new Promise<{ status: number; type: string | undefined; text: string }>((resolve, reject) => {
      const req = httpRequest(
        { host: server.url.hostname, port: server.url.port, path: '/inbox', headers: { host: 'evil.example' } },
        (res) => {
          let text = '';
          res.on('data', (chunk) => {
            text += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], text }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(rebound).toMatchObject({ status: 403, type: 'text/html; charset=utf-8' });
    expect(rebound.text).toContain('<h1>Not served at this address</h1>');
    // /mcp keeps its JSON-RPC answers.
    const mcp = await fetch(server.url, {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(mcp.status).toBe(403);
    expect(((await mcp.json()) as { jsonrpc?: string }).jsonrpc).toBe('2.0');
  });
});

describe('baton serve --public-url', () => {
  it('refuses what is not an absolute http(s) URL without query, in one line', async () => {
    const cases: [string, RegExp][] = [
      ['baton.example.com', /--public-url expects an absolute http: or https: URL, got "baton.example.com"/],
      ['https://baton.example.com/?token=x', /--public-url must have no query, fragment or credentials/],
    ];
    for (const [value, message] of cases) {
      const { code, stderr } = await runCli([
        'serve',
        'examples/approvals',
        '--http',
        '127.0.0.1:0',
        '--public-url',
        value,
      ]);
      expect(code).toBe(2);
      expect(stderr).toMatch(message);
      expect(stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});
