/**
 * Two copies of the engine in one process (what a flows module loaded as
 * CommonJS gets beside `baton serve`'s), made here by evaluating the engine's
 * modules a second time (`vi.resetModules`): the runner of one copy serves a
 * flow defined with the other, and its durable step runs through that runner
 * (with a ledger, and with `allowReplays` without one), keyed per flow
 * instance; a `FlowError` of either copy is a `FlowError` to both, so it is
 * shown and never retried; a step started outside any runner's round fails
 * with a `FlowError` that names it, instead of running unkeyed; and a copy
 * whose cross-copy protocol differs refuses to load with one line naming both
 * paths.
 */
import { createMemoryLedger } from '@baton/store';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { assign, createActor, setup, toPromise } from 'xstate';
import { z } from 'zod';
import * as engine from '../src/index.js';

type Engine = typeof engine;

/** A second, separately evaluated copy of the engine's modules. */
async function secondCopy(): Promise<Engine> {
  vi.resetModules();
  const copy = (await import('../src/index.js')) as Engine;
  expect(copy.FlowError).not.toBe(engine.FlowError);
  return copy;
}

afterEach(() => {
  vi.resetModules();
});

/** `refund`, made with `copy`: the durable step `issueRefund` records its keys; order "bad" throws copy's FlowError. */
function refundFlow(copy: Engine, keys: string[], attempts: number[]) {
  const issueRefund = copy.step(
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
      keys.push(idempotencyKey);
      attempts.push(attempt);
      if (input.order === 'bad') throw new copy.FlowError('The order was already refunded.');
      return `RF-${input.order}`;
    },
    { retry: { attempts: 3, backoffMs: 1 } },
  );
  const machine = setup({
    types: { input: {} as { order: string }, context: {} as { order: string; refund?: string; error?: string } },
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
          onError: { target: 'failed', actions: assign({ error: ({ event }) => messageOf(event.error) }) },
        },
      },
      done: { type: 'final', output: ({ context }) => `Refunded ${context.refund}` },
      failed: { type: 'final', output: ({ context }) => `Failed: ${context.error}` },
    },
  });
  return copy.defineFlow({
    name: 'refund',
    description: 'Refund an order once',
    args: z.object({ order: z.string() }),
    inputs: copy.defineInputs({}),
    machine,
  });
}

function messageOf(error: unknown): string {
  return error instanceof engine.FlowError ? error.message : 'not a FlowError';
}

const context: engine.CallContext = { principal: 'alice', method: 'tools/call', target: 'refund' };

function textOf(outcome: engine.RoundOutcome): string {
  if (outcome.type !== 'complete') throw new Error(`expected complete, got ${outcome.type}`);
  return outcome.result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

describe('two copies of the engine in one process', () => {
  it("errors: either copy's instances are instances to both; a subclass keeps its own identity", async () => {
    const copy = await secondCopy();
    const pairs: [new (message: string) => Error, new (message: string) => Error][] = [
      [copy.FlowError, engine.FlowError],
      [copy.FlowDefinitionError, engine.FlowDefinitionError],
      [copy.InvalidParamsError, engine.InvalidParamsError],
      [copy.LedgerUnavailableError, engine.LedgerUnavailableError],
    ];
    for (const [theirs, ours] of pairs) {
      expect(new theirs('x')).toBeInstanceOf(ours);
      expect(new ours('x')).toBeInstanceOf(theirs);
    }
    expect(new copy.InvalidRequestStateError('replayed')).toBeInstanceOf(engine.InvalidRequestStateError);
    expect(engine.isInvalidRequestStateError(new copy.InvalidRequestStateError('expired'))).toBe(true);
    expect(new copy.StateTooLargeError('token', 2, 1)).toBeInstanceOf(engine.StateTooLargeError);
    expect(new copy.StateTooLargeError('token', 2, 1)).toBeInstanceOf(RangeError);
    expect(new Error('x')).not.toBeInstanceOf(engine.FlowError);
    expect(new copy.FlowDefinitionError('x')).not.toBeInstanceOf(engine.FlowError);
    class Refused extends engine.FlowError {}
    expect(new Refused('x')).toBeInstanceOf(copy.FlowError);
    expect(new copy.FlowError('x')).not.toBeInstanceOf(Refused);
  });

  it("this copy's runner serves a flow of the other: the step runs through it, keyed per instance; a FlowError is not retried", async () => {
    const copy = await secondCopy();
    const keys: string[] = [];
    const attempts: number[] = [];
    const flow = refundFlow(copy, keys, attempts);
    const codec = engine.createRequestStateCodec({ keys: [engine.generateKey()] });
    const ledger = createMemoryLedger();
    const runner = engine.createRunner({ flows: [flow], codec, ledger });
    expect(textOf(await runner.run({ flow: 'refund', args: { order: 'A-1' }, context }))).toBe('Refunded RF-A-1');
    expect(textOf(await runner.run({ flow: 'refund', args: { order: 'A-1' }, context }))).toBe('Refunded RF-A-1');
    expect(keys).toHaveLength(2);
    expect(keys[0]).not.toBe(keys[1]);
    for (const key of keys) expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);

    expect(textOf(await runner.run({ flow: 'refund', args: { order: 'bad' }, context }))).toBe(
      'Failed: The order was already refunded.',
    );
    expect(attempts.slice(2)).toEqual([1]);
    await ledger.close();
  });

  it('without a ledger, allowReplays serves it (the mark is read across copies), still keyed per instance', async () => {
    const copy = await secondCopy();
    const keys: string[] = [];
    const flow = refundFlow(copy, keys, []);
    expect(engine.needsLedgerOnlyForSteps(flow)).toBe(true);
    const codec = engine.createRequestStateCodec({ keys: [engine.generateKey()] });
    const runner = engine.createRunner({ flows: [flow], codec, allowReplays: true });
    for (let i = 0; i < 2; i++) {
      expect(textOf(await runner.run({ flow: 'refund', args: { order: 'B-2' }, context }))).toBe('Refunded RF-B-2');
    }
    expect(new Set(keys).size).toBe(2);
  });

  it('a step started outside any runner fails with a FlowError naming it, and never runs', async () => {
    const keys: string[] = [];
    const flow = refundFlow(engine, keys, []);
    const actor = createActor(flow.machine, { input: { order: 'C-3' } });
    actor.start();
    await toPromise(actor);
    expect(actor.getSnapshot().value).toBe('failed');
    expect(actor.getSnapshot().context.error).toBe(
      'step "issueRefund" ran outside a Baton round, where it would be neither durable nor keyed per flow instance: serve the flow (baton serve, createRunner), or test it with createFlowTester from @baton/engine/testing',
    );
    expect(keys).toEqual([]);
  });

  it('a copy whose cross-copy protocol differs refuses to load, naming both paths', async () => {
    const registry = Symbol.for('baton.engine.copies');
    const global = globalThis as { [registry]?: { url: string; protocol: number }[] };
    const saved = global[registry];
    global[registry] = [{ url: 'file:///elsewhere/node_modules/@baton/engine/dist/index.mjs', protocol: 0 }];
    try {
      vi.resetModules();
      await expect(import('../src/index.js')).rejects.toThrow(
        /^@baton\/engine is loaded twice in versions that cannot work together: \/elsewhere\/node_modules\/@baton\/engine\/dist\/index\.mjs \(protocol 0\) and \/.*\/packages\/engine\/src\/copies\.ts \(protocol 1\); install one version \(npm ls @baton\/engine\)$/,
      );
    } finally {
      global[registry] = saved;
    }
  });
});
