/**
 * `subscriptions/listen` for tasks over HTTP (SEP-2575 with SEP-2663's
 * `taskIds`): two `baton serve` processes on one SQLite ledger, principals
 * from bearer tokens. Alice's `expense_approval` call on instance A is
 * answered with a task; she listens for it on instance B; bob (manager)
 * decides on instance A, and alice's stream on B carries the task's
 * `notifications/tasks` from `working` to `completed`, each stamped with the
 * subscription id, then ends. Bob listening for alice's task gets an empty
 * acknowledgement and nothing of hers; a listener that did not declare the
 * tasks extension gets -32021 with HTTP 400, and so does bob's `baton_decide`
 * from a client that declared no form elicitation.
 */
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir, tokenOf as token, writeTokens } from './helpers/e2eLedgers.js';
import { connectHttp, type ServeProcess, startServe, textOf } from './helpers/mcpClients.js';

const PROTOCOL = '2026-07-28';
const TASKS = 'io.modelcontextprotocol/tasks';
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const dir = scratchDir('subscriptions-e2e');
const BATON_KEYS = generateKey();
const tokensFile = writeTokens(dir, {
  alice: { principal: 'alice', roles: [] },
  bob: { principal: 'bob', roles: ['manager'] },
});
const servers: ServeProcess[] = [];

beforeAll(async () => {
  const args = [
    'test/fixtures/task-flows',
    '--http',
    '127.0.0.1:0',
    '--ledger',
    `sqlite:${join(dir, 'ledger.db')}`,
    '--auth-tokens',
    tokensFile,
    '--wait-in-call',
    '1',
    '--task-poll',
    '0.3',
  ];
  servers.push(...(await Promise.all([startServe(args, { BATON_KEYS }), startServe(args, { BATON_KEYS })])));
}, 120_000);
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
});

const envelope = (capabilities: Record<string, unknown>) => ({
  'io.modelcontextprotocol/protocolVersion': PROTOCOL,
  'io.modelcontextprotocol/clientCapabilities': capabilities,
});

/** POST one JSON-RPC request to `instance` as `who`. */
function post(instance: 0 | 1, who: string, id: number, method: string, params: Record<string, unknown>) {
  const name: Record<string, string> = typeof params.name === 'string' ? { 'mcp-name': params.name } : {};
  return fetch(servers[instance]!.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token(who)}`,
      'mcp-protocol-version': PROTOCOL,
      'mcp-method': method,
      ...name,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
  });
}

/** The JSON-RPC messages of an SSE (or JSON) body, read to its end. */
async function messages(response: Response): Promise<any[]> {
  const text = await response.text();
  if (text.startsWith('{')) return [JSON.parse(text)];
  return [...text.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]!));
}

/** Alice calls `expense_approval` on `instance` as a tasks client: the task's id. */
async function aliceStartsTask(instance: 0 | 1): Promise<string> {
  const response = await post(instance, 'alice', 1, 'tools/call', {
    name: 'expense_approval',
    arguments: { amount: 80, purpose: 'Taxi' },
    _meta: envelope({ elicitation: { form: {} }, extensions: { [TASKS]: {} } }),
  });
  const [answer] = await messages(response);
  expect(answer.result).toMatchObject({ resultType: 'task', status: 'working' });
  return answer.result.taskId as string;
}

const listen = (instance: 0 | 1, who: string, taskIds: string[], capabilities: Record<string, unknown>) =>
  post(instance, who, 42, 'subscriptions/listen', { notifications: { taskIds }, _meta: envelope(capabilities) });

describe('subscriptions/listen for tasks on two instances, one SQLite ledger', () => {
  it('a listener on B follows its own task, moved by a decision on A, and never sees another principal’s', async () => {
    const id = await aliceStartsTask(0);

    // Bob names alice's task: acknowledged without it, and the stream ends there.
    const bobs = await messages(await listen(1, 'bob', [id], { extensions: { [TASKS]: {} } }));
    expect(bobs[0]).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [] }, _meta: { [SUBSCRIPTION_ID]: 42 } },
    });
    expect(bobs.filter((message) => message.method === 'notifications/tasks')).toEqual([]);

    // Alice listens on B; bob decides on A once her stream is acknowledged.
    const stream = await listen(1, 'alice', [id, 'A'.repeat(22)], { extensions: { [TASKS]: {} } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const reading = messages(stream);
    const { client } = await connectHttp(servers[0]!.url, {
      token: token('bob'),
      elicit: () => ({ action: 'accept', content: { approve: true } }),
    });
    expect(textOf(await client.callTool({ name: 'baton_decide', arguments: { id } }))).toMatch(/^Recorded/);
    await client.close();

    const received = await reading;
    expect(received[0]).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [id] }, _meta: { [SUBSCRIPTION_ID]: 42 } },
    });
    const notes = received.filter((message) => message.method === 'notifications/tasks');
    expect(notes[0].params).toMatchObject({ taskId: id, status: 'working', _meta: { [SUBSCRIPTION_ID]: 42 } });
    expect(notes.at(-1).params).toMatchObject({
      taskId: id,
      status: 'completed',
      result: { resultType: 'complete' },
      _meta: { [SUBSCRIPTION_ID]: 42 },
    });
    expect(notes.every((note) => note.params.taskId === id)).toBe(true);
    // Once every followed task ended, the listen request is answered and the stream closes.
    expect(received.at(-1)).toMatchObject({ id: 42, result: { resultType: 'complete' } });

    // Listening for a task that already ended: its final state at once, then the end (on either instance).
    const late = await messages(await listen(0, 'alice', [id], { extensions: { [TASKS]: {} } }));
    expect(late.map((message) => message.method ?? 'result')).toEqual([
      'notifications/subscriptions/acknowledged',
      'notifications/tasks',
      'result',
    ]);
    expect(late[1].params).toMatchObject({ taskId: id, status: 'completed' });
  }, 60_000);

  it('refuses baton_decide from a client that declared no form elicitation: -32021 with HTTP 400', async () => {
    const id = await aliceStartsTask(1);
    const response = await post(0, 'bob', 5, 'tools/call', {
      name: 'baton_decide',
      arguments: { id },
      _meta: envelope({}),
    });
    expect(response.status).toBe(400);
    const [answer] = await messages(response);
    expect(answer).toMatchObject({
      id: 5,
      error: { code: -32021, data: { requiredCapabilities: { elicitation: { form: {} } } } },
    });
  });

  it('refuses a listener that did not declare the tasks extension: -32021 with HTTP 400', async () => {
    const response = await listen(1, 'alice', ['A'.repeat(22)], {});
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      id: 42,
      error: { code: -32021, data: { requiredCapabilities: { extensions: { [TASKS]: {} } } } },
    });
  });
});
