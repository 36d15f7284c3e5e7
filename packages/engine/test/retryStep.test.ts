/**
 * `runner.operators.retryStep` against its races, on the memory ledger: a run
 * parked while its durable step ran past the round, the step then failed for
 * good. The step is reopened before the run is written due, so no round can
 * find the run due while its step still reads `failed` (and take the failure
 * the operator meant to retry); a rewrite that loses to another write while
 * the run still waits on the step is tried again on the new version, and the
 * retried step then runs under its old idempotency key.
 */
import { createMemoryLedger } from '@baton/store';
import { describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { z } from 'zod';
import {
  createRequestStateCodec,
  createRunner,
  defineFlow,
  defineInputs,
  type FullLedger,
  generateKey,
  type RoundOutcome,
  step,
} from '../src/index.js';

const codec = createRequestStateCodec({ keys: [generateKey()] });
const context = { principal: 'alice', method: 'tools/call' as const, target: 'charge' };

/** `charge`: one durable step that waits for `gate`, then fails while `failing()` says so. */
function chargeFlow(gate: Promise<void>, failing: () => boolean, keys: string[]) {
  const charge = step(
    'charge',
    async ({ idempotencyKey }: { input: Record<string, never>; idempotencyKey: string }) => {
      keys.push(idempotencyKey);
      await gate;
      if (failing()) throw new Error('the processor is down');
      return 'CH-1';
    },
    { retry: { attempts: 1 } },
  );
  return defineFlow({
    name: 'charge',
    description: 'Charge once',
    args: z.object({}),
    inputs: defineInputs({}),
    machine: setup({ types: { context: {} as { receipt?: string } }, actors: { charge } }).createMachine({
      id: 'charge',
      context: {},
      initial: 'charging',
      states: {
        charging: {
          invoke: {
            id: 'charge',
            src: 'charge',
            input: () => ({}),
            onDone: { target: 'done', actions: assign({ receipt: ({ event }) => event.output }) },
            onError: 'failed',
          },
        },
        done: { type: 'final', output: ({ context }) => `Charged ${context.receipt}` },
        failed: { type: 'final', output: () => 'Charge failed' },
      },
    }),
  });
}

const text = (outcome: RoundOutcome) =>
  outcome.type === 'complete' ? outcome.result.content.map((c) => (c.type === 'text' ? c.text : '')).join('') : '';

/** A run parked on its failed step: the ledger, the flow, the run's id and the step's key. */
async function parkedOnFailedStep() {
  const ledger = createMemoryLedger({ pruneIntervalMs: 0 });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let failing = true;
  const keys: string[] = [];
  const flow = chargeFlow(gate, () => failing, keys);
  const runner = createRunner({ flows: [flow], codec, ledger, pollMs: 10, holdMs: 0, roundBudgetMs: 50 });
  let outcome = await runner.run({ flow: 'charge', args: {}, context });
  for (let i = 0; i < 10 && outcome.type === 'input_required'; i++) {
    outcome = await runner.run({ flow: 'charge', args: {}, context, requestState: outcome.requestState });
  }
  expect(outcome.type === 'complete' && outcome.result.structuredContent).toMatchObject({ status: 'working' });
  const id = outcome.fid;
  release();
  const until = Date.now() + 10_000;
  let steps = await ledger.runs.listSteps(id);
  while (steps[0]?.status !== 'failed') {
    if (Date.now() > until) throw new Error('the step did not fail');
    await new Promise((resolve) => setTimeout(resolve, 20));
    steps = await ledger.runs.listSteps(id);
  }
  return { ledger, flow, runner, id, key: steps[0]!.key, keys, fix: () => (failing = false) };
}

/** `ledger` with `parkRequest` and `reopenStep` observed (`after` runs once each returns). */
function observed(
  ledger: FullLedger,
  after: { park?: (dueAt: number | null | undefined) => Promise<void>; reopen?: () => Promise<void> },
): FullLedger {
  return {
    ...ledger,
    requests: {
      ...ledger.requests,
      parkRequest: async (...args) => {
        const written = await ledger.requests.parkRequest(...args);
        if (written.status !== 'conflict') await after.park?.(args[0].dueAt);
        return written;
      },
    },
    steps: {
      ...ledger.steps,
      reopenStep: async (...args) => {
        const reopened = await ledger.steps.reopenStep(...args);
        await after.reopen?.();
        return reopened;
      },
    },
    prune: (now) => ledger.prune(now),
    close: () => ledger.close(),
  };
}

describe('retry-step races', () => {
  it('never writes the run due while its step still reads failed', async () => {
    const { ledger, flow, runner, id, key, keys, fix } = await parkedOnFailedStep();
    const seen: string[] = [];
    const watched = observed(ledger, {
      // What a scheduler's round reads the moment the run is due.
      park: async (dueAt) => {
        if (dueAt != null) seen.push((await ledger.steps.getStep(id, key))!.status);
      },
    });
    const operator = createRunner({ flows: [flow], codec, ledger: watched });
    fix();
    const retried = await operator.operators.retryStep({ id, operator: 'ops', reason: 'processor back', step: key });
    expect(text(retried)).toMatch(/^Retrying: step /);
    expect(seen).toEqual(['running']);
    expect(text(await runner.resume({ id, context: { principal: 'alice' } }))).toBe('Charged CH-1');
    expect(new Set(keys).size).toBe(1);
    await ledger.close();
  });

  it('a rewrite that loses to another write while the run still waits on the step is tried again', async () => {
    const { ledger, flow, runner, id, key, keys, fix } = await parkedOnFailedStep();
    // Another write of the run lands between the reopen and the rewrite (it leaves the run as it was).
    const watched = observed(ledger, {
      reopen: async () => {
        const row = (await ledger.requests.getRequest(id))!;
        await ledger.requests.parkRequest({ ...row, now: Date.now() }, row.version);
      },
    });
    const operator = createRunner({ flows: [flow], codec, ledger: watched });
    fix();
    const retried = await operator.operators.retryStep({ id, operator: 'ops', reason: 'processor back', step: key });
    expect(text(retried)).toMatch(/^Retrying: step /);
    expect((await ledger.requests.getRequest(id))?.dueAt).not.toBeNull();
    expect(text(await runner.resume({ id, context: { principal: 'alice' } }))).toBe('Charged CH-1');
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(1);
    await ledger.close();
  });
});
