/**
 * Tasks end to end (issue 24): two `baton serve` processes sharing BATON_KEYS
 * and one ledger (a SQLite file, then the PostgreSQL the suite starts),
 * principals from bearer tokens, and the official ext-tasks requester
 * (`createTaskSessionFromClient`) on the official SDK client. Alice calls
 * `expense_approval` as a task; bob (manager) decides on the other instance
 * through `baton_decide`; alice's `settle()` ends with the approved result. A
 * task that asks its requester after the decision is answered with
 * `tasks/update` (a refused answer is asked again, with the reason, under a new
 * key); `tasks/cancel` withdraws; a flow with no withdrawal path refuses; bob
 * cannot see, update or cancel alice's task (the same error as an unknown id);
 * every instance is restarted mid-task and the task survives; a task parked
 * on a 3-second timer ends when the scheduler fires it with no client, and
 * the requester follows it to that outcome later; a client without the
 * extension still gets the waiting result and `baton_resume`; an operator's
 * `baton runs cancel` or `terminate` makes the task read `cancelled`; a request that did not
 * declare the extension gets -32021 (HTTP 400) from `tasks/*` and from the required-task tool
 * `report_job`, mismatched routing headers get -32020, and a request that declares it only in
 * its own `_meta` gets a task. Over stdio the
 * server sends `notifications/tasks` as its task moves.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { openLedger } from '@baton/store';
import type { Client } from '@modelcontextprotocol/client';
import { resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { e2eLedgers, ledgerOfItsOwn, scratchDir, tokenOf as token, writeTokens } from './helpers/e2eLedgers.js';
import { cliArgs, connectHttp, ROOT, runCli, type ServeProcess, startServe, textOf } from './helpers/mcpClients.js';
import { type Elicit, postRpc, stdioTaskSession, taskRequest, taskSession } from './helpers/taskClient.js';

const dir = scratchDir('tasks-e2e');
const BATON_KEYS = generateKey();
const tokensFile = writeTokens(dir, {
  alice: { principal: 'alice', roles: [] },
  bob: { principal: 'bob', roles: ['manager'] },
});

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close().catch(() => {})));
});

const ledgers = e2eLedgers(dir);

const waitFor = async <T>(probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> => {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

describe.each(ledgers)('tasks on two instances, one %s ledger', (name, given) => {
  const servers: ServeProcess[] = [];
  // A database of its own: other files' schedulers must not fire this file's timers.
  let ledger = given;
  let drop = async () => {};
  const args = () => [
    'test/fixtures/task-flows',
    '--http',
    '127.0.0.1:0',
    '--ledger',
    ledger!,
    '--auth-tokens',
    tokensFile,
    '--wait-in-call',
    '5',
    '--task-poll',
    '0.3',
  ];

  beforeAll(async () => {
    if (!ledger) return;
    ({ url: ledger, drop } = await ledgerOfItsOwn(name, given!));
    servers.push(...(await Promise.all([startServe(args(), { BATON_KEYS }), startServe(args(), { BATON_KEYS })])));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await drop();
  });

  async function alice(instance: 0 | 1, elicit?: Elicit) {
    const connected = await taskSession(servers[instance]!.url, token('alice'), elicit);
    closers.push(
      () => connected.session.close(),
      () => connected.client.close(),
    );
    return connected;
  }

  /** Bob (manager) decides `id` on `instance` through baton_decide's form. */
  async function bobDecides(instance: 0 | 1, id: string, approve: boolean) {
    const { client } = await connectHttp(servers[instance]!.url, {
      token: token('bob'),
      elicit: () => ({ action: 'accept', content: { approve } }),
    });
    closers.push(() => client.close());
    const decided = await client.callTool({ name: 'baton_decide', arguments: { id } });
    expect(textOf(decided)).toMatch(/^Recorded/);
  }

  /** A raw tasks/* request as `who` on `instance`. */
  const task = (who: string, instance: 0 | 1, method: string, params: Record<string, unknown>) =>
    taskRequest(servers[instance]!.url, token(who))(method, params);

  it.skipIf(!ledger)(
    'expense_approval as a task: bob decides on the other instance, settle() ends approved',
    async () => {
      const { session } = await alice(0);
      const started = Date.now();
      const execution = await session.callTool('expense_approval', { amount: 120, purpose: 'Train to Lyon' });
      // At once, not after the in-call wait (5 s): the task is created as soon as the request is parked.
      expect(Date.now() - started).toBeLessThan(4500);
      expect(execution.kind).toBe('task');
      if (execution.kind !== 'task') return;
      const id = execution.handle.taskId;
      expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);

      const got = await task('alice', 1, 'tasks/get', { taskId: id });
      expect(got).toMatchObject({
        kind: 'result',
        result: {
          resultType: 'complete',
          taskId: id,
          status: 'working',
          statusMessage: expect.stringMatching(
            /^Waiting for a decision by someone with the role manager, until \d{4}-\d\d-\d\d \d\d:\d\d UTC\.$/,
          ),
          pollIntervalMs: 300,
        },
      });
      const shown = (got as unknown as { result: { createdAt: string; ttlMs: number } }).result;
      expect(Date.parse(shown.createdAt)).toBeGreaterThan(started - 5000);
      expect(shown.ttlMs).toBeGreaterThan(29 * 24 * 3600 * 1000);

      // Bob is not alice: her task is unknown to him, exactly as an id that does not exist.
      const unknown = await task('bob', 1, 'tasks/get', { taskId: 'A'.repeat(22) });
      expect(unknown).toEqual({ kind: 'error', error: { code: -32602, message: 'Unknown task' } });
      for (const method of ['tasks/get', 'tasks/cancel'] as const) {
        expect(await task('bob', 0, method, { taskId: id })).toEqual(unknown);
      }
      expect(await task('bob', 1, 'tasks/update', { taskId: id, inputResponses: {} })).toEqual(unknown);

      await bobDecides(1, id, true);
      const { outcome } = await execution.settle();
      const result = resultFromTaskOutcome(outcome) as { content: { type: string; text: string }[] };
      expect(textOf(result)).toContain('approved');
    },
  );

  it.skipIf(!ledger)('an input_required task answered with tasks/update; a refused answer is asked again', async () => {
    const answers = [{ quantity: 99 }, { quantity: 3 }];
    const { session, asked } = await alice(1, () => ({ action: 'accept', content: answers.shift()! }));
    const execution = await session.callTool('confirmed_order', { item: 'chairs' });
    if (execution.kind !== 'task') throw new Error('expected a task');
    await bobDecides(0, execution.handle.taskId, true);
    const { outcome } = await execution.settle();
    expect(textOf(resultFromTaskOutcome(outcome) as { content: [] })).toBe('Placed 3 × chairs.');
    expect(asked).toHaveLength(2);
    expect(asked[0]).toBe('Your order of chairs was approved. Place it?');
    expect(asked[1]).toMatch(/not accepted/);
    // Answers to a question already answered are acknowledged and never delivered twice.
    const again = await task('alice', 0, 'tasks/update', {
      taskId: execution.handle.taskId,
      inputResponses: { 'confirm@1': { action: 'accept', content: { quantity: 5 } } },
    });
    expect(again).toEqual({ kind: 'result', result: expect.objectContaining({ resultType: 'complete' }) });
    const done = await task('alice', 1, 'tasks/get', { taskId: execution.handle.taskId });
    expect(done).toMatchObject({ result: { status: 'completed', result: { resultType: 'complete' } } });
    expect(JSON.stringify(done)).toContain('Placed 3 × chairs.');
  });

  it.skipIf(!ledger)('tasks/cancel withdraws, again is acknowledged; no withdrawal path is refused', async () => {
    const { session } = await alice(0);
    const execution = await session.callTool('expense_approval', { amount: 80, purpose: 'Books' });
    if (execution.kind !== 'task') throw new Error('expected a task');
    await execution.cancel();
    const got = await task('alice', 1, 'tasks/get', { taskId: execution.handle.taskId });
    expect(got).toMatchObject({ result: { status: 'cancelled', statusMessage: expect.stringMatching(/^Withdrawn/) } });
    // A cancel of a task that has ended is acknowledged like the first (idempotent, SEP-2663).
    const twice = await task('alice', 1, 'tasks/cancel', { taskId: execution.handle.taskId });
    expect(twice).toMatchObject({ kind: 'result', result: { resultType: 'complete' } });
    expect(twice).not.toHaveProperty('result.status');

    // The task answer on the wire, as a requester that declared the extension gets it.
    const created = (await task('alice', 0, 'tools/call', { name: 'no_withdraw', arguments: {} })) as unknown as {
      result: Record<string, unknown>;
    };
    expect(created.result).toMatchObject({
      resultType: 'task',
      taskId: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      status: 'working',
      statusMessage: 'Waiting for a decision by someone with the role manager.',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      lastUpdatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      ttlMs: expect.any(Number),
      pollIntervalMs: 300,
    });
    const refused = await task('alice', 0, 'tasks/cancel', { taskId: created.result.taskId });
    expect(refused).toMatchObject({
      kind: 'error',
      error: { code: -32602, message: expect.stringMatching(/no withdrawal path/) },
    });
  });

  it.skipIf(!ledger)(
    "an operator's baton runs cancel or terminate: the task reads cancelled on the other instance",
    async () => {
      const { session } = await alice(0);
      const operator = (...args: string[]) =>
        runCli(['runs', ...args, '--ledger', ledger!, '--as', 'ops', '--reason', 'duplicate'], { BATON_KEYS });
      const withdrawable = await session.callTool('expense_approval', { amount: 45, purpose: 'Lunch' });
      const stuck = await session.callTool('no_withdraw', {});
      if (withdrawable.kind !== 'task' || stuck.kind !== 'task') throw new Error('expected two tasks');
      await Promise.all([withdrawable.detach(), stuck.detach()]);

      const cancelled = await operator('cancel', withdrawable.handle.taskId, 'test/fixtures/task-flows');
      expect(cancelled).toMatchObject({ code: 0, stderr: '' });
      expect(await task('alice', 1, 'tasks/get', { taskId: withdrawable.handle.taskId })).toMatchObject({
        result: { status: 'cancelled', statusMessage: expect.stringMatching(/^Withdrawn/) },
      });
      // A flow with no withdrawal path is refused a cancel, and ended by terminate.
      expect((await operator('cancel', stuck.handle.taskId, 'test/fixtures/task-flows')).code).not.toBe(0);
      expect(await operator('terminate', stuck.handle.taskId)).toMatchObject({ code: 0, stderr: '' });
      expect(await task('alice', 1, 'tasks/get', { taskId: stuck.handle.taskId })).toMatchObject({
        result: { status: 'cancelled', statusMessage: expect.stringMatching(/^Terminated by an operator/) },
      });
    },
  );

  it.skipIf(!ledger)('every instance restarted mid-task: the task survives', async () => {
    const { session } = await alice(0);
    const execution = await session.callTool('expense_approval', { amount: 60, purpose: 'Taxi' });
    if (execution.kind !== 'task') throw new Error('expected a task');
    const id = execution.handle.taskId;
    await execution.detach();
    const urls = servers.map((server) => server.url);
    await Promise.all(servers.map((server) => server.stop()));
    servers.length = 0;
    servers.push(...(await Promise.all([startServe(args(), { BATON_KEYS }), startServe(args(), { BATON_KEYS })])));
    expect(servers.map((server) => server.url.href)).not.toEqual(urls.map((url) => url.href));
    await bobDecides(1, id, false);
    const ended = await waitFor(async () => {
      const got = (await task('alice', 0, 'tasks/get', { taskId: id })) as { result?: { status: string } };
      return got.result?.status === 'completed' ? got : undefined;
    });
    expect(JSON.stringify(ended)).toContain('rejected');
  });

  it.skipIf(!ledger)('baton call --follow: a status line, the decision, the result; Ctrl-C detaches', async () => {
    /** `baton call <tool> --follow` as alice, its stderr watched; `done` resolves with its exit and output. */
    const follow = (tool: string, args: object) => {
      const child = spawn(
        process.execPath,
        cliArgs([
          'call',
          tool,
          '--args',
          JSON.stringify(args),
          '--http',
          servers[0]!.url.href,
          '--token',
          token('alice'),
          '--follow',
        ]),
        { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const out = { stdout: '', stderr: '' };
      child.stdout!.on('data', (chunk: Buffer) => (out.stdout += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (out.stderr += chunk.toString()));
      const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const done = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code))).finally(() =>
        clearTimeout(killer),
      );
      const id = () => waitFor(async () => /-- task ([\w-]{22}): /.exec(out.stderr)?.[1], 40_000);
      return { child, out, done, id };
    };

    const followed = follow('expense_approval', { amount: 40, purpose: 'Coffee' });
    await bobDecides(1, await followed.id(), true);
    expect(await followed.done, followed.out.stderr).toBe(0);
    expect(followed.out.stdout.trim()).toBe('Expense of 40 approved.');
    expect(followed.out.stderr).toMatch(
      /Waiting for a decision by someone with the role manager, until .* \(waited \d+ s\)/,
    );

    const stopped = follow('expense_approval', { amount: 30, purpose: 'Tea' });
    const id = await stopped.id();
    stopped.child.kill('SIGINT');
    expect(await stopped.done).toBe(130);
    expect(stopped.out.stderr).toContain(`stopped following task ${id}; it goes on on the server`);
    expect(stopped.out.stderr).toContain(`call baton_resume --args '{"id":"${id}"}'`);
    // Detached, not cancelled: the task still waits for the manager.
    expect(await task('alice', 1, 'tasks/get', { taskId: id })).toMatchObject({ result: { status: 'working' } });
  });

  it.skipIf(!ledger)(
    'a task parked on a timer: the scheduler fires its deadline with no client, tasks/get reads the outcome',
    async () => {
      const { session } = await alice(1);
      const started = Date.now();
      const execution = await session.callTool('quick_approval', {});
      if (execution.kind !== 'task') throw new Error('expected a task');
      const id = execution.handle.taskId;
      // Nobody follows it while its 3-second deadline passes (a tasks/get past the deadline would
      // play the round itself): the ledger, read directly, shows what the scheduler did alone.
      const reference = execution.serializeReference();
      await execution.detach();
      const reader = await openLedger(ledger!, { pruneIntervalMs: 0 });
      closers.push(() => reader.close());
      const row = await waitFor(async () => {
        const found = await reader.requests.getRequest(id);
        return found && found.status !== 'waiting' ? found : undefined;
      });
      expect(row.status).toBe('completed'); // its own timeout branch: the flow handled it
      expect(row.updatedAt - started).toBeGreaterThanOrEqual(2900);
      // The requester comes back and follows the task to its outcome; any instance reads it.
      const { session: later } = await alice(1);
      const { outcome } = await (await later.resumeTask(reference)).settle();
      expect(textOf(resultFromTaskOutcome(outcome) as { content: [] })).toBe(
        'expired: nobody decided within 3 seconds',
      );
      expect(await task('alice', 0, 'tasks/get', { taskId: id })).toMatchObject({
        kind: 'result',
        result: {
          taskId: id,
          status: 'completed',
          result: {
            resultType: 'complete',
            content: [{ type: 'text', text: 'expired: nobody decided within 3 seconds' }],
          },
        },
      });
    },
  );

  it.skipIf(!ledger)(
    'gating on the extension: -32021 and HTTP 400 without it, per-request opt-in, routing headers, required tasks',
    async () => {
      const url = servers[0]!.url;
      const post = (method: string, params: Record<string, unknown>, options: Parameters<typeof postRpc>[4]) =>
        postRpc(url, token('alice'), method, params, options);
      // Advertised always, exactly `{}` (what the ext-tasks requester switches on).
      const discovered = await post('server/discover', {}, { tasks: false });
      const capabilities = discovered.answer.result!.capabilities as { extensions?: Record<string, unknown> };
      expect(capabilities.extensions?.['io.modelcontextprotocol/tasks']).toEqual({});

      // The extension declared only in this request's `_meta`: a task, at once (the 1.5 s step parks after 500 ms).
      const started = Date.now();
      const created = await post('tools/call', { name: 'report_job', arguments: {} }, { tasks: true });
      expect(Date.now() - started).toBeLessThan(1400);
      expect(created).toMatchObject({ status: 200, answer: { result: { resultType: 'task', status: 'working' } } });
      const taskId = created.answer.result!.taskId as string;

      // Without it, every tasks/* method is refused before anything is read, even for her own task.
      const missing = {
        status: 400,
        answer: {
          error: {
            code: -32021,
            message: expect.stringContaining('io.modelcontextprotocol/tasks'),
            data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
          },
        },
      };
      for (const [method, params] of [
        ['tasks/get', { taskId }],
        ['tasks/update', { taskId, inputResponses: {} }],
        ['tasks/cancel', { taskId }],
      ] as const) {
        expect(await post(method, params, { tasks: false })).toMatchObject(missing);
      }
      // A required-task tool too, before it runs.
      expect(await post('tools/call', { name: 'report_job', arguments: {} }, { tasks: false })).toMatchObject(missing);

      // Routing headers: Mcp-Name must be the task id (-32020, HTTP 400 otherwise); matching is served.
      expect(
        await post('tasks/get', { taskId }, { tasks: true, headers: { 'mcp-name': 'someone-elses-task' } }),
      ).toMatchObject({ status: 400, answer: { error: { code: -32020 } } });
      expect(
        await post('tasks/get', { taskId }, { tasks: true, headers: { 'mcp-method': 'tasks/cancel' } }),
      ).toMatchObject({
        status: 400,
        answer: { error: { code: -32020 } },
      });
      const ended = await waitFor(async () => {
        const got = await post('tasks/get', { taskId }, { tasks: true });
        return got.answer.result?.status === 'completed' ? got : undefined;
      });
      expect(ended.answer.result).toMatchObject({
        taskId,
        result: { resultType: 'complete', content: [{ type: 'text', text: 'Report ready.' }] },
      });
      // Unknown ids stay -32602, in-band.
      expect(await post('tasks/get', { taskId: 'B'.repeat(22) }, { tasks: true })).toMatchObject({
        status: 200,
        answer: { error: { code: -32602, message: 'Unknown task' } },
      });
    },
  );

  it.skipIf(!ledger)('a client without the extension gets the waiting result and baton_resume', async () => {
    const { client } = await connectHttp(servers[0]!.url, { token: token('alice') });
    closers.push(() => (client as Client).close());
    const result = await client.callTool({ name: 'expense_approval', arguments: { amount: 10, purpose: 'Pens' } });
    expect(result.resultType ?? 'complete').toBe('complete');
    expect(result.structuredContent).toMatchObject({ status: 'waiting' });
    const resumed = await client.callTool({
      name: 'baton_resume',
      arguments: { id: (result.structuredContent as { id: string }).id },
    });
    expect(resumed.structuredContent).toMatchObject({ status: 'waiting' });
  });
});

describe('notifications/tasks on stdio', () => {
  it('the server tells its stdio client how its task moved, as the SDK client and the requester receive it', async () => {
    const { client, session, notifications } = await stdioTaskSession(
      [
        'serve',
        'test/fixtures/task-flows',
        '--stdio',
        '--ledger',
        `sqlite:${join(dir, 'stdio.db')}`,
        '--task-poll',
        '0.3',
      ],
      { BATON_KEYS },
      cliArgs,
      ROOT,
    );
    closers.push(
      () => session.close(),
      () => client.close(),
    );
    const execution = await session.callTool('quick_approval', {});
    if (execution.kind !== 'task') throw new Error('expected a task');
    const { outcome } = await execution.settle();
    expect(textOf(resultFromTaskOutcome(outcome) as { content: [] })).toBe('expired: nobody decided within 3 seconds');
    // Polling is the contract; the notification comes too, once the server read the change.
    const sent = await waitFor(async () =>
      notifications.find((n) => n.params?.taskId === execution.handle.taskId && n.params.status === 'completed'),
    );
    expect(sent).toMatchObject({
      jsonrpc: '2.0',
      method: 'notifications/tasks',
      params: {
        status: 'completed',
        result: {
          resultType: 'complete',
          content: [{ type: 'text', text: 'expired: nobody decided within 3 seconds' }],
        },
        createdAt: expect.stringMatching(/^\d{4}-/),
        lastUpdatedAt: expect.stringMatching(/^\d{4}-/),
      },
    });
    // One per change: the task moved once (working to completed).
    expect(notifications.filter((n) => n.params?.taskId === execution.handle.taskId)).toHaveLength(1);
  });
});
