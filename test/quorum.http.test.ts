/**
 * A quorum decision over real HTTP (issue 27 items 4 and 6): one `baton serve`
 * on a SQLite file serving the quorum fixture flows with bearer tokens (bob's
 * entry carries a display name) and `--store-principal-names`. Alice requests
 * a spend over MCP with the real SDK client; bob approves through
 * `POST /api/decisions/<id>` (recorded, one more approval needed), his second
 * answer is `409 already_voted` and the decision leaves his inbox; dave's
 * inbox shows one approval of two, by "Bob Builder"; dave approves with
 * `baton_decide` over MCP and the flow ends approved; `baton runs show`
 * names both votes with their channels.
 */
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { scratchDir, tokenOf as token, writeTokens } from './helpers/e2eLedgers.js';
import {
  connectHttp,
  expectInputRequired,
  runCli,
  type ServeProcess,
  startServe,
  textOf,
  toolRound,
} from './helpers/mcpClients.js';

const dir = scratchDir('quorum-http');
const BATON_KEYS = generateKey();
const tokensFile = writeTokens(dir, {
  alice: { principal: 'alice', roles: ['board'] },
  bob: { principal: 'bob', roles: ['board'], name: 'Bob Builder' },
  dave: { principal: 'dave', roles: ['board'] },
});
const ledger = `sqlite:${join(dir, 'ledger.db')}`;

let server: ServeProcess;
const clients: Client[] = [];
beforeAll(async () => {
  server = await startServe(
    [
      'test/fixtures/quorum-flows',
      '--http',
      '127.0.0.1:0',
      '--ledger',
      ledger,
      '--auth-tokens',
      tokensFile,
      '--wait-in-call',
      '0',
      '--store-principal-names',
    ],
    { BATON_KEYS },
  );
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await server?.stop();
});

async function api(path: string, who: string, answer?: unknown) {
  const response = await fetch(new URL(path, server.url), {
    method: answer === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${token(who)}`,
      ...(answer === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(answer === undefined ? {} : { body: JSON.stringify(answer) }),
  });
  const body: any = await response.json();
  return { status: response.status, type: response.headers.get('content-type'), body };
}

it('counts each person once, shows the approvals still needed and advances once', async () => {
  const { client: alice } = await connectHttp(server.url, { token: token('alice') });
  clients.push(alice);
  const waiting = (await alice.callTool({ name: 'board_spend', arguments: { amount: 700 } })).structuredContent as {
    status: string;
    id: string;
  };
  expect(waiting.status).toBe('waiting');
  const { id } = waiting;

  const inbox = await api('/api/decisions', 'bob');
  expect(inbox.body.decisions).toMatchObject([
    { id, key: 'board_approval', quorum: { required: 2, approvals: 0, needed: 2, votes: [] } },
  ]);

  const approve = { action: 'accept', content: { approve: true, comment: 'within budget' } };
  const first = await api(`/api/decisions/${id}`, 'bob', approve);
  expect(first.status).toBe(200);
  expect(first.body).toMatchObject({ status: 'recorded', message: expect.stringMatching(/1 more approval is needed/) });
  const again = await api(`/api/decisions/${id}`, 'bob', approve);
  expect(again.status).toBe(409);
  expect(again.type).toMatch(/^application\/problem\+json/);
  expect(again.body).toMatchObject({ reason: 'already_voted', detail: expect.stringMatching(/already voted/) });
  expect((await api('/api/decisions', 'bob')).body.decisions).toEqual([]);

  const daves = await api('/api/decisions', 'dave');
  expect(daves.body.decisions[0]?.quorum).toEqual({
    required: 2,
    approvals: 1,
    needed: 1,
    votes: [{ decider: 'Bob Builder', approves: true, you: false, decidedAt: expect.any(String) }],
  });

  // Dave approves with baton_decide over MCP: the decision completes and the flow ends.
  const { client: dave } = await connectHttp(server.url, { token: token('dave') });
  clients.push(dave);
  const asked = expectInputRequired(await toolRound(dave, { name: 'baton_decide', arguments: { id } }));
  const decided = await toolRound(dave, {
    name: 'baton_decide',
    arguments: { id },
    requestState: asked.requestState,
    inputResponses: { decision: { action: 'accept', content: { approve: true } } },
  });
  expect(textOf(decided as { content?: unknown })).toMatch(
    /^Recorded board_approval .*Spend of 700 approved \(bob:yes,dave:yes\)\./,
  );

  // The operator's view: the decision by dave through the tool, both votes with their channels.
  const shown = await runCli(['runs', 'show', id, '--ledger', ledger], { BATON_KEYS });
  expect(shown.code).toBe(0);
  expect(shown.stdout).toMatch(/board_approval \[board\]: decided by dave at \S+ via decide\n/);
  expect(shown.stdout).toMatch(/ +vote by Bob Builder at \S+ via decide_api\n +vote by dave at \S+ via decide\n/);
});
