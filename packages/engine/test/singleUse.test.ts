/**
 * The single-use protocol (`round/singleUse.ts`) on every ledger driver:
 * memory, a real SQLite file and a real PostgreSQL database (started by the
 * global setup). Real runners, real durable steps held on a gate the test
 * opens, real decisions. For flow rounds, `baton_decide` and `baton_resume`:
 * duplicates of a round still running (the same state and answers) are held
 * and answered with the recorded outcome; a duplicate whose round outlives the
 * hold gets the retryable `RoundInProgressError`, and its retry the recorded
 * outcome; a redemption whose round was abandoned (no outcome, redeemed longer
 * ago than any round can run) and a state presented with other answers are
 * `replayed`; a ledger outage releases the redemption. Bounds are generous:
 * the machine is loaded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { z } from 'zod';
import {
  ask,
  type CallContext,
  createRequestStateCodec,
  createRunner,
  type DecisionCaller,
  decision,
  defineFlow,
  defineInputs,
  type FullLedger,
  form,
  generateKey,
  type InputEvents,
  type InputRequiredOutcome,
  InvalidRequestStateError,
  LedgerUnavailableError,
  RoundInProgressError,
  type RoundOutcome,
  type Runner,
  type RunnerOptions,
  step,
} from '../src/index.js';
import { everyLedger } from './fixtures/everyLedger.js';

const keys = [generateKey()];
/** The runners' clock: real time plus what a test skips ahead. */
let skipped = 0;
const now = () => Date.now() + skipped;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A gate the steps wait on; `open()` lets every waiting step finish. */
function gate() {
  let open!: () => void;
  const shut = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { shut, open };
}
let current = gate();
let runs = 0;

const charge = step('charge', async ({ input }: { input: { order: string } }) => {
  runs++;
  await current.shut;
  return `CH-${input.order}`;
});

const confirmInputs = defineInputs({
  confirm: form({ message: 'Charge?', schema: z.object({ ok: z.boolean(), note: z.string().optional() }) }),
});
/** Confirm, then the durable step `charge`. */
const chargeFlow = defineFlow({
  name: 'charge_order',
  description: 'Charge once after a confirmation',
  args: z.object({ order: z.string() }),
  inputs: confirmInputs,
  machine: setup({
    types: {
      input: {} as { order: string },
      context: {} as { order: string; charge?: string },
      events: {} as InputEvents<typeof confirmInputs>,
    },
    actors: { charge },
  }).createMachine({
    id: 'charge_order',
    context: ({ input }) => ({ order: input.order }),
    initial: 'confirming',
    states: {
      confirming: { meta: ask(confirmInputs, 'confirm'), on: { 'input.confirm': 'charging' } },
      charging: {
        invoke: {
          src: 'charge',
          input: ({ context }) => ({ order: context.order }),
          onDone: { target: 'done', actions: assign({ charge: ({ event }) => event.output }) },
        },
      },
      done: { type: 'final', output: ({ context }) => `Charged ${context.charge}` },
    },
  }),
});

const approvalInputs = defineInputs({
  approval: decision({ message: 'Approve the order?', schema: z.object({ ok: z.boolean() }), role: 'manager' }),
});
/** A manager's decision, then the durable step `charge`. */
const approvedFlow = defineFlow({
  name: 'approved_order',
  description: 'Charge once a manager approved',
  args: z.object({ order: z.string() }),
  inputs: approvalInputs,
  machine: setup({
    types: {
      input: {} as { order: string },
      context: {} as { order: string; charge?: string },
      events: {} as InputEvents<typeof approvalInputs>,
    },
    actors: { charge },
  }).createMachine({
    id: 'approved_order',
    context: ({ input }) => ({ order: input.order }),
    initial: 'waiting',
    states: {
      waiting: { meta: ask(approvalInputs, 'approval'), on: { 'input.approval': 'charging' } },
      charging: {
        invoke: {
          src: 'charge',
          input: ({ context }) => ({ order: context.order }),
          onDone: { target: 'done', actions: assign({ charge: ({ event }) => event.output }) },
        },
      },
      done: { type: 'final', output: ({ context }) => `Charged ${context.charge}` },
    },
  }),
});

const alice = (target: string): CallContext => ({ principal: 'alice', method: 'tools/call', target });
const bob: DecisionCaller = { principal: 'bob', roles: ['manager'] };
const CONFIRM = { confirm: { action: 'accept', content: { ok: true } } };

function expectInput(outcome: RoundOutcome): InputRequiredOutcome {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(outcome)}`);
  return outcome;
}
/** A new `charge_order` instance for `order` on `runner`, confirmed: the round that runs its step (send it again to retry). */
async function confirmedRound(runner: Runner, order: string) {
  const args = { order };
  const first = expectInput(await runner.run({ flow: 'charge_order', args, context: alice('charge_order') }));
  return {
    flow: 'charge_order',
    args,
    context: alice('charge_order'),
    requestState: first.requestState,
    inputResponses: CONFIRM,
  };
}
const text = (outcome: RoundOutcome) =>
  outcome.type === 'complete'
    ? outcome.result.content.map((c) => (c as { text: string }).text).join('')
    : JSON.stringify(outcome);
/** What a call came to: its outcome, or the error's class and reason. */
async function settled(call: Promise<RoundOutcome>): Promise<RoundOutcome | { error: string }> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof InvalidRequestStateError) return { error: error.reason };
    if (error instanceof RoundInProgressError) return { error: 'in_progress' };
    throw error;
  }
}

const { ledgers: LEDGERS, closeLedgers } = everyLedger('single-use');
afterAll(closeLedgers);

describe.each(LEDGERS)('the single-use protocol on the %s ledger', (_name, open) => {
  let ledger: FullLedger;
  beforeAll(async () => {
    ledger = await open();
  });

  const runnerWith = (extra: Partial<RunnerOptions> = {}) =>
    createRunner({
      flows: [chargeFlow, approvedFlow],
      codec: createRequestStateCodec({ keys, now }),
      now,
      ledger,
      roundBudgetMs: 3000,
      holdMs: 100,
      pollMs: 10,
      ...extra,
    });

  it('flow round: duplicates of a round still running are held and answered with its outcome; the step runs once', async () => {
    // Two runners on one ledger: two instances of a server.
    const [a, b] = [runnerWith(), runnerWith()];
    current = gate();
    runs = 0;
    const round = await confirmedRound(a, 'o-1');
    const storm = Array.from({ length: 8 }, (_, i) => settled((i % 2 ? b : a).run(round)));
    await sleep(400);
    current.open();
    const answers = await Promise.all(storm);
    for (const answer of answers) expect(text(answer as RoundOutcome)).toBe('Charged CH-o-1');
    expect(runs).toBe(1);
    // A later retry gets the recorded outcome; other answers to the same state are a replay.
    expect(text(await b.run(round))).toBe('Charged CH-o-1');
    const other = { ...round, inputResponses: { confirm: { action: 'accept', content: { ok: true, note: 'x' } } } };
    await expect(a.run(other)).rejects.toMatchObject({ name: 'InvalidRequestStateError', reason: 'replayed' });
    expect(runs).toBe(1);
  });

  it('flow round: a duplicate with other answers while the round runs is replayed at once', async () => {
    const runner = runnerWith();
    current = gate();
    const round = await confirmedRound(runner, 'o-2');
    const running = runner.run(round);
    await sleep(100);
    const other = { ...round, inputResponses: { confirm: { action: 'accept', content: { ok: false } } } };
    await expect(runner.run(other)).rejects.toMatchObject({ reason: 'replayed' });
    current.open();
    expect(text(await running)).toBe('Charged CH-o-2');
  });

  it('flow round: past the hold a duplicate is in_progress (retryable); abandoned, it is replayed', async () => {
    // The first round's process "crashes" after redeeming: its outcome is never recorded.
    const crashing: FullLedger = { ...ledger, redemptions: { ...ledger.redemptions, recordOutcome: async () => {} } };
    const dying = runnerWith({ ledger: crashing, roundBudgetMs: 50 });
    const runner = runnerWith({ roundBudgetMs: 50 });
    current = gate();
    current.open();
    const round = await confirmedRound(runner, 'o-3');
    expect(text(await dying.run(round))).toBe('Charged CH-o-3');
    const started = performance.now();
    const held = await runner.run(round).catch((error: unknown) => error);
    expect(held).toBeInstanceOf(RoundInProgressError);
    expect(held).toMatchObject({ reason: 'in_progress', retryAfterMs: 1000 });
    expect((held as Error).message).toMatch(/still in progress.*retry/);
    // Held for the round budget plus a second (50 + 1000 ms), not longer than a few seconds.
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    expect(performance.now() - started).toBeLessThan(10_000);
    // Longer ago than any round can run (8 plays of the budget, the decision hold, 5 s of clock skew): abandoned.
    skipped += 8 * 50 + 100 + 5000 + 1000;
    await expect(runner.run(round)).rejects.toMatchObject({ name: 'InvalidRequestStateError', reason: 'replayed' });
  });

  it('flow round: a ledger outage releases the redemption, so the same state runs again', async () => {
    let failing = true;
    const flaky: FullLedger = {
      ...ledger,
      steps: {
        ...ledger.steps,
        claimStep: (...args) =>
          failing ? Promise.reject(new LedgerUnavailableError('down')) : ledger.steps.claimStep(...args),
      },
    };
    const runner = runnerWith({ ledger: flaky });
    current = gate();
    current.open();
    const round = await confirmedRound(runner, 'o-4');
    await expect(runner.run(round)).rejects.toBeInstanceOf(LedgerUnavailableError);
    failing = false;
    expect(text(await runner.run(round))).toBe('Charged CH-o-4');
  });

  it('baton_decide: duplicates of a decide round still running get its outcome; the decision is recorded once', async () => {
    const [a, b] = [runnerWith(), runnerWith()];
    current = gate();
    runs = 0;
    const args = { order: 'd-1' };
    const parked = await a.run({ flow: 'approved_order', args, context: alice('approved_order') });
    const id = parked.fid;
    const asked = expectInput(await b.decide({ id, context: bob }));
    const answer = {
      id,
      context: bob,
      requestState: asked.requestState,
      inputResponses: { decision: { action: 'accept', content: { ok: true } } },
    };
    const storm = Array.from({ length: 6 }, (_, i) => settled((i % 2 ? b : a).decide(answer)));
    await sleep(400);
    current.open();
    const answers = await Promise.all(storm);
    for (const outcome of answers) expect(text(outcome as RoundOutcome)).toMatch(/^Recorded approval on request/);
    expect((await ledger.decisions.listDecisions({ id })).filter((d) => d.status === 'decided')).toHaveLength(1);
    expect(runs).toBe(1);
    // Finished, and presented with another answer: replayed.
    const other = { ...answer, inputResponses: { decision: { action: 'accept', content: { ok: false } } } };
    await expect(a.decide(other)).rejects.toMatchObject({ reason: 'replayed' });
  });

  it('baton_resume: a duplicate of a resume round still holding is answered with its outcome, or in_progress past the hold', async () => {
    // The decision hold (1.5 s) is longer than a duplicate's hold (budget 50 + 1000 ms).
    const runner = runnerWith({ roundBudgetMs: 50, holdMs: 1500 });
    const args = { order: 'r-1' };
    const parked = await runner.run({ flow: 'approved_order', args, context: alice('approved_order') });
    const id = parked.fid;
    const resumed = expectInput(await runner.resume({ id, context: alice('baton_resume') }));
    const again = { id, context: alice('baton_resume'), requestState: resumed.requestState };
    const [one, two] = await Promise.all([
      settled(runner.resume(again)),
      sleep(50).then(() => settled(runner.resume(again))),
    ]);
    expect(one).toMatchObject({ type: 'input_required' });
    expect(two).toEqual({ error: 'in_progress' });
    // The retry, once the round finished, is its recorded outcome (the very same next state).
    expect(await runner.resume(again)).toEqual(one);
    // A shorter decision hold: the duplicate is held until the first round answers, and gets that.
    const quick = runnerWith({ roundBudgetMs: 50, holdMs: 300 });
    const next = expectInput(await quick.resume({ id, context: alice('baton_resume') }));
    const retry = { id, context: alice('baton_resume'), requestState: next.requestState };
    const [x, y] = await Promise.all([quick.resume(retry), sleep(50).then(() => quick.resume(retry))]);
    expect(y).toEqual(x);
  });
});
