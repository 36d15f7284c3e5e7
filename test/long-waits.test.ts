/**
 * Long waits end the way the flow says (issue 14, item 5): a state outlives
 * its pending deadline by `DEADLINE_GRACE_SECONDS`, so a person who answers
 * 25 hours later reaches the flow's `expired` branch (not -32602), with and
 * without a ledger; the state still expires once the grace has passed. The
 * cap (`maxTtlSeconds`, default 30 days) is checked when flows are loaded:
 * `createRunner` and `createFlowTester` throw `FlowDefinitionError` naming
 * the flow, the state and both durations, and a delay computed from context
 * fails its round with a `FlowError` instead. The test kit's clock moves
 * across days and its TTL options pass through to the runner.
 */
import {
  ask,
  createRequestStateCodec,
  createRunner,
  DEADLINE_GRACE_SECONDS,
  DEFAULT_MAX_TTL_SECONDS,
  defineFlow,
  defineInputs,
  FlowDefinitionError,
  form,
  generateKey,
  type InputEvents,
  InvalidRequestStateError,
  type RoundOutcome,
  type RunRequest,
} from '@baton/engine';
import { accept, createFlowTester } from '@baton/engine/testing';
import { createMemoryLedger } from '@baton/store';
import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { SIGN_OFF_WINDOW_MS, slowSignOff } from './fixtures/long-waits/index.js';

const HOUR_MS = 3600 * 1000;
const DAY_MS = 24 * HOUR_MS;
const SIGNED = { sign_off: accept({ ok: true }) };

/** A sign-off flow waiting `delay` (ms, or a function of the context's `ms`) before it expires. */
function waitingFlow(name: string, delay: number | ((args: { context: { ms: number } }) => number)) {
  const inputs = defineInputs({
    sign_off: form({ message: 'Sign off?', schema: z.object({ ok: z.boolean() }) }),
  });
  const machine = setup({
    types: {
      context: {} as { ms: number },
      input: {} as { ms?: number },
      events: {} as InputEvents<typeof inputs>,
      output: {} as string,
    },
    delays: { window: delay },
  }).createMachine({
    context: ({ input }) => ({ ms: input.ms ?? 0 }),
    initial: 'waiting',
    states: {
      waiting: { meta: ask(inputs, 'sign_off'), on: { 'input.sign_off': 'signed' }, after: { window: 'expired' } },
      signed: { type: 'final', output: 'signed off' },
      expired: { type: 'final', output: 'expired' },
    },
  });
  return defineFlow({
    name,
    description: 'sign off in time',
    args: z.object({ ms: z.number().optional() }),
    inputs,
    machine,
    result: (out) => out,
  });
}

/** A runner for `slow_sign_off` on a clock the test moves. */
function runnerOnClock(options: { ledger?: boolean } = {}) {
  let time = Date.UTC(2026, 6, 28, 9);
  const now = () => time;
  const runner = createRunner({
    flows: [slowSignOff],
    codec: createRequestStateCodec({ keys: [generateKey()], now }),
    now,
    ...(options.ledger ? { ledger: createMemoryLedger() } : {}),
  });
  const request: RunRequest = {
    flow: 'slow_sign_off',
    args: {},
    context: { principal: 'alice', method: 'tools/call', target: 'slow_sign_off' },
  };
  return { runner, request, advance: (ms: number) => (time += ms) };
}

/** The text of a complete outcome (anything else, as JSON, so a failure shows what came back). */
const textOf = (outcome: RoundOutcome) =>
  outcome.type === 'complete'
    ? outcome.result.content.map((block) => (block.type === 'text' ? String(block.text) : '')).join('\n')
    : JSON.stringify(outcome);

describe('a 25-hour deadline', () => {
  it.each([
    ['without a ledger', false],
    ['with a ledger', true],
  ])('reaches the flow\'s "expired" branch when the person answers 25 h + 1 s later (%s)', async (_, ledger) => {
    const { runner, request, advance } = runnerOnClock({ ledger });
    const first = await runner.run(request);
    expect(first.type).toBe('input_required');
    advance(SIGN_OFF_WINDOW_MS + 1000);
    const late = await runner.run({
      ...request,
      requestState: (first as { requestState: string }).requestState,
      inputResponses: SIGNED,
    });
    expect(textOf(late)).toBe('expired: nobody signed off within 25 hours');
  });

  it('still takes the answer just before the deadline', async () => {
    const { runner, request, advance } = runnerOnClock();
    const first = await runner.run(request);
    advance(SIGN_OFF_WINDOW_MS - 1000);
    const state = (first as { requestState: string }).requestState;
    expect(textOf(await runner.run({ ...request, requestState: state, inputResponses: SIGNED }))).toBe('signed off');
  });

  it(`leaves the state alive for the grace (${DEADLINE_GRACE_SECONDS} s) after the deadline, and no longer`, async () => {
    const { runner, request, advance } = runnerOnClock();
    const first = await runner.run(request);
    const state = (first as { requestState: string }).requestState;
    advance(SIGN_OFF_WINDOW_MS + DEADLINE_GRACE_SECONDS * 1000 - 1000);
    expect(textOf(await runner.run({ ...request, requestState: state, inputResponses: SIGNED }))).toContain('expired');
    advance(2000);
    const stale = runner.run({ ...request, requestState: state, inputResponses: SIGNED });
    await expect(stale).rejects.toBeInstanceOf(InvalidRequestStateError);
    await expect(stale).rejects.toMatchObject({ reason: 'expired' });
  });
});

describe('the cap on a state lifetime, checked when flows are loaded', () => {
  const codec = createRequestStateCodec({ keys: [generateKey()] });

  it('refuses a flow whose deadline plus the grace exceeds maxTtlSeconds, naming flow, state and durations', () => {
    const create = () => createRunner({ flows: [slowSignOff], codec, maxTtlSeconds: 3600 });
    expect(create).toThrow(FlowDefinitionError);
    expect(create).toThrow(
      'flow "slow_sign_off": state "awaitingSignOff" waits up to 1 day 1 hour, longer than the longest state lifetime (--max-ttl 1 hour, maxTtlSeconds 3600); raise --max-ttl to at least 1 day 1 hour 5 minutes (90300 seconds): a state outlives its deadline by 5 minutes',
    );
  });

  it('accepts the flow at exactly its deadline plus the grace, and not a second less', () => {
    const needed = SIGN_OFF_WINDOW_MS / 1000 + DEADLINE_GRACE_SECONDS;
    expect(() => createRunner({ flows: [slowSignOff], codec, maxTtlSeconds: needed })).not.toThrow();
    expect(() => createRunner({ flows: [slowSignOff], codec, maxTtlSeconds: needed - 1 })).toThrow(FlowDefinitionError);
  });

  it('defaults to 30 days: a 29-day wait loads, a 30-day one does not', () => {
    expect(DEFAULT_MAX_TTL_SECONDS).toBe(30 * 86_400);
    expect(() => createRunner({ flows: [waitingFlow('wait_29_days', 29 * DAY_MS)], codec })).not.toThrow();
    expect(() => createRunner({ flows: [waitingFlow('wait_30_days', 30 * DAY_MS)], codec })).toThrow(
      /flow "wait_30_days": state "waiting" waits up to 30 days, .*\(--max-ttl 30 days, maxTtlSeconds 2592000\)/,
    );
  });

  it('finds numeric `after` delays in nested states', () => {
    const machine = setup({}).createMachine({
      initial: 'outer',
      states: {
        outer: { initial: 'inner', states: { inner: { after: { 7200000: '#done' } } } },
        done: { id: 'done', type: 'final' },
      },
    });
    const flow = defineFlow({ name: 'nested_wait', description: 'x', args: z.object({}), inputs: {}, machine });
    expect(() => createRunner({ flows: [flow], codec, maxTtlSeconds: 3600 })).toThrow(
      /flow "nested_wait": state "outer\.inner" waits up to 2 hours/,
    );
  });

  it('checks ttlSeconds against maxTtlSeconds', () => {
    expect(() => createRunner({ flows: [], codec, ttlSeconds: 7200, maxTtlSeconds: 3600 })).toThrow(
      'runner: ttlSeconds 7200 is longer than maxTtlSeconds 3600, the longest a state may live',
    );
    expect(() => createRunner({ flows: [], codec, maxTtlSeconds: 0 })).toThrow(/maxTtlSeconds must be a positive/);
  });

  it('fails the round with a clear sentence when a delay computed from context exceeds the cap', async () => {
    const flow = waitingFlow('computed_wait', ({ context }) => context.ms);
    const tester = createFlowTester(flow, { maxTtlSeconds: 3600 });
    const short = await tester.start({ ms: 30 * 60_000 });
    expect(short.status).toBe('input_required');
    const long = await tester.start({ ms: 2 * HOUR_MS });
    expect(long.status).toBe('error');
    expect(long.text).toBe(
      'The flow "computed_wait" waits 2 hours for a deadline, longer than the longest state lifetime (max TTL 1 hour); nothing was saved. The server needs a longer --max-ttl.',
    );
  });
});

describe('the test kit', () => {
  it('moves the clock across days: a 7-day wait answered on day 6 or expired a minute after day 7', async () => {
    const flow = waitingFlow('week_wait', 7 * DAY_MS);
    const tester = createFlowTester(flow);
    const onTime = await tester.start({});
    for (let day = 1; day <= 6; day++) tester.clock.advance(DAY_MS);
    await onTime.answer(SIGNED);
    expect(onTime.text).toBe('signed off');

    const late = await tester.start({});
    for (let day = 1; day <= 7; day++) tester.clock.advance(DAY_MS);
    tester.clock.advance(60_000); // a minute past the deadline, inside the grace
    await late.answer(SIGNED);
    expect(late.text).toBe('expired');
  });

  it('reaches "expired" 25 hours later with the fixture flow', async () => {
    const tester = createFlowTester(slowSignOff);
    const run = await tester.start({});
    tester.clock.advance(SIGN_OFF_WINDOW_MS + 1000);
    await run.answer(SIGNED);
    expect(run.text).toBe('expired: nobody signed off within 25 hours');
  });

  it('passes maxTtlSeconds through: a deadline over the cap is refused when the tester is created', () => {
    expect(() => createFlowTester(slowSignOff, { maxTtlSeconds: 3600 })).toThrow(FlowDefinitionError);
    expect(() => createFlowTester(slowSignOff, { maxTtlSeconds: 2 * 86_400 })).not.toThrow();
  });

  it('passes ttlSeconds through: a state without a deadline expires after it', async () => {
    const inputs = defineInputs({ ok: form({ message: 'OK?', schema: z.object({ ok: z.boolean() }) }) });
    const machine = setup({ types: { events: {} as InputEvents<typeof inputs> } }).createMachine({
      initial: 'asking',
      states: { asking: { meta: ask(inputs, 'ok'), on: { 'input.ok': 'done' } }, done: { type: 'final' } },
    });
    const flow = defineFlow({ name: 'quick_ok', description: 'x', args: z.object({}), inputs, machine });
    const tester = createFlowTester(flow, { ttlSeconds: 60 });
    const inTime = await tester.start({});
    tester.clock.advance(59_000);
    expect((await inTime.answer({ ok: accept({ ok: true }) })).type).toBe('complete');
    const late = await tester.start({});
    tester.clock.advance(61_000);
    await expect(late.answer({ ok: accept({ ok: true }) })).rejects.toMatchObject({ reason: 'expired' });
  });
});
