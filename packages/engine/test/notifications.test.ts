/**
 * `notify()` in rounds that write no parked request (issue 23): a flow that
 * never parks (no decisions, no steps), and a flow that declares a decision
 * but asks its caller, or ends, before it ever parks. What they announce is
 * written to the outbox on its own, before the round answers, on the memory
 * ledger and on SQLite; a retry answered from the recorded outcome adds
 * nothing (the ids are the round's); and a runner with an outbox on a ledger
 * that cannot take messages outside a parked write is refused when created.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryLedger } from '@baton/store';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import {
  ask,
  type CallContext,
  createRequestStateCodec,
  createRunner,
  decision,
  defineFlow,
  defineInputs,
  type FullLedger,
  form,
  generateKey,
  type InputEvents,
  type Ledger,
  notify,
  type RoundOutcome,
} from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-notify-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let made = 0;
const LEDGERS: Record<string, () => FullLedger> = {
  memory: () => createMemoryLedger({ pruneIntervalMs: 0 }),
  sqlite: () => createSqliteLedger({ path: join(dir, `ledger-${++made}.db`), pruneIntervalMs: 0 }),
};

const nameInputs = defineInputs({ name: form({ message: 'Your name?', schema: z.object({ name: z.string() }) }) });
/** No decisions, no steps: it never parks. */
const greeting = defineFlow({
  name: 'greeting',
  description: 'Asks a name, says hello, and announces both.',
  args: z.object({}),
  inputs: nameInputs,
  machine: setup({ types: { events: {} as InputEvents<typeof nameInputs> } }).createMachine({
    id: 'greeting',
    initial: 'asking',
    states: {
      asking: {
        meta: ask(nameInputs, 'name'),
        on: { 'input.name': { target: 'done', actions: notify({ kind: 'answered' }) } },
      },
      done: { type: 'final', entry: notify({ kind: 'greeted', to: 'requester' }), output: () => 'hello' },
    },
  }),
});

const amountInputs = defineInputs({
  amount: form({ message: 'How much?', schema: z.object({ amount: z.number() }) }),
  approval: decision({ message: 'Approve?', schema: z.object({ approve: z.boolean() }), role: 'manager' }),
});
/** Declares a decision, but small amounts end before anything is parked. */
const smallSpend = defineFlow({
  name: 'small_spend',
  description: 'Small amounts pass at once; larger ones wait for a manager.',
  args: z.object({}),
  inputs: amountInputs,
  machine: setup({ types: { events: {} as InputEvents<typeof amountInputs> } }).createMachine({
    id: 'small_spend',
    initial: 'asking',
    states: {
      asking: {
        entry: notify({ kind: 'asked' }),
        meta: ask(amountInputs, 'amount'),
        on: {
          'input.amount': [
            {
              guard: ({ event }) => event.action === 'accept' && event.content.amount < 100,
              target: 'passed',
            },
            { target: 'approval' },
          ],
        },
      },
      approval: { meta: ask(amountInputs, 'approval'), on: { 'input.approval': 'passed' } },
      passed: { type: 'final', entry: notify({ kind: 'passed', to: 'requester' }), output: () => 'passed' },
    },
  }),
});

const context = (target: string): CallContext => ({ principal: 'alice', method: 'tools/call', target });
const stateOf = (outcome: RoundOutcome) => {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${outcome.type}`);
  return outcome.requestState!;
};

describe.each(Object.keys(LEDGERS))('notify() in a round that writes no parked request, on %s', (name) => {
  const setupRunner = (ledger: FullLedger) =>
    createRunner({
      flows: [greeting, smallSpend],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      ledger,
      outbox: true,
      holdMs: 0,
      pollMs: 1,
      waitInCallSeconds: 0,
    });
  const sent = async (ledger: FullLedger) =>
    (
      await ledger.outbox.claimOutbox({
        now: Number.MAX_SAFE_INTEGER - 1,
        leaseUntil: Number.MAX_SAFE_INTEGER,
        limit: 100,
      })
    )
      .map((m) => JSON.parse(m.body) as { type: string; data: Record<string, unknown> })
      .map((m) => [m.type, m.data.kind, m.data.flow, m.data.requestId]);

  it('a flow that never parks: each notify() is delivered, once, whatever the retries', async () => {
    const ledger = LEDGERS[name]!();
    const runner = setupRunner(ledger);
    const first = await runner.run({ flow: 'greeting', args: {}, context: context('greeting') });
    const answer = {
      flow: 'greeting',
      args: {},
      context: context('greeting'),
      requestState: stateOf(first),
      inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } },
    };
    const done = await runner.run(answer);
    expect(done.type).toBe('complete');
    // The same request again is answered from the recorded outcome: nothing runs, nothing more is sent.
    expect(await runner.run(answer)).toEqual(done);
    expect(await sent(ledger)).toEqual([
      ['flow.notification', 'answered', 'greeting', first.fid],
      ['flow.notification', 'greeted', 'greeting', first.fid],
    ]);
    // No parked request was ever written for it.
    expect(await ledger.requests.getRequest(first.fid)).toBeUndefined();
    await ledger.close();
  });

  it('a flow with a decision that asks its caller, then ends, before it parks', async () => {
    const ledger = LEDGERS[name]!();
    const runner = setupRunner(ledger);
    const first = await runner.run({ flow: 'small_spend', args: {}, context: context('small_spend') });
    expect(await sent(ledger)).toEqual([['flow.notification', 'asked', 'small_spend', first.fid]]);
    const done = await runner.run({
      flow: 'small_spend',
      args: {},
      context: context('small_spend'),
      requestState: stateOf(first),
      inputResponses: { amount: { action: 'accept', content: { amount: 20 } } },
    });
    expect(done.type).toBe('complete');
    expect(await sent(ledger)).toEqual([['flow.notification', 'passed', 'small_spend', first.fid]]);
    expect(await ledger.requests.getRequest(first.fid)).toBeUndefined();
    await ledger.close();
  });
});

it('a runner with an outbox on a ledger without the outbox facet is refused', async () => {
  const memory = createMemoryLedger({ pruneIntervalMs: 0 });
  const { outbox: _dropped, ...rest } = memory;
  const ledger: Ledger = { ...rest, close: () => memory.close() };
  const codec = createRequestStateCodec({ keys: [generateKey()] });
  expect(() => createRunner({ flows: [greeting], codec, ledger, outbox: true })).toThrow(
    expect.objectContaining({ name: 'LedgerFacetMissingError', facet: 'outbox', neededBy: 'option outbox' }),
  );
  // Without an outbox, nothing is written and nothing is refused.
  expect(createRunner({ flows: [greeting], codec, ledger }).flows.size).toBe(1);
  await memory.close();
});
