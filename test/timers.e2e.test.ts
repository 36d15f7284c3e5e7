/**
 * The scheduler end to end: two `baton serve` processes sharing one ledger (a
 * SQLite file, then the PostgreSQL the suite starts), both running the
 * scheduler and delivering the outbox to a loopback webhook receiver with a
 * Standard Webhooks secret. A decision with a 3-second deadline and no client
 * ends on time through the flow's own timeout branch, so `completed` (the flow
 * handled it) in the ledger, `baton_requests`, `baton runs list` and
 * `request.ended`; the requester's later `baton_resume` (on the other
 * instance) sees its outcome; the receiver gets one signed `request.ended` that
 * verifies with `standardwebhooks`, while a wrong secret, an old timestamp and
 * a changed body fail verification. Then the same while one instance is
 * SIGKILLed around the due time: every request ends once, and each end is
 * delivered at least once under one `webhook-id`.
 */
import { randomBytes } from 'node:crypto';
import { generateKey } from '@baton/engine';
import { openLedger } from '@baton/store';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
// standardwebhooks is a dependency of @baton/adapters (which signs with it), not of the workspace root.
import { Webhook } from '../packages/adapters/node_modules/standardwebhooks/dist/index.js';
import { e2eLedgers, ledgerOfItsOwn, scratchDir, tokenOf as token, writeTokens } from './helpers/e2eLedgers.js';
import { connectHttp, runCli, type ServeProcess, startServe, textOf } from './helpers/mcpClients.js';
import { type Delivery, startWebhookReceiver, type WebhookReceiver } from './helpers/webhookReceiver.js';

const dir = scratchDir('timers-e2e');
const BATON_KEYS = generateKey();
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const OTHER_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const tokensFile = writeTokens(dir, {
  alice: { principal: 'alice', roles: [] },
  bob: { principal: 'bob', roles: ['manager'] },
});

let receiver: WebhookReceiver;
let deliveries: Delivery[] = [];
let hookUrl = '';
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  ({ deliveries, url: hookUrl } = receiver);
});
afterAll(() => receiver.close());
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

const waitFor = async (check: () => boolean, ms: number) => {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};
const headersOf = (d: Delivery) => ({
  'webhook-id': String(d.headers['webhook-id']),
  'webhook-timestamp': String(d.headers['webhook-timestamp']),
  'webhook-signature': String(d.headers['webhook-signature']),
});
const endedOf = (id: string) =>
  deliveries.filter((d) => d.json.type === 'request.ended' && d.json.data.requestId === id);

const ledgers = e2eLedgers(dir);

describe.each(ledgers)('the scheduler on two instances sharing one %s ledger', (name, given) => {
  const servers: ServeProcess[] = [];
  // A database of its own: instances of other test files must neither fire these timers nor deliver this outbox.
  let ledger = given;
  let drop = async () => {};
  const serve = () =>
    startServe(
      [
        'test/fixtures/timer-flows',
        '--http',
        '127.0.0.1:0',
        '--ledger',
        ledger!,
        '--auth-tokens',
        tokensFile,
        '--wait-in-call',
        '0',
        '--notify-webhook',
        hookUrl,
        '--notify-secret',
        SECRET,
      ],
      { BATON_KEYS, BATON_SCHEDULER_LEASE_MS: '2000' },
    );
  beforeAll(async () => {
    if (!ledger) return;
    ({ url: ledger, drop } = await ledgerOfItsOwn(name, given!));
    servers.push(await serve(), await serve());
  }, 120_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await drop();
  });

  async function request(instance: number): Promise<string> {
    const { client } = await connectHttp(servers[instance]!.url, { token: token('alice') });
    clients.push(client);
    const result = await client.callTool({ name: 'quick_approval', arguments: {} });
    const waiting = result.structuredContent as { status: string; id: string };
    expect(waiting.status).toBe('waiting');
    return waiting.id;
  }

  it.skipIf(!ledger)(
    "a 3-second deadline with no client ends on time through the flow's timeout branch (completed); resume, baton_requests, baton runs and one signed request.ended agree",
    async () => {
      const id = await request(0);
      await waitFor(() => endedOf(id).length > 0, 20_000);
      const store = await openLedger(ledger!);
      const row = await store.requests.getRequest(id).finally(() => store.close());
      // The flow handled its deadline (its own "expired" final state): the request completed.
      expect(row?.status).toBe('completed');
      // On time: due 3 s after it was parked; fired within the poll interval (1 s) plus a loaded machine's slack.
      const late = row!.updatedAt - row!.createdAt - 3000;
      expect(late).toBeGreaterThanOrEqual(0);
      expect(late).toBeLessThan(6000);

      const { client } = await connectHttp(servers[1]!.url, { token: token('alice') });
      clients.push(client);
      const resumed = await client.callTool({ name: 'baton_resume', arguments: { id } });
      expect(textOf(resumed)).toContain('expired: nobody decided within 3 seconds');
      const mine = await client.callTool({ name: 'baton_requests', arguments: {} });
      expect((mine.structuredContent as { requests: unknown[] }).requests).toContainEqual({
        id,
        flow: 'quick_approval',
        status: 'completed',
      });
      const listed = await runCli(['runs', 'list', '--json', '--ledger', ledger!], { BATON_KEYS });
      expect(listed.stderr).toBe('');
      expect((JSON.parse(listed.stdout) as { runs: { id: string; status: string }[] }).runs).toContainEqual(
        expect.objectContaining({ id, status: 'completed' }),
      );

      const [ended] = endedOf(id);
      expect(ended!.json).toMatchObject({
        type: 'request.ended',
        data: { requestId: id, flow: 'quick_approval', status: 'completed' },
      });
      expect(new Date(ended!.json.timestamp).toISOString()).toBe(ended!.json.timestamp);
      expect(new Webhook(SECRET).verify(ended!.body, headersOf(ended!))).toEqual(ended!.json);
      // Refusals: a wrong secret, an old timestamp, a changed body.
      expect(() => new Webhook(OTHER_SECRET).verify(ended!.body, headersOf(ended!))).toThrow();
      const old = new Date(Date.now() - 10 * 60_000);
      const oldHeaders = {
        'webhook-id': headersOf(ended!)['webhook-id'],
        'webhook-timestamp': String(Math.floor(old.getTime() / 1000)),
        'webhook-signature': new Webhook(SECRET).sign(headersOf(ended!)['webhook-id'], old, ended!.body),
      };
      expect(() => new Webhook(SECRET).verify(ended!.body, oldHeaders)).toThrow(/timestamp/i);
      expect(() =>
        new Webhook(SECRET).verify(ended!.body.replace('completed', 'expired'), headersOf(ended!)),
      ).toThrow();
      // Recorded once: every delivery of this end carries one webhook-id.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(new Set(endedOf(id).map((d) => d.headers['webhook-id'])).size).toBe(1);
    },
    60_000,
  );

  it.skipIf(!ledger)(
    'one instance SIGKILLed around the due time: each request ends once, delivered under one webhook-id',
    async () => {
      const ids = await Promise.all([0, 1, 0, 1, 0].map((instance) => request(instance)));
      await new Promise((resolve) => setTimeout(resolve, 2900));
      servers[0]!.child.kill('SIGKILL');
      await waitFor(() => ids.every((id) => endedOf(id).length > 0), 30_000);
      const store = await openLedger(ledger!);
      try {
        for (const id of ids) expect((await store.requests.getRequest(id))?.status).toBe('completed');
      } finally {
        await store.close();
      }
      for (const id of ids) expect(new Set(endedOf(id).map((d) => d.headers['webhook-id'])).size).toBe(1);
      servers[0] = await serve();
    },
    90_000,
  );
});
