/**
 * Durable steps through the real runner, on the memory ledger and a SQLite
 * file: a step runs once and its recorded result answers every later round
 * (retries, replayed and lost responses); a step slower than the round budget
 * keeps running, the round answers "retry later" (at most 3 per call), then a
 * "working" result that `resume` continues, and another runner on the same
 * ledger picks up the record; a runner that lost a step's lease makes another
 * run it again with the same idempotency key; retry policies (attempts,
 * backoff, FlowError not retried, the final error at onError); without a
 * ledger such flows are refused unless `allowReplays`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryLedger } from '@baton/store';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { z } from 'zod';
import {
  type CallContext,
  createRequestStateCodec,
  createRunner,
  defineFlow,
  defineInputs,
  FlowError,
  type FullLedger,
  generateKey,
  type RoundOutcome,
  type RunnerOptions,
  type StepOptions,
  step,
} from '../src/index.js';
import { accept, createFlowTester } from '../src/testing/index.js';

const keys = [generateKey()];
const codec = createRequestStateCodec({ keys });
const context: CallContext = { principal: 'alice', method: 'tools/call', target: 'refund' };
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Calls {
  keys: string[];
  attempts: number[];
}

/** A refund flow: confirm, then the durable step `issueRefund` (`work` decides what it does). */
function refundFlow(work: (attempt: number) => Promise<string>, calls: Calls, options: StepOptions = {}) {
  const issueRefund = step(
    'issueRefund',
    async ({
      input,
      idempotencyKey,
      attempt,
    }: {
      input: { order: string };
      idempotencyKey: string;
      attempt: number;
    }) => {
      calls.keys.push(idempotencyKey);
      calls.attempts.push(attempt);
      return `${await work(attempt)}:${input.order}`;
    },
    options,
  );
  const catalog = defineInputs({});
  const machine = setup({
    types: {
      input: {} as { order: string },
      context: {} as { order: string; refund?: string; error?: string },
    },
    actors: { issueRefund },
  }).createMachine({
    id: 'refund',
    context: ({ input }) => ({ order: input.order }),
    initial: 'refunding',
    states: {
      refunding: {
        invoke: {
          id: 'refund',
          src: 'issueRefund',
          input: ({ context }) => ({ order: context.order }),
          onDone: { target: 'done', actions: assign({ refund: ({ event }) => event.output }) },
          onError: {
            target: 'failed',
            actions: assign({ error: ({ event }) => (event.error as Error).message }),
          },
        },
      },
      done: { type: 'final', output: ({ context }) => `Refunded ${context.refund}` },
      failed: { type: 'final', output: ({ context }) => `Refund failed: ${context.error}` },
    },
  });
  return defineFlow({
    name: 'refund',
    description: 'Refund an order',
    args: z.object({ order: z.string().max(40) }),
    inputs: catalog,
    machine,
  });
}

function text(outcome: RoundOutcome): string {
  if (outcome.type === 'complete') return outcome.result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
  return outcome.type === 'error' ? outcome.message : '';
}

function runnerFor(
  flow: ReturnType<typeof refundFlow>,
  ledger: FullLedger | undefined,
  extra: Partial<RunnerOptions> = {},
) {
  return createRunner({ flows: [flow], codec, ...(ledger ? { ledger } : {}), pollMs: 10, holdMs: 0, ...extra });
}

const ledgers: [string, () => FullLedger][] = [
  ['memory', () => createMemoryLedger({ pruneIntervalMs: 0 })],
  [
    'sqlite',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'baton-steps-'));
      dirs.push(dir);
      return createSqliteLedger({ path: join(dir, 'ledger.db'), pruneIntervalMs: 0 });
    },
  ],
];

describe.each(ledgers)('durable steps on the %s ledger', (_name, open) => {
  it('a step slower than the round answers retry later, then working, and resume delivers the recorded result once', async () => {
    const ledger = open();
    const calls: Calls = { keys: [], attempts: [] };
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const flow = refundFlow(async () => {
      await gate;
      return 'RF-1';
    }, calls);
    const runner = runnerFor(flow, ledger, { roundBudgetMs: 50 });
    const args = { order: 'A-1' };
    let outcome = await runner.run({ flow: 'refund', args, context });
    const states: string[] = [];
    for (let i = 0; i < 3; i++) {
      expect(outcome).toMatchObject({ type: 'input_required', inputRequests: {} });
      if (outcome.type !== 'input_required') throw new Error('expected retry later');
      states.push(outcome.requestState);
      outcome = await runner.run({ flow: 'refund', args, context, requestState: outcome.requestState });
    }
    expect(outcome.type).toBe('complete');
    if (outcome.type !== 'complete') throw new Error('expected working');
    const id = outcome.fid;
    expect(outcome.result.structuredContent).toEqual({ status: 'working', id, steps: ['issueRefund'] });
    expect(text(outcome)).toContain(`baton_resume {"id":"${id}"}`);
    expect(calls.keys).toHaveLength(1);

    release();
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Another runner (another instance) on the same ledger picks up the recorded result.
    const other = runnerFor(flow, ledger, { roundBudgetMs: 50 });
    const resumed = await other.resume({ id, context: { principal: 'alice' } });
    expect(text(resumed)).toBe('Refunded RF-1:A-1');
    // A lost response: the last retry-later state again, same answers: the recorded answer, nothing runs.
    const replay = await runner.run({ flow: 'refund', args, context, requestState: states[2]! });
    expect(replay).toEqual(outcome);
    // The first retry-later state, redeemed long ago with other rounds after it: also answered from the record.
    expect(await runner.run({ flow: 'refund', args, context, requestState: states[0]! })).toMatchObject({
      type: 'input_required',
    });
    expect(calls.keys).toHaveLength(1);
    expect(calls.keys[0]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await ledger.close();
  });

  it('the instance running a step dies: after the lease, another runs it again with the same key', async () => {
    const ledger = open();
    const calls: Calls = { keys: [], attempts: [] };
    const flow = refundFlow(
      async () => {
        if (calls.keys.length === 1) return new Promise<string>(() => {}); // the first run never ends
        return 'RF-2';
      },
      calls,
      { leaseMs: 300 },
    );
    // The dying instance reaches the ledger until it "dies": then its calls never land (no renewals).
    let dead = false;
    const cutting: ProxyHandler<object> = {
      get: (target, name) => {
        const value = Reflect.get(target, name);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => (dead ? new Promise(() => {}) : value.apply(target, args));
      },
    };
    // Every facet's methods are cut (prune and close too).
    const cut = new Proxy(
      Object.fromEntries(
        Object.entries(ledger).map(([key, facet]) => [
          key,
          typeof facet === 'object' && facet !== null ? new Proxy(facet, cutting) : facet,
        ]),
      ),
      cutting,
    ) as unknown as FullLedger;
    const dying = runnerFor(flow, cut, { roundBudgetMs: 50 });
    const outcome = await dying.run({ flow: 'refund', args: { order: 'B-2' }, context });
    expect(outcome).toMatchObject({ type: 'input_required', inputRequests: {} }); // retry later
    dead = true;
    const survivor = runnerFor(flow, ledger, { roundBudgetMs: 3000 });
    const resumed = await survivor.resume({ id: outcome.fid, context: { principal: 'alice' } });
    expect(text(resumed)).toBe('Refunded RF-2:B-2');
    expect(calls.keys).toHaveLength(2);
    expect(calls.keys[1]).toBe(calls.keys[0]);
    await ledger.close();
  });

  it('retries with backoff, never retries a FlowError, and the final error reaches onError', async () => {
    const ledger = open();
    const calls: Calls = { keys: [], attempts: [] };
    const started: number[] = [];
    const flow = refundFlow(
      async (attempt) => {
        started.push(Date.now());
        if (attempt < 3) throw new Error(`provider down (${attempt})`);
        return 'RF-3';
      },
      calls,
      { retry: { attempts: 3, backoffMs: 40, factor: 2 } },
    );
    const runner = runnerFor(flow, ledger);
    const done = await runner.run({ flow: 'refund', args: { order: 'C-3' }, context });
    expect(text(done)).toBe('Refunded RF-3:C-3');
    expect(calls.attempts).toEqual([1, 2, 3]);
    expect(new Set(calls.keys).size).toBe(1);
    expect(started[1]! - started[0]!).toBeGreaterThanOrEqual(35);
    expect(started[2]! - started[1]!).toBeGreaterThanOrEqual(75);

    const failing: Calls = { keys: [], attempts: [] };
    const alwaysDown = refundFlow(
      async (attempt) => {
        throw new Error(`provider down (${attempt})`);
      },
      failing,
      { retry: { attempts: 2, backoffMs: 1 } },
    );
    const failed = await runnerFor(alwaysDown, ledger).run({ flow: 'refund', args: { order: 'D-4' }, context });
    expect(text(failed)).toBe('Refund failed: provider down (2)');
    expect(failing.attempts).toEqual([1, 2]);

    const refused: Calls = { keys: [], attempts: [] };
    const flowError = refundFlow(
      async () => {
        throw new FlowError('The order was already refunded.');
      },
      refused,
      { retry: { attempts: 5, backoffMs: 1 } },
    );
    const once = await runnerFor(flowError, ledger).run({ flow: 'refund', args: { order: 'E-5' }, context });
    expect(text(once)).toBe('Refund failed: The order was already refunded.');
    expect(refused.attempts).toEqual([1]);
    await ledger.close();
  });
});

describe('durable steps without a ledger', () => {
  it('are refused with a sentence, unless allowReplays (then they run in the round)', async () => {
    const calls: Calls = { keys: [], attempts: [] };
    const flow = refundFlow(async () => 'RF-9', calls);
    expect(flow.needsLedger).toBe(true);
    expect(flow.steps).toEqual(['issueRefund']);
    const refused = await runnerFor(flow, undefined).run({ flow: 'refund', args: { order: 'F-6' }, context });
    expect(refused).toMatchObject({ type: 'error', message: expect.stringContaining('needs a ledger') });
    expect(calls.keys).toHaveLength(0);
    const allowed = await runnerFor(flow, undefined, { allowReplays: true }).run({
      flow: 'refund',
      args: { order: 'F-6' },
      context,
    });
    expect(text(allowed)).toBe('Refunded RF-9:F-6');
  });
});

describe('test kit', () => {
  it('stubs and counts steps', async () => {
    const calls: Calls = { keys: [], attempts: [] };
    const flow = refundFlow(async () => 'real', calls);
    const tester = createFlowTester(flow, { steps: { issueRefund: async () => 'RF-T' } });
    const run = await tester.start({ order: 'G-7' });
    expect(run.text).toBe('Refunded RF-T');
    expect(tester.stepCalls('issueRefund')).toBe(1);
    expect(calls.keys).toHaveLength(0);
    void accept;
  });
});
