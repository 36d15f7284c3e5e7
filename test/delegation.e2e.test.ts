/**
 * Delegation end to end: one real `baton serve` of `examples/approvals` on a SQLite file with
 * bearer tokens, names stored and the audit trail on, driven by the real SDK client over
 * loopback HTTP, the HTTP decision API and the `baton delegates` CLI. Alice requests an expense;
 * bob (manager) cannot hand it to alice (four eyes), hands it to dave (no role) with a reason
 * through `baton_delegate`; dave's inbox lists it as handed by bob; bob may no longer decide it;
 * dave approves through the API, and the audit trail records the hand-over (`via: 'delegate'`,
 * by bob) and dave's decision for bob (`onBehalfOf`), which `baton runs show` prints. An absence
 * set with `baton delegates set bob --to erin` lets erin decide alice's next request for bob;
 * one whose range has ended lets gina decide nothing.
 */
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { openAuditLog } from '@baton/store';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir, tokenOf as token, writeTokens } from './helpers/e2eLedgers.js';
import { connectHttp, runCli, type ServeProcess, startServe, textOf } from './helpers/mcpClients.js';

const dir = scratchDir('delegation');
const BATON_KEYS = generateKey();
const ledger = `sqlite:${join(dir, 'ledger.db')}`;
const tokensFile = writeTokens(dir, {
  alice: { principal: 'alice', roles: ['manager'] },
  bob: { principal: 'bob', roles: ['manager'] },
  dave: { principal: 'dave', roles: [] },
  erin: { principal: 'erin', roles: [] },
  gina: { principal: 'gina', roles: [] },
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

async function mcp(who: string): Promise<Client> {
  const { client } = await connectHttp(server.url, { token: token(who) });
  clients.push(client);
  return client;
}

async function api(path: string, who: string, body?: unknown) {
  const response = await fetch(new URL(path, server.url), {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${token(who)}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, type: response.headers.get('content-type'), body: (await response.json()) as any };
}

async function requestExpense(alice: Client): Promise<string> {
  const result = await alice.callTool({ name: 'expense_approval', arguments: { amount: 250, purpose: 'conference' } });
  return (result.structuredContent as { id: string }).id;
}

const approve = { action: 'accept', content: { approve: true } };
const iso = (ms: number) => new Date(ms).toISOString();

describe('delegation end to end', () => {
  it('bob hands the decision to dave, who approves it for bob; alice can never be the delegate', async () => {
    const alice = await mcp('alice');
    const bob = await mcp('bob');
    const dave = await mcp('dave');
    const id = await requestExpense(alice);

    const toAlice = await bob.callTool({ name: 'baton_delegate', arguments: { id, to: 'alice' } });
    expect(toAlice.isError).toBe(true);
    expect(textOf(toAlice)).toMatch(/four eyes/);
    const handed = await bob.callTool({ name: 'baton_delegate', arguments: { id, to: 'dave', reason: 'on leave' } });
    expect(handed.isError).toBeFalsy();
    expect(textOf(handed)).toMatch(/^Handed the decision "manager_approval" on request .* to dave\./);

    // Dave's inbox lists it as handed, over MCP and the API; bob may no longer decide it.
    const inbox = await dave.callTool({ name: 'baton_inbox', arguments: {} });
    expect(textOf(inbox)).toContain(`Request ${id}, manager_approval`);
    expect(textOf(inbox)).toContain('[handed to you by bob, for bob, on leave]');
    const listed = await api('/api/decisions', 'dave');
    expect(listed.body.decisions).toContainEqual(
      expect.objectContaining({
        id,
        delegated: { kind: 'handover', onBehalfOf: 'bob', by: 'bob', reason: 'on leave' },
      }),
    );
    const shown = await api(`/api/decisions/${id}`, 'dave');
    expect(shown.body.handover).toMatchObject({ to: 'dave', by: 'bob', onBehalfOf: 'bob', reason: 'on leave' });
    const bobs = await api(`/api/decisions/${id}`, 'bob', approve);
    expect(bobs.status).toBe(403);
    expect(bobs.type).toMatch(/^application\/problem\+json/);
    expect(bobs.body.detail).toMatch(/you handed it to dave/);
    const delegateAgain = await api(`/api/decisions/${id}/delegate`, 'bob', { to: 'erin' });
    expect(delegateAgain).toMatchObject({ status: 403, body: { reason: 'not_allowed' } });

    const recorded = await api(`/api/decisions/${id}`, 'dave', approve);
    expect(recorded).toMatchObject({
      status: 200,
      body: { status: 'recorded', next: expect.stringMatching(/approved/) },
    });

    // The audit trail: the hand-over by bob, then dave's decision for bob.
    const audit = await openAuditLog(ledger, { pruneIntervalMs: 0 });
    try {
      const rounds = await audit.rounds(id);
      const handOver = rounds.find((r) => r.via === 'delegate');
      expect(handOver).toMatchObject({ principalName: 'bob', message: 'Handed "manager_approval" to dave: on leave' });
      const decided = rounds.find((r) => r.via === 'decide_api');
      expect(decided?.principalName).toBe('dave');
      const answer = decided?.received.find((a) => a.key === 'manager_approval');
      expect(answer).toMatchObject({ decider: decided?.principal, onBehalfOf: handOver?.principal });
    } finally {
      await audit.close();
    }
    const show = await runCli(['runs', 'show', id, '--ledger', ledger]);
    expect(show.stdout).toMatch(/manager_approval \[manager\]: decided by dave for bob at /);
  }, 60_000);

  it('an absence set by baton delegates lets erin decide for bob within its range, and gina not after it', async () => {
    const alice = await mcp('alice');
    const id = await requestExpense(alice);
    const now = Date.now();
    const env = { BATON_KEYS };
    const bad = await runCli(
      [
        'delegates',
        'set',
        'bob',
        '--to',
        'erin',
        '--from',
        iso(now),
        '--until',
        iso(now - 1),
        '--reason',
        'x',
        '--ledger',
        ledger,
      ],
      env,
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr.trim().split('\n')[0]).toMatch(/--until must be after --from/);
    const set = await runCli(
      [
        'delegates',
        'set',
        'bob',
        '--to',
        'erin',
        '--from',
        iso(now - 60_000),
        '--until',
        iso(now + 3600_000),
        '--roles',
        'manager',
        '--reason',
        'holiday',
        '--ledger',
        ledger,
        '--as',
        'ops',
        '--store-principal-names',
      ],
      env,
    );
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(/^set: \S+: erin for bob \[manager\], .* \(in force\): holiday \(set by ops\)/);
    const ended = await runCli(
      [
        'delegates',
        'set',
        'bob',
        '--to',
        'gina',
        '--from',
        iso(now - 7200_000),
        '--until',
        iso(now - 3600_000),
        '--roles',
        'manager',
        '--reason',
        'last week',
        '--ledger',
        ledger,
      ],
      env,
    );
    expect(ended.code, ended.stderr).toBe(0);

    const erinsInbox = await api('/api/decisions', 'erin');
    expect(erinsInbox.body.decisions).toContainEqual(
      expect.objectContaining({ id, delegated: { kind: 'absence', onBehalfOf: 'bob', reason: 'holiday' } }),
    );
    expect((await api('/api/decisions', 'gina')).body.decisions).toEqual([]);
    const gina = await api(`/api/decisions/${id}`, 'gina', approve);
    expect(gina).toMatchObject({ status: 403, body: { reason: 'not_allowed' } });
    const erin = await api(`/api/decisions/${id}`, 'erin', approve);
    expect(erin).toMatchObject({ status: 200, body: { status: 'recorded' } });
    const show = await runCli(['runs', 'show', id, '--ledger', ledger]);
    expect(show.stdout).toMatch(/decided by erin for bob/);

    const list = await runCli(['delegates', 'list', '--ledger', ledger, '--json'], env);
    const delegates = JSON.parse(list.stdout).delegates as { id: string; delegate: string; active: boolean }[];
    // Gina's was set without --store-principal-names: she is shown as a keyed hash.
    expect(delegates.map((d) => [d.delegate, d.active])).toEqual([
      [expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), false],
      ['erin', true],
    ]);
    const removed = await runCli(
      ['delegates', 'remove', delegates[1]!.id, '--reason', 'back early', '--ledger', ledger, '--as', 'ops'],
      env,
    );
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/^removed: /);
  }, 60_000);
});
