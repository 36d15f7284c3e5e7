/**
 * Deferred redemption (`round/singleUse.ts`, `round/purity.ts`) on every
 * ledger driver: memory, a real SQLite file and a real PostgreSQL database.
 * A round that can have no side effect of its own plays first and is redeemed
 * with its outcome in ONE ledger write; the single-use promises hold all the
 * same: duplicates racing over two runners on one ledger all get the one
 * recorded outcome, a state presented with other answers is replayed, a
 * retry is answered from the record, and an outage at the write uses nothing
 * up. A round that reaches for the ledger (an outbox notification) redeems at
 * that call; a round that can run an effect (an invoked promise) or one an
 * inspector watches redeems first; either way the effect happens once. The
 * ledger is the real driver, wrapped only to count its calls.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { assign, fromPromise, setup } from 'xstate';
import { z } from 'zod';
import { deployProduction } from '../../../examples/approvals/deployProduction.js';
import {
  ask,
  type CallContext,
  createRequestStateCodec,
  createRunner,
  defineFlow,
  defineInputs,
  type FullLedger,
  form,
  generateKey,
  type InputEvents,
  type InputRequiredOutcome,
  LedgerUnavailableError,
  notify,
  type RoundOutcome,
  type RunnerOptions,
} from '../src/index.js';
import { isPureFrom } from '../src/round/purity.js';
import { everyLedger } from './fixtures/everyLedger.js';

const keys = [generateKey()];
const inputs = defineInputs({
  confirm: form({ message: 'Go?', schema: z.object({ ok: z.boolean(), note: z.string().optional() }) }),
});
type Context = { nonce: number };
const types = { context: {} as Context, events: {} as InputEvents<typeof inputs> };
/** The answer's round draws a nonce (`assign({ nonce })`): answers that agree came from one recorded outcome. */
const output = ({ context }: { context: Context }) => `done ${context.nonce}`;

/**
 * Pure: ask, then a final state (the answer draws the nonce). `announce`: the answer also
 * announces a notification, still pure, but its outbox write comes first.
 */
const askOnce = (name: string, announce: boolean) =>
  defineFlow({
    name,
    description: announce ? 'Asks once and announces the answer' : 'Asks once',
    args: z.object({}),
    inputs,
    machine: setup({ types }).createMachine({
      context: { nonce: 0 },
      initial: 'asking',
      states: {
        asking: {
          meta: ask(inputs, 'confirm'),
          on: {
            'input.confirm': {
              target: 'done',
              actions: [assign({ nonce: () => Math.random() }), ...(announce ? [notify({ kind: 'answered' })] : [])],
            },
          },
        },
        done: { type: 'final', output },
      },
    }),
  });
const plain = askOnce('plain', false);
const announcing = askOnce('announcing', true);

let effects = 0;
/** Its answer invokes a promise (an effect): redeemed first. */
const effectful = defineFlow({
  name: 'effectful',
  description: 'Asks once, then runs an effect',
  args: z.object({}),
  inputs,
  machine: setup({
    types,
    actors: {
      work: fromPromise(async () => {
        effects++;
        await new Promise((resolve) => setTimeout(resolve, 50));
        return Math.random();
      }),
    },
  }).createMachine({
    context: { nonce: 0 },
    initial: 'asking',
    states: {
      asking: { meta: ask(inputs, 'confirm'), on: { 'input.confirm': 'working' } },
      working: {
        invoke: { src: 'work', onDone: { target: 'done', actions: assign({ nonce: ({ event }) => event.output }) } },
      },
      done: { type: 'final', output },
    },
  }),
});

/** A ledger whose every call is counted (`facet.method`), and which can fail a method once. */
function counted(ledger: FullLedger) {
  const calls = new Map<string, number>();
  const failOnce = new Set<string>();
  const view = new Proxy(ledger, {
    get(target, facet) {
      const inner = Reflect.get(target, facet) as unknown;
      if (inner === null || typeof inner !== 'object') return inner;
      return new Proxy(inner, {
        get(object, name) {
          const member = Reflect.get(object, name) as unknown;
          if (typeof member !== 'function') return member;
          return (...args: unknown[]) => {
            const key = `${String(facet)}.${String(name)}`;
            calls.set(key, (calls.get(key) ?? 0) + 1);
            if (failOnce.delete(key)) return Promise.reject(new LedgerUnavailableError('test outage'));
            return (member as (...a: unknown[]) => unknown).apply(object, args);
          };
        },
      });
    },
  });
  return {
    view,
    calls: (key: string) => calls.get(key) ?? 0,
    reset: () => calls.clear(),
    failOnce: (key: string) => failOnce.add(key),
  };
}

const alice = (target: string): CallContext => ({ principal: 'alice', method: 'tools/call', target });
const YES = { confirm: { action: 'accept', content: { ok: true } } };
const text = (outcome: RoundOutcome) =>
  outcome.type === 'complete'
    ? outcome.result.content.map((c) => (c as { text: string }).text).join('')
    : JSON.stringify(outcome);
function expectInput(outcome: RoundOutcome): InputRequiredOutcome {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(outcome)}`);
  return outcome;
}

const { ledgers: LEDGERS, closeLedgers } = everyLedger('deferred');
afterAll(closeLedgers);

it('reads deploy_production: its answers are played first, its plan (an invoked promise) is not', () => {
  expect(isPureFrom(deployProduction.machine, 'awaitingApproval')).toBe(true);
  expect(isPureFrom(deployProduction.machine, 'confirmed')).toBe(true);
  expect(isPureFrom(deployProduction.machine, 'awaitingCi')).toBe(true);
  expect(isPureFrom(deployProduction.machine, 'planning')).toBe(false);
});

describe.each(LEDGERS)('deferred redemption on the %s ledger', (_name, open) => {
  let ledger: FullLedger;
  let counter: ReturnType<typeof counted>;
  beforeAll(async () => {
    ledger = await open();
    counter = counted(ledger);
  });
  beforeEach(() => counter.reset());

  const runnerWith = (extra: Partial<RunnerOptions> = {}) =>
    createRunner({
      flows: [plain, announcing, effectful],
      codec: createRequestStateCodec({ keys }),
      ledger: counter.view,
      holdMs: 100,
      pollMs: 10,
      ...extra,
    });
  /** A new instance of `flow`, asked: the round that answers it (send it again to retry). */
  async function answering(runner: ReturnType<typeof runnerWith>, flow: string) {
    const first = expectInput(await runner.run({ flow, args: {}, context: alice(flow) }));
    return { flow, args: {}, context: alice(flow), requestState: first.requestState, inputResponses: YES };
  }

  it('a round without side effects is redeemed with its outcome in one write, and single-use still holds', async () => {
    const runner = runnerWith();
    const round = await answering(runner, 'plain');
    const done = text(await runner.run(round));
    expect(done).toMatch(/^done 0\.\d+/);
    expect(counter.calls('redemptions.redeemWithOutcome')).toBe(1);
    expect(counter.calls('redemptions.redeem')).toBe(0);
    expect(counter.calls('redemptions.recordOutcome')).toBe(0);
    // A retry is answered from the record; other answers to the same state are a replay.
    expect(text(await runner.run(round))).toBe(done);
    const other = { ...round, inputResponses: { confirm: { action: 'accept', content: { ok: true, note: 'x' } } } };
    await expect(runner.run(other)).rejects.toMatchObject({ name: 'InvalidRequestStateError', reason: 'replayed' });
    expect(ledger.health.stats().outcomesRecorded).toBeGreaterThanOrEqual(1);
  });

  it('duplicates racing over two runners all get the one recorded outcome', async () => {
    const [a, b] = [runnerWith(), runnerWith()];
    const round = await answering(a, 'plain');
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? b : a).run(round)));
    const texts = new Set(answers.map(text));
    expect(texts.size).toBe(1);
    expect([...texts][0]).toMatch(/^done 0\.\d+/);
    // Other answers racing with the same state: replayed, never a second outcome.
    const other = { ...round, inputResponses: { confirm: { action: 'accept', content: { ok: false } } } };
    const mixed = await Promise.allSettled([a.run(other), b.run(round)]);
    expect(mixed[0]).toMatchObject({ status: 'rejected', reason: { reason: 'replayed' } });
    expect(mixed[1].status === 'fulfilled' && text(mixed[1].value)).toBe([...texts][0]);
  });

  it('an outage at the one write uses nothing up: the same state is answered on retry', async () => {
    const runner = runnerWith();
    const round = await answering(runner, 'plain');
    counter.failOnce('redemptions.redeemWithOutcome');
    await expect(runner.run(round)).rejects.toBeInstanceOf(LedgerUnavailableError);
    const done = text(await runner.run(round));
    expect(done).toMatch(/^done 0\.\d+/);
    expect(text(await runner.run(round))).toBe(done);
  });

  it('a round that writes to the ledger redeems at that write: duplicates write one notification', async () => {
    const [a, b] = [runnerWith({ outbox: true }), runnerWith({ outbox: true })];
    const round = await answering(a, 'announcing');
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? b : a).run(round)));
    expect(new Set(answers.map(text)).size).toBe(1);
    expect(counter.calls('redemptions.redeemWithOutcome')).toBe(0);
    expect(counter.calls('redemptions.recordOutcome')).toBe(1);
    const rows = await ledger.outbox.claimOutbox({ now: Date.now(), leaseUntil: Date.now() + 60_000, limit: 100 });
    expect(rows.filter((row) => row.type === 'flow.notification')).toHaveLength(1);
  });

  it('a round that can run an effect redeems first: duplicates run it once', async () => {
    const [a, b] = [runnerWith(), runnerWith()];
    const round = await answering(a, 'effectful');
    effects = 0;
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? b : a).run(round)));
    expect(new Set(answers.map(text)).size).toBe(1);
    expect(effects).toBe(1);
    expect(counter.calls('redemptions.redeemWithOutcome')).toBe(0);
  });

  it('a round an inspector watches redeems first', async () => {
    const runner = runnerWith({ inspect: () => {} });
    const round = await answering(runner, 'plain');
    expect(text(await runner.run(round))).toMatch(/^done 0\.\d+/);
    expect(counter.calls('redemptions.redeem')).toBe(1);
    expect(counter.calls('redemptions.redeemWithOutcome')).toBe(0);
  });
});
