/**
 * The example flows (`examples/approvals`) driven end to end by the official
 * SDK client over real HTTP: an in-process `serveHttp` on 127.0.0.1 whose
 * runner and codec share a clock the test moves, and a real SQLite ledger
 * file so states are single-use and access codes work. Every branch of the
 * examples: deploy (deployed, cancelled three ways, a missing answer re-asked
 * alone, expiry), expense (decided by others on either server), release
 * notes (roots + sampling, and the fallback), access codes (granted, redeemed
 * once, already used on another server, unknown, expired, denied). Principals
 * come from bearer tokens with roles (alice requests; bob is a manager, carol
 * finance), and decisions are made through the MCP decision tools
 * (`baton_inbox`, `baton_decide`, `baton_resume`), including the 7-day
 * deadline on the moved clock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFlowServerFactory, createStaticTokenVerifier, type HttpServing, serveHttp } from '@baton/adapters';
import { createKeyRing, createRequestStateCodec, createRunner, type FullLedger, generateKey } from '@baton/engine';
import flows from '@baton/examples/approvals';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClientOptions,
  connectHttp,
  expectInputRequired,
  protocolError,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

/** The clock shared by both runners and codecs: real time plus what the test moved it by. */
let offsetMs = 0;
const now = () => Date.now() + offsetMs;
const advance = (ms: number) => {
  offsetMs += ms;
};

const keys = createKeyRing([generateKey()]);
let dir: string;
const ledgers: FullLedger[] = [];
const servers: HttpServing[] = [];
const clients: Client[] = [];

const token = (name: string) => `${name}-token-${'t'.repeat(20)}`;
const TOKENS = {
  [token('alice')]: 'alice',
  [token('bob')]: { principal: 'bob', roles: ['manager'] },
  [token('carol')]: { principal: 'carol', roles: ['finance'] },
};

/** A server on 127.0.0.1 with its own runner and its own handle on the shared ledger file. */
async function startServer(): Promise<HttpServing> {
  const ledger = createSqliteLedger({ path: join(dir, 'ledger.db'), pruneIntervalMs: 0 });
  ledgers.push(ledger);
  // Rounds that wait on someone else's decision are held 50 ms, not 7 s.
  const runner = createRunner({
    flows,
    ledger,
    now,
    codec: createRequestStateCodec({ keys, now }),
    holdMs: 50,
    pollMs: 10,
  });
  const serving = await serveHttp({
    factory: createFlowServerFactory({ runner }),
    host: '127.0.0.1',
    port: 0,
    verifier: createStaticTokenVerifier(TOKENS),
  });
  servers.push(serving);
  return serving;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'baton-examples-'));
  await startServer();
  await startServer();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(servers.map((serving) => serving.close()));
  await Promise.all(ledgers.map((ledger) => ledger.close()));
  rmSync(dir, { recursive: true, force: true });
});

async function connect(options: ClientOptions & { as?: string } = {}, server = 0) {
  const connected = await connectHttp(servers[server]!.url, { token: token(options.as ?? 'alice'), ...options });
  clients.push(connected.client);
  return connected;
}

type Content = Record<string, string | number | boolean | string[]>;
type Answer = { action: 'accept'; content: Content } | { action: 'decline' } | { action: 'cancel' };
const accept = (content: Content): Answer => ({ action: 'accept', content });

/** A completed tool result, asserted not an error, as text. */
function completedText(result: unknown): string {
  const r = result as { resultType?: string; isError?: boolean; content?: unknown };
  expect(r.resultType ?? 'complete').toBe('complete');
  expect(r.isError).toBeFalsy();
  return textOf(r);
}

describe('deploy_production', () => {
  const call = (version: string) => ({ name: 'deploy_production', arguments: { version } });

  it('deploys when confirmed with a ticket (auto-driving client, one round of two requests)', async () => {
    const { client, log } = await connect({
      elicit: (params) =>
        'requestedSchema' in params && 'ticket' in (params.requestedSchema.properties ?? {})
          ? accept({ ticket: 'CHG-1234' })
          : accept({ confirm: true }),
    });
    const result = await client.callTool(call('1.4.0'));
    const text = completedText(result);
    expect(text).toContain('Deployed 1.4.0');
    expect(text).toContain('CHG-1234');
    expect(log.asked).toEqual([
      'elicit:Deploy 1.4.0 to production? Plan: rolling update of 3 instances to 1.4.0.',
      'elicit:Which change ticket covers this deployment?',
    ]);
  });

  it('asks both requests in one round, naming the version', async () => {
    const { client } = await connect();
    const first = expectInputRequired(await toolRound(client, call('1.5.0')));
    expect(Object.keys(first.inputRequests ?? {})).toEqual(['confirm_deploy', 'change_ticket']);
    expect(JSON.stringify(first.inputRequests!.confirm_deploy)).toContain('1.5.0');
    const done = await toolRound(client, {
      ...call('1.5.0'),
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-55' }) },
    });
    const text = completedText(done);
    expect(text).toContain('Deployed 1.5.0');
    expect(text).toContain('CHG-55');
  });

  const cancellations: [string, Answer][] = [
    ['not confirmed', accept({ confirm: false })],
    ['declined', { action: 'decline' }],
    ['cancelled', { action: 'cancel' }],
  ];
  for (const [label, answer] of cancellations) {
    it(`ends with a normal "cancelled" result when ${label}`, async () => {
      const { client } = await connect();
      const first = expectInputRequired(await toolRound(client, call('2.0.0')));
      const done = await toolRound(client, {
        ...call('2.0.0'),
        requestState: first.requestState,
        inputResponses: { confirm_deploy: answer, change_ticket: accept({ ticket: 'CHG-1' }) },
      });
      const text = completedText(done);
      expect(text).toContain('cancelled');
      expect(text).not.toContain('Deployed');
    });
  }

  it('ends cancelled (not an error) when the auto-driving client declines everything', async () => {
    const { client } = await connect({ elicit: () => ({ action: 'decline' }) });
    expect(completedText(await client.callTool(call('2.1.0')))).toContain('cancelled');
  });

  it('asks a missing response again, alone', async () => {
    const { client } = await connect();
    const first = expectInputRequired(await toolRound(client, call('3.0.0')));
    const second = expectInputRequired(
      await toolRound(client, {
        ...call('3.0.0'),
        requestState: first.requestState,
        inputResponses: { confirm_deploy: accept({ confirm: true }) },
      }),
    );
    expect(Object.keys(second.inputRequests ?? {})).toEqual(['change_ticket']);
    const done = await toolRound(client, {
      ...call('3.0.0'),
      requestState: second.requestState,
      inputResponses: { change_ticket: accept({ ticket: 'CHG-9' }) },
    });
    const text = completedText(done);
    expect(text).toContain('Deployed 3.0.0');
    expect(text).toContain('CHG-9');
  });

  it('expires when no answer comes within 15 minutes (moved clock)', async () => {
    const { client } = await connect();
    const first = expectInputRequired(await toolRound(client, call('4.0.0')));
    advance(15 * 60_000 + 1000);
    const done = await toolRound(client, {
      ...call('4.0.0'),
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-2' }) },
    });
    const text = completedText(done);
    expect(text).toContain('expired');
    expect(text).not.toContain('Deployed');
  });

  it('still deploys when answered just before the 15 minutes', async () => {
    const { client } = await connect();
    const first = expectInputRequired(await toolRound(client, call('4.1.0')));
    advance(14 * 60_000);
    const done = await toolRound(client, {
      ...call('4.1.0'),
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-3' }) },
    });
    expect(completedText(done)).toContain('Deployed 4.1.0');
  });
});

describe('expense_approval (decided by others through the decision tools)', () => {
  const call = (amount: number) => ({ name: 'expense_approval', arguments: { amount, purpose: 'conference' } });
  const idOf = async (name: string, server: number, amount: number) => {
    const { client } = await connect({ as: name }, server);
    const listed = await client.callTool({ name: 'baton_inbox', arguments: {} });
    const decisions = (listed.structuredContent as { decisions: { id: string; key: string; message: string }[] })
      .decisions;
    return decisions.find((d) => d.message.includes(`${amount}`));
  };
  const decide = async (name: string, server: number, id: string, approve: boolean) => {
    const { client } = await connect({ as: name, elicit: () => accept({ approve }) }, server);
    return client.callTool({ name: 'baton_decide', arguments: { id } });
  };

  it('answers "retry later" (no requests) until a manager decides on the other server, then approves', async () => {
    const { client } = await connect();
    const first = expectInputRequired(await toolRound(client, call(250)));
    expect(first.inputRequests ?? {}).toEqual({});
    const id = (await idOf('bob', 1, 250))!.id;
    expect(textOf(await decide('bob', 1, id, true))).toMatch(/^Recorded/);
    const done = await toolRound((await connect({}, 1)).client, { ...call(250), requestState: first.requestState });
    expect(completedText(done)).toContain('approved');
  });

  it('needs finance above 1000, and finance may reject', async () => {
    const { client } = await connect();
    const first = expectInputRequired(await toolRound(client, call(5000)));
    const id = (await idOf('bob', 0, 5000))!.id;
    expect(textOf(await decide('bob', 0, id, true))).toMatch(/^Recorded/);
    expect(await idOf('carol', 1, 5000)).toMatchObject({ id, key: 'finance_approval' });
    expect(textOf(await decide('carol', 1, id, false))).toMatch(/^Recorded/);
    const done = await toolRound(client, { ...call(5000), requestState: first.requestState });
    expect(completedText(done)).toContain('rejected by finance');
  });

  it('expires after 7 days (moved clock): no longer listed or decidable, and the requester gets "expired"', async () => {
    const { client } = await connect();
    const first = expectInputRequired(await toolRound(client, call(777)));
    const id = (await idOf('bob', 0, 777))!.id;
    advance(7 * 86_400_000 + 60_000);
    expect(await idOf('bob', 1, 777)).toBeUndefined();
    const late = await decide('bob', 1, id, true);
    expect(late.isError).toBe(true);
    expect(textOf(late)).toContain('expired');
    // The call's own state outlives only its earliest timer (the 24 h reminder) by the grace:
    // a week later it is refused, and the requester continues with baton_resume, on any server,
    // whose round fires the reminder, the escalation and the 7-day window in order.
    const stale = await protocolError(
      toolRound((await connect({}, 1)).client, { ...call(777), requestState: first.requestState }),
    );
    expect(stale).toMatchObject({ code: -32602, data: { reason: 'expired' } });
    const resumed = await (await connect({}, 1)).client.callTool({ name: 'baton_resume', arguments: { id } });
    expect(completedText(resumed)).toContain('expired: no decision within 7 days');
  });

  it("a day later the call's state still opens: its round fires the manager's reminder and waits on", async () => {
    const { client } = await connect();
    const first = expectInputRequired(await toolRound(client, call(778)));
    expect((await idOf('bob', 0, 778))!.key).toBe('manager_approval');
    advance(86_400_000 + 60_000);
    // Past the call's wait (a day): the round completes with the "waiting" result.
    const next = await toolRound(client, { ...call(778), requestState: first.requestState });
    expect(completedText(next)).toMatch(/^Waiting for a decision by someone with the role "manager"/);
    expect(await idOf('bob', 1, 778)).toMatchObject({ key: 'manager_approval' });
  });
});

describe('draft_release_notes', () => {
  const publish = (params: { requestedSchema?: { properties?: object } }) =>
    'publish' in (params.requestedSchema?.properties ?? {})
      ? accept({ publish: true })
      : ({ action: 'decline' } as const);

  it("drafts from the client's roots with the client's model, then publishes", async () => {
    const { client, log } = await connect({ elicit: (params) => publish(params as never) });
    const text = completedText(await client.callTool({ name: 'draft_release_notes', arguments: { version: '5.0.0' } }));
    expect(text).toContain('Published release notes');
    expect(text).toContain('Fixed bugs.');
    expect(log.asked).toEqual(['roots', 'sampling', 'elicit:Publish these release notes?\n\nFixed bugs.']);
  });

  it('takes the declared template fallback when the client lacks sampling', async () => {
    const { client, log } = await connect({
      capabilities: { roots: {}, elicitation: { form: {} } },
      elicit: (params) => publish(params as never),
    });
    const text = completedText(await client.callTool({ name: 'draft_release_notes', arguments: { version: '5.1.0' } }));
    expect(text).toContain('Release 5.1.0: bug fixes and improvements.');
    expect(log.asked).toEqual([
      'roots',
      'elicit:Publish these release notes?\n\nRelease 5.1.0: bug fixes and improvements.',
    ]);
  });

  it('discards the notes when publishing is declined', async () => {
    const { client } = await connect({ elicit: () => ({ action: 'decline' }) });
    const text = completedText(await client.callTool({ name: 'draft_release_notes', arguments: { version: '5.2.0' } }));
    expect(text).toContain('discarded');
  });
});

describe('access codes', () => {
  const codeOf = (text: string) => {
    const match = /code: (\S+)/.exec(text);
    if (!match) throw new Error(`no "code: <CODE>" in ${JSON.stringify(text)}`);
    return match[1]!.replace(/\.$/, '');
  };
  const redeem = async (client: Client, code: string) =>
    completedText(await client.callTool({ name: 'redeem_access_code', arguments: { code } }));

  async function grant(minutes: number): Promise<string> {
    const { client, log } = await connect({ elicit: () => accept({ approve: true }) });
    const text = completedText(
      await client.callTool({ name: 'grant_temporary_access', arguments: { resource: 'db-prod', minutes } }),
    );
    expect(log.asked).toEqual(['elicit:Grant temporary access to db-prod for 10 minutes?'.replace('10', `${minutes}`)]);
    expect(text).toContain('granted');
    return codeOf(text);
  }

  it('grants a code that redeems once, then says already used (on another server sharing the ledger)', async () => {
    const code = await grant(10);
    const { client: first } = await connect({}, 0);
    const redeemed = await redeem(first, code);
    expect(redeemed).toContain('accepted');
    expect(redeemed).toContain('db-prod');
    const { client: second } = await connect({}, 1);
    const again = await redeem(second, code);
    expect(again).toContain('already used');
    expect(again).not.toContain('accepted');
  });

  it('grants through manual rounds: one approval round, then the code', async () => {
    const { client } = await connect();
    const call = { name: 'grant_temporary_access', arguments: { resource: 'bucket', minutes: 5 } };
    const first = expectInputRequired(await toolRound(client, call));
    expect(Object.keys(first.inputRequests ?? {})).toEqual(['approval']);
    const done = await toolRound(client, {
      ...call,
      requestState: first.requestState,
      inputResponses: { approval: accept({ approve: true }) },
    });
    const code = codeOf(completedText(done));
    expect(await redeem(client, code)).toContain('accepted');
  });

  it('says a code is unknown, distinctly and not as an error', async () => {
    const { client } = await connect();
    const unknown = await redeem(client, 'not-a-real-code');
    expect(unknown).toContain('not known');
    expect(unknown).not.toContain('already used');
    expect(unknown).not.toContain('expired');
  });

  it('says a code has expired once its minutes have passed (moved clock)', async () => {
    const code = await grant(1);
    advance(61_000);
    const { client } = await connect();
    const expired = await redeem(client, code);
    expect(expired).toContain('expired');
    expect(expired).not.toContain('already used');
    expect(expired).not.toContain('not known');
  });

  it('mints nothing when the grant is denied', async () => {
    const { client } = await connect({ elicit: () => accept({ approve: false }) });
    const text = completedText(
      await client.callTool({ name: 'grant_temporary_access', arguments: { resource: 'db-prod', minutes: 10 } }),
    );
    expect(text).toContain('not approved');
    expect(text).not.toMatch(/code: /);
  });
});
