/**
 * Approvals by someone else, end to end at the MCP level: two `baton serve`
 * processes sharing BATON_KEYS and one ledger (a SQLite file, then the
 * PostgreSQL the suite starts), principals from bearer tokens in an
 * `--auth-tokens` file with roles, and the official SDK client. Alice
 * requests `expense_approval`; her call completes with the waiting result
 * (`--wait-in-call 2`); bob (manager) finds it in `baton_inbox` on the other
 * instance and decides through `baton_decide`'s form; alice's `baton_resume`
 * sees the outcome. Also: finance above 1000, four eyes, wrong role, a race of
 * two deciders, 36 withdrawals racing decisions on the two instances (one
 * acknowledged each; the ledger, `baton_requests` and `baton_resume` agree),
 * a client that gave up, withdraw, a decision on an ended flow,
 * bad ids, the webhook receiving both events, the tokens file's validation and
 * `--roles` over stdio. The deadline path, which needs a moved clock, is in
 * examples.e2e.test.ts. Loopback only; every wait is bounded.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { openLedger } from '@baton/store';
import type { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import {
  cliArgs,
  connectHttp,
  expectInputRequired,
  newClient,
  protocolError,
  ROOT,
  runCli,
  type ServeProcess,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhookReceiver.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-decisions-e2e-'));
const BATON_KEYS = generateKey();
const token = (name: string) => `${name}-token-${'x'.repeat(24)}`;
const TOKENS = {
  [token('alice')]: { principal: 'alice', roles: ['manager'] },
  [token('bob')]: { principal: 'bob', roles: ['manager'] },
  [token('erin')]: { principal: 'erin', roles: ['manager'] },
  [token('carol')]: { principal: 'carol', roles: ['finance'] },
  [token('dave')]: 'dave',
};
const tokensFile = join(dir, 'tokens.json');
writeFileSync(tokensFile, JSON.stringify(TOKENS));

let receiver: WebhookReceiver;
let hookUrl = '';
/** What the webhook receiver got, in order (the bodies). */
const hooks = () => receiver.deliveries.map((delivery) => delivery.json);

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  hookUrl = receiver.url;
});

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});
afterAll(async () => {
  await receiver.close();
  rmSync(dir, { recursive: true, force: true });
});

type Verdict = { approve: boolean; comment?: string };
const verdict = (v: Verdict) => () => ({ action: 'accept' as const, content: v });

const waitFor = async (check: () => boolean, ms = 5000) => {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

const pgUrl = inject('batonPgUrl');
const ledgers: [string, string | undefined][] = [
  ['SQLite', `sqlite:${join(dir, 'ledger.db')}`],
  ['PostgreSQL', pgUrl || undefined],
];

describe.each(ledgers)('two instances on one %s ledger', (_name, ledger) => {
  const servers: ServeProcess[] = [];

  beforeAll(async () => {
    if (!ledger) return;
    const common = ['examples/approvals', '--http', '127.0.0.1:0', '--ledger', ledger];
    const flags = ['--auth-tokens', tokensFile, '--wait-in-call', '2'];
    servers.push(
      await startServe([...common, ...flags, '--notify-webhook', hookUrl, '--notify-principals', 'id'], {
        BATON_KEYS,
      }),
    );
    servers.push(await startServe([...common, ...flags], { BATON_KEYS }));
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  async function as(name: string, instance: 0 | 1, decide?: Verdict) {
    const connected = await connectHttp(servers[instance]!.url, {
      token: token(name),
      ...(decide ? { elicit: verdict(decide) } : {}),
    });
    clients.push(connected.client);
    return connected;
  }

  /** Alice requests an expense; her call completes with the waiting result. Returns the request id. */
  async function request(amount: number, purpose: string, instance: 0 | 1 = 0): Promise<string> {
    const { client } = await as('alice', instance);
    const started = Date.now();
    const result = await client.callTool({ name: 'expense_approval', arguments: { amount, purpose } });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(result.isError).toBeFalsy();
    const waiting = result.structuredContent as { status: string; id: string; waitingFor: unknown };
    expect(waiting).toMatchObject({ status: 'waiting', waitingFor: [{ key: 'manager_approval', role: 'manager' }] });
    expect(textOf(result)).toContain(waiting.id);
    return waiting.id;
  }

  const inbox = async (name: string, instance: 0 | 1) => {
    const { client } = await as(name, instance);
    const result = await client.callTool({ name: 'baton_inbox', arguments: {} });
    expect(result.isError).toBeFalsy();
    return { text: textOf(result), decisions: (result.structuredContent as { decisions: any[] }).decisions };
  };

  const decide = async (name: string, instance: 0 | 1, id: string, v: Verdict = { approve: true }) => {
    const { client, log } = await as(name, instance, v);
    const result = await client.callTool({ name: 'baton_decide', arguments: { id } });
    return { result, text: textOf(result), asked: log.asked };
  };

  const resume = async (instance: 0 | 1, id: string, name = 'alice') => {
    const { client } = await as(name, instance);
    return client.callTool({ name: 'baton_resume', arguments: { id } });
  };

  it.skipIf(!ledger)(
    'alice requests, bob decides from his inbox on the other instance, alice sees "approved"',
    async () => {
      const id = await request(250, 'conference');
      const bobs = await inbox('bob', 1);
      const item = bobs.decisions.find((d) => d.id === id);
      expect(item).toMatchObject({ id, key: 'manager_approval', flow: 'expense_approval' });
      expect(item.message).toContain('250');
      expect(new Date(item.requestedAt).toISOString()).toBe(item.requestedAt);
      // The manager's until the escalation to a director, 3 days on.
      expect(new Date(item.deadline).getTime()).toBeGreaterThan(Date.now() + 2.9 * 86_400_000);
      expect(new Date(item.deadline).getTime()).toBeLessThan(Date.now() + 3.1 * 86_400_000);
      expect(bobs.text).toContain(id);
      // Nobody lists their own request, and someone without a role sees nothing.
      expect((await inbox('alice', 1)).decisions.map((d) => d.id)).not.toContain(id);
      expect((await inbox('dave', 0)).decisions).toEqual([]);

      const decided = await decide('bob', 1, id);
      expect(decided.result.isError).toBeFalsy();
      expect(decided.text).toMatch(/^Recorded/);
      expect(decided.asked).toEqual([expect.stringContaining('Approve an expense of 250')]);
      expect((await inbox('erin', 0)).decisions.map((d) => d.id)).not.toContain(id);

      const done = await resume(0, id);
      expect(done.isError).toBeFalsy();
      expect(textOf(done)).toContain('approved');
      const { client } = await as('alice', 1);
      const mine = await client.callTool({ name: 'baton_requests', arguments: {} });
      expect((mine.structuredContent as { requests: any[] }).requests).toContainEqual({
        id,
        flow: 'expense_approval',
        status: 'completed',
      });
    },
  );

  it.skipIf(!ledger)('above 1000 finance is asked next, and may reject', async () => {
    const id = await request(5000, 'servers');
    expect((await inbox('carol', 1)).decisions.map((d) => d.id)).not.toContain(id);
    expect((await decide('bob', 1, id)).text).toMatch(/^Recorded.*finance_approval/s);
    const { client } = await as('alice', 0);
    const mine = await client.callTool({ name: 'baton_requests', arguments: {} });
    expect((mine.structuredContent as { requests: any[] }).requests.find((r) => r.id === id)).toMatchObject({
      status: 'waiting',
      waitingFor: [{ key: 'finance_approval', role: 'finance' }],
    });
    expect((await inbox('carol', 0)).decisions.find((d) => d.id === id)).toMatchObject({ key: 'finance_approval' });
    expect((await decide('carol', 0, id, { approve: false, comment: 'over budget' })).text).toMatch(/^Recorded/);
    expect(textOf(await resume(1, id))).toContain('rejected by finance');
  });

  it.skipIf(!ledger)('refuses four eyes (the requester, a manager) and a wrong role, as tool errors', async () => {
    const id = await request(300, 'four eyes');
    const own = await decide('alice', 1, id);
    expect(own.result.isError).toBe(true);
    expect(own.text).toContain('four eyes');
    expect(own.asked).toEqual([]);
    const wrong = await decide('carol', 0, id);
    expect(wrong.result.isError).toBe(true);
    expect(wrong.text).toContain('needs the role "manager"');
    const nobody = await decide('dave', 1, id);
    expect(nobody.result.isError).toBe(true);
    // Only the requester resumes.
    const foreign = await resume(1, id, 'bob');
    expect(foreign.isError).toBe(true);
    expect(textOf(foreign)).toContain('Only the requester');
    // Still pending for a manager.
    expect((await inbox('bob', 0)).decisions.map((d) => d.id)).toContain(id);
  });

  it.skipIf(!ledger)('records exactly one of two deciders submitting at once', async () => {
    const id = await request(400, 'race');
    const bob = await as('bob', 0);
    const erin = await as('erin', 1);
    const firsts = await Promise.all(
      [bob.client, erin.client].map(async (client) =>
        expectInputRequired(await toolRound(client, { name: 'baton_decide', arguments: { id } })),
      ),
    );
    for (const first of firsts) {
      expect(Object.keys(first.inputRequests ?? {})).toEqual(['decision']);
      expect((first.inputRequests!.decision as { params: { mode: string } }).params.mode).toBe('form');
    }
    const results = await Promise.all(
      [bob.client, erin.client].map((client, i) =>
        toolRound(client, {
          name: 'baton_decide',
          arguments: { id },
          requestState: firsts[i]!.requestState,
          inputResponses: { decision: { action: 'accept', content: { approve: i === 0 } } },
        }),
      ),
    );
    const texts = results.map((r) => textOf(r as { content?: unknown }));
    expect(texts.filter((t) => t.startsWith('Recorded'))).toHaveLength(1);
    const loser = results.find((r) => (r as { isError?: boolean }).isError);
    // Refused at submission, saying the other decider was first.
    expect(textOf(loser as { content?: unknown })).toContain('was made by someone else first; yours was not recorded');
    const outcome = textOf(await resume(0, id));
    expect(outcome).toMatch(texts[0]!.startsWith('Recorded') ? /approved/ : /rejected by manager/);
  });

  it.skipIf(!ledger)('a client that gave up resumes on the other instance and nothing is lost', async () => {
    const { client } = await as('alice', 0);
    const call = { name: 'expense_approval', arguments: { amount: 120, purpose: 'gave up' } };
    // The client gives up while its round is held open waiting for a manager.
    await expect(client.callTool(call, { signal: AbortSignal.timeout(500) })).rejects.toThrow();
    const mine = await (await as('alice', 1)).client.callTool({ name: 'baton_requests', arguments: {} });
    const newest = (mine.structuredContent as { requests: { id: string; flow: string; status: string }[] })
      .requests[0]!;
    expect(newest).toMatchObject({ flow: 'expense_approval', status: 'waiting' });
    const id = newest.id;
    // Still waiting: baton_resume holds, then completes with the waiting result again.
    const still = await resume(1, id);
    expect(still.structuredContent).toMatchObject({ status: 'waiting', id });
    expect((await decide('bob', 0, id)).text).toMatch(/^Recorded/);
    expect(textOf(await resume(1, id))).toContain('approved');
  });

  it.skipIf(!ledger)('withdraw: the requester withdraws, deciders are refused, resume says withdrawn', async () => {
    const id = await request(600, 'withdraw me');
    const foreign = await (await as('bob', 0)).client.callTool({ name: 'baton_withdraw', arguments: { id } });
    expect(foreign.isError).toBe(true);
    expect(textOf(foreign)).toContain('Only the requester');
    const withdrawn = await (await as('alice', 1)).client.callTool({ name: 'baton_withdraw', arguments: { id } });
    expect(withdrawn.isError).toBeFalsy();
    expect(textOf(withdrawn)).toMatch(/^Withdrawn/);
    expect((await inbox('bob', 0)).decisions.map((d) => d.id)).not.toContain(id);
    const late = await decide('bob', 0, id);
    expect(late.result.isError).toBe(true);
    expect(late.text).toContain('withdrawn');
    expect(textOf(await resume(0, id))).toContain('withdrawn');
    const again = await (await as('alice', 0)).client.callTool({ name: 'baton_withdraw', arguments: { id } });
    expect(again.isError).toBe(true);
  });

  it.skipIf(!ledger)(
    '36 withdrawals racing decisions across the instances: exactly one acknowledged each, and all agree',
    async () => {
      const PAIRS = 36;
      // Amounts the manager's decision ends the flow on, so only one of the two can ever take effect.
      // (Above 1000 a withdrawal after the decision withdraws the finance stage: decisions.race.test.ts.)
      const amounts = Array.from({ length: PAIRS }, (_, i) => 100 + i);
      // Alice's requests (on instance 0), all at once: each call completes with the waiting result.
      const ids = await Promise.all(amounts.map((amount) => request(amount, `race ${amount}`)));
      const alice = await as('alice', 0);
      const aliceThere = await as('alice', 1);
      const bob = await as('bob', 1);
      const wins = { withdrawal: 0, decision: 0 };
      // The ledger itself, read on a connection of its own.
      const store = await openLedger(ledger!, { pruneIntervalMs: 0 });
      onTestFinished(() => store.close());
      const pair = async (i: number, id: string) => {
        const amount = amounts[i]!;
        const form = expectInputRequired(await toolRound(bob.client, { name: 'baton_decide', arguments: { id } }));
        // The decision takes longer to reach its write: the withdrawal starts 0 to 5 ms later.
        const withdrawal = new Promise((resolve) => setTimeout(resolve, i % 6)).then(() =>
          alice.client.callTool({ name: 'baton_withdraw', arguments: { id } }),
        );
        const decision = toolRound(bob.client, {
          name: 'baton_decide',
          arguments: { id },
          requestState: form.requestState,
          inputResponses: { decision: { action: 'accept', content: { approve: true } } },
        }) as Promise<{ isError?: boolean; content?: unknown }>;
        const [withdrawn, decided] = await Promise.all([withdrawal, decision]);
        const [w, d] = [textOf(withdrawn), textOf(decided)];
        expect(
          [withdrawn.isError, decided.isError].filter((e) => e !== true),
          `pair ${i}: ${w} | ${d}`,
        ).toHaveLength(1);
        const mine = await alice.client.callTool({ name: 'baton_requests', arguments: {} });
        const listed = (mine.structuredContent as { requests: { id: string; status: string }[] }).requests.find(
          (r) => r.id === id,
        );
        const resumed = textOf(await aliceThere.client.callTool({ name: 'baton_resume', arguments: { id } }));
        const row = await store.requests.getRequest(id);
        const manager = (await store.decisions.listDecisions({ id })).find((r) => r.key === 'manager_approval');
        if (!withdrawn.isError) {
          wins.withdrawal++;
          expect(w).toMatch(/^Withdrawn: request /);
          expect(d).toMatch(/^Not recorded: request \S+ was withdrawn first, by its requester\./);
          expect([row?.status, manager?.status, listed?.status]).toEqual(['withdrawn', 'closed', 'withdrawn']);
          expect(resumed).toBe(`Expense of ${amount} withdrawn by the requester.`);
        } else {
          wins.decision++;
          expect(d).toMatch(/^Recorded manager_approval on request /);
          expect(w).toMatch(
            new RegExp(
              `^Not withdrawn: request \\S+ (was decided first and )?has ended: Expense of ${amount} approved\\.`,
            ),
          );
          expect([row?.status, manager?.status, listed?.status]).toEqual(['completed', 'decided', 'completed']);
          expect(resumed).toBe(`Expense of ${amount} approved.`);
        }
      };
      // Six pairs at a time, each on its own request.
      for (let i = 0; i < PAIRS; i += 6) {
        await Promise.all(ids.slice(i, i + 6).map((id, j) => pair(i + j, id)));
      }
      console.info(`[race e2e] ${PAIRS} pairs: withdrawal won ${wins.withdrawal}, decision won ${wins.decision}`);
    },
  );

  it.skipIf(!ledger)('refuses a decision on a flow that has ended, and bad ids, as tool errors', async () => {
    const id = await request(90, 'ended');
    expect((await decide('bob', 1, id, { approve: false })).text).toMatch(/^Recorded/);
    expect(textOf(await resume(0, id))).toContain('rejected by manager');
    const ended = await decide('erin', 0, id);
    expect(ended.result.isError).toBe(true);
    expect(ended.text).toContain('has ended');

    for (const bad of ['nope', 'A'.repeat(22), '../../etc', '']) {
      const refused = await decide('bob', 0, bad);
      expect(refused.result.isError, bad).toBe(true);
      expect(refused.text).toMatch(/There is no request/);
      const resumed = await resume(1, bad);
      expect(resumed.isError).toBe(true);
      expect(textOf(resumed)).toMatch(/There is no request/);
    }
    // A missing id: the SDK's input validation says so in a sentence (a tool error, not "Internal error").
    const { client } = await as('bob', 0);
    const missing = await client.callTool({ name: 'baton_decide', arguments: {} });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/id: .*expected string/);
    // A forged state for baton_decide is the reserved -32602.
    const forged = await protocolError(
      toolRound(client, {
        name: 'baton_decide',
        arguments: { id },
        requestState: 'not-a-state',
        inputResponses: { decision: { action: 'accept', content: { approve: true } } },
      }),
    );
    expect(forged).toMatchObject({ code: -32602, message: 'Invalid or expired requestState' });
  });

  it.skipIf(!ledger)('lists the decision tools with schemas and read-only hints', async () => {
    const { client } = await as('dave', 0);
    const tools = (await client.listTools()).tools;
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    for (const name of ['baton_inbox', 'baton_decide', 'baton_requests', 'baton_resume', 'baton_withdraw']) {
      expect(byName.get(name)?.description, name).toBeTruthy();
    }
    expect(byName.get('baton_inbox')!.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('baton_requests')!.annotations?.readOnlyHint).toBe(true);
    expect(byName.get('baton_decide')!.inputSchema.required).toEqual(['id']);
  });

  it.skipIf(!ledger)('POSTs both decision events to the webhook from the outbox, with ids as configured', async () => {
    const id = await request(700, 'webhook');
    const of = (type: string) => (h: Record<string, any>) => h.data?.requestId === id && h.type === type;
    await waitFor(() => hooks().some(of('decision.requested')));
    expect((await decide('bob', 0, id)).text).toMatch(/^Recorded/);
    await waitFor(() => hooks().some(of('decision.made')));
    const requested = hooks().find(of('decision.requested')) as Record<string, any>;
    expect(requested.data).toMatchObject({
      requestId: id,
      key: 'manager_approval',
      flow: 'expense_approval',
      role: 'manager',
      requester: 'alice',
    });
    expect(new Date(requested.timestamp).toISOString()).toBe(requested.timestamp);
    expect(new Date(requested.data.deadline).toISOString()).toBe(requested.data.deadline);
    expect((hooks().find(of('decision.made')) as Record<string, any>).data).toMatchObject({
      key: 'manager_approval',
      decider: 'bob',
    });
  });

  it.skipIf(!ledger)('--roles over stdio: the local user decides with the given role', async () => {
    const id = await request(80, 'stdio');
    const { client, log } = newClient({ elicit: verdict({ approve: true }) });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: cliArgs(['serve', 'examples/approvals', '--stdio', '--ledger', ledger!, '--roles', 'manager']),
      cwd: ROOT,
      env: { ...(process.env as Record<string, string>), BATON_KEYS },
      stderr: 'ignore',
    });
    clients.push(client);
    await client.connect(transport, { timeout: 30_000 });
    const listed = await client.callTool({ name: 'baton_inbox', arguments: {} });
    expect((listed.structuredContent as { decisions: { id: string }[] }).decisions.map((d) => d.id)).toContain(id);
    const decided = await client.callTool({ name: 'baton_decide', arguments: { id } });
    expect(textOf(decided)).toMatch(/^Recorded/);
    expect(log.asked).toHaveLength(1);
    expect(textOf(await resume(1, id))).toContain('approved');
    // The OS user is the principal: it is not alice.
    expect(userInfo().username).not.toBe('alice');
  });
});

describe('the auth tokens file and the flags', () => {
  const serve = (args: string[]) =>
    runCli(['serve', 'examples/approvals', ...args, '--ledger', 'memory:'], { BATON_KEYS });

  it('refuses a malformed entry in one line naming the file and the principal, never the token', async () => {
    const cases: [unknown, RegExp][] = [
      [{ principal: 'bob', roles: 'manager' }, /principal "bob" is malformed/],
      [{ principal: '', roles: ['manager'] }, /an entry is malformed/],
      [{ principal: 'bob', roles: ['manager', ''] }, /principal "bob" is malformed/],
      [{ principal: 'bob', role: ['manager'] }, /principal "bob" is malformed/],
      [42, /an entry is malformed/],
    ];
    for (const [entry, message] of cases) {
      const file = join(dir, `bad-${Math.random().toString(36).slice(2)}.json`);
      const secret = `secret-${'s'.repeat(20)}`;
      writeFileSync(file, JSON.stringify({ [secret]: entry }));
      const { code, stderr } = await serve(['--http', '127.0.0.1:0', '--auth-tokens', file]);
      expect(code, JSON.stringify(entry)).not.toBe(0);
      expect(stderr).toMatch(message);
      expect(stderr).toContain(file);
      expect(stderr).not.toContain(secret);
      expect(stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('refuses --roles with --http, bad roles, and a bad --wait-in-call or --notify-webhook, in one line', async () => {
    const cases: [string[], RegExp][] = [
      [['--http', '127.0.0.1:0', '--roles', 'manager'], /--roles applies to --stdio only/],
      [['--stdio', '--roles', 'manager,,x'], /--roles expects comma-separated role names/],
      [
        ['--http', '127.0.0.1:0', '--wait-in-call', '601'],
        /--wait-in-call expects a whole number of seconds from 0 to 600/,
      ],
      [['--http', '127.0.0.1:0', '--wait-in-call', '2.5'], /--wait-in-call expects/],
      [['--http', '127.0.0.1:0', '--notify-webhook', 'ftp://x'], /--notify-webhook expects an http: or https: URL/],
      [['--http', '127.0.0.1:0', '--notify-principals', 'names'], /--notify-principals expects hash or id/],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await serve(args);
      expect(code, args.join(' ')).toBe(2);
      expect(stderr).toMatch(message);
    }
  });
});
