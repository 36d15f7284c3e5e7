/**
 * The ledger's facets, checked once at `createRunner`: a third-party ledger
 * with only `redemptions` and `requests` (and `prune`, `close`) serves a
 * flow that asks its caller, round trip and single use included; a flow
 * that needs a facet the ledger lacks (a decision state: `decisions`; an
 * event wait: `events`; durable steps: `steps`), or an option that does
 * (`outbox`, `ledgerFacets`), is refused before anything is served, with
 * `LedgerFacetMissingError` naming the facet and what needs it.
 */
import { describe, expect, it } from 'vitest';
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
  event,
  generateKey,
  type InputEvents,
  type Ledger,
  LedgerFacetMissingError,
  type ParkedRequest,
  type RoundOutcome,
  step,
} from '../src/index.js';
import { deployFlow } from './fixtures/deployFlow.js';

const keys = [generateKey()];
const codec = createRequestStateCodec({ keys });
const ctx: CallContext = { principal: 'alice', method: 'tools/call', target: 'deploy_production' };
const accept = (content: Record<string, unknown>) => ({ action: 'accept' as const, content });

/** A minimal third-party ledger: single use and parked requests, in memory, nothing else. */
function minimalLedger(): Ledger & { readonly redeemed: Map<string, { digest: string; outcome?: string }> } {
  const redeemed = new Map<string, { digest: string; outcome?: string; at: number }>();
  const tokens = new Map<string, { purpose: string; expiresAt: number; data?: string; used: boolean }>();
  const parked = new Map<string, ParkedRequest>();
  return {
    redeemed,
    redemptions: {
      redeem: async ({ jti, responsesDigest, expiresAt, now }) => {
        const row = redeemed.get(jti);
        if (now > expiresAt) return { status: 'replayed' };
        if (!row) {
          redeemed.set(jti, { digest: responsesDigest, at: now });
          return { status: 'redeemed' };
        }
        if (row.digest !== responsesDigest) return { status: 'replayed' };
        return row.outcome !== undefined
          ? { status: 'retry', outcome: row.outcome }
          : { status: 'in_progress', redeemedAt: row.at };
      },
      recordOutcome: async (jti, outcome) => {
        const row = redeemed.get(jti);
        if (row) row.outcome = outcome;
      },
      redeemWithOutcome: async ({ jti, responsesDigest, expiresAt, now }, outcome) => {
        const row = redeemed.get(jti);
        if (now > expiresAt) return { status: 'replayed' };
        if (!row) {
          redeemed.set(jti, { digest: responsesDigest, outcome, at: now });
          return { status: 'redeemed' };
        }
        if (row.digest !== responsesDigest) return { status: 'replayed' };
        return row.outcome !== undefined
          ? { status: 'retry', outcome: row.outcome }
          : { status: 'in_progress', redeemedAt: row.at };
      },
      releaseRedemption: async (jti, digest) => {
        const row = redeemed.get(jti);
        if (!row || row.outcome !== undefined || row.digest !== digest) return false;
        return redeemed.delete(jti);
      },
      mintToken: async ({ purpose, expiresAt, data }) => {
        const code = `code-${tokens.size + 1}`;
        tokens.set(code, { purpose, expiresAt, used: false, ...(data !== undefined ? { data } : {}) });
        return code;
      },
      redeemToken: async (code, purpose, now) => {
        const token = tokens.get(code);
        if (!token || token.purpose !== purpose) return { status: 'unknown' };
        if (token.used) return { status: 'already_used' };
        if (now > token.expiresAt) return { status: 'expired' };
        token.used = true;
        return { status: 'redeemed', data: token.data };
      },
    },
    requests: {
      parkRequest: async (request, expectedVersion) => {
        const current = parked.get(request.id);
        if ((current?.version ?? null) !== expectedVersion) return { status: 'conflict' };
        const version = (current?.version ?? 0) + 1;
        const { now, outbox: _o, events: _e, ...rest } = request;
        parked.set(request.id, { ...rest, version, createdAt: current?.createdAt ?? now, updatedAt: now });
        return { status: 'parked', version };
      },
      getRequest: async (id) => parked.get(id),
      listRequests: async (requester, since) =>
        [...parked.values()].filter((row) => row.requester === requester && row.updatedAt >= since),
    },
    prune: async () => 0,
    close: async () => {},
  };
}

function expectInput(outcome: RoundOutcome) {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${outcome.type}`);
  return outcome;
}

/** A flow that waits in one state for `spec` (a decision or an event). */
function waitingFlow(name: string, spec: Parameters<typeof defineInputs>[0][string]) {
  const inputs = defineInputs({ wait: spec });
  return defineFlow({
    name,
    description: 'waits',
    args: z.object({}),
    inputs,
    machine: setup({ types: { events: {} as InputEvents<typeof inputs> } }).createMachine({
      id: name,
      initial: 'w',
      states: { w: { meta: ask(inputs, 'wait'), on: { 'input.wait': 'd' } }, d: { type: 'final' } },
    }),
  });
}

const approval = waitingFlow(
  'approval',
  decision({ message: 'Approve?', schema: z.object({ ok: z.boolean() }), role: 'boss' }),
);
const ciWait = waitingFlow('ci_wait', event({ name: 'ci.finished', schema: z.object({ ok: z.boolean() }) }));

describe('a third-party ledger with only redemptions and requests', () => {
  it('serves a flow that asks its caller, round trip and single use', async () => {
    const ledger = minimalLedger();
    const runner = createRunner({ flows: [deployFlow], codec, ledger });
    expect(runner.hasLedger).toBe(true);
    const args = { version: '1.2.3' };
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    const round = {
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-42' }) },
    };
    const done = await runner.run(round);
    expect(done.type).toBe('complete');
    expect(ledger.redeemed.size).toBe(1);
    // The same round again answers its recorded outcome; other answers to a used state are refused.
    expect(await runner.run(round)).toEqual(done);
    await expect(
      runner.run({ ...round, inputResponses: { confirm_deploy: accept({ confirm: false }) } }),
    ).rejects.toMatchObject({ name: 'InvalidRequestStateError', reason: 'replayed' });
    // Nothing to decide on it: the inbox is empty, and no facet is asked for.
    expect(await runner.inbox({ principal: 'bob', roles: ['boss'] })).toEqual([]);
  });
});

describe('createRunner refuses a ledger without a facet its flows or options need', () => {
  const refusal = (facet: string, neededBy: string | RegExp) =>
    expect.objectContaining({
      name: 'LedgerFacetMissingError',
      facet,
      neededBy: typeof neededBy === 'string' ? neededBy : expect.stringMatching(neededBy),
    });

  it('a decision flow without `decisions`', () => {
    expect(() => createRunner({ flows: [deployFlow, approval], codec, ledger: minimalLedger() })).toThrow(
      refusal('decisions', 'flow "approval" (a decision state)'),
    );
    try {
      createRunner({ flows: [approval], codec, ledger: minimalLedger() });
    } catch (error) {
      expect(error).toBeInstanceOf(LedgerFacetMissingError);
      expect((error as Error).message).toBe(
        'runner: flow "approval" (a decision state) needs a ledger with the "decisions" facet, and this ledger has none',
      );
    }
  });

  it('an event flow without `events`', () => {
    expect(() => createRunner({ flows: [ciWait], codec, ledger: minimalLedger() })).toThrow(
      refusal('events', 'flow "ci_wait" (an event wait)'),
    );
  });

  it('durable steps without `steps`, the outbox option without `outbox`, a declared facet it lacks', () => {
    const work = step('work', async () => 'done');
    const machine = setup({ actors: { work } }).createMachine({
      id: 'stepped',
      initial: 'working',
      states: { working: { invoke: { src: 'work', onDone: 'done' } }, done: { type: 'final' } },
    });
    const stepped = defineFlow({
      name: 'stepped',
      description: 's',
      args: z.object({}),
      inputs: defineInputs({}),
      machine,
    });
    expect(() => createRunner({ flows: [stepped], codec, ledger: minimalLedger() })).toThrow(
      refusal('steps', 'flow "stepped" (durable steps)'),
    );
    expect(() => createRunner({ flows: [deployFlow], codec, ledger: minimalLedger(), outbox: true })).toThrow(
      refusal('outbox', 'option outbox'),
    );
    expect(() =>
      createRunner({ flows: [deployFlow], codec, ledger: minimalLedger(), ledgerFacets: ['schedule'] }),
    ).toThrow(refusal('schedule', /ledgerFacets/));
  });

  it('checks nothing without a ledger', () => {
    expect(createRunner({ flows: [approval, ciWait], codec }).hasLedger).toBe(false);
  });

  it('an undeclared facet reached anyway throws the same error (the scheduler on a ledger without `schedule`)', async () => {
    const runner = createRunner({ flows: [deployFlow], codec, ledger: minimalLedger() });
    await expect(runner.fireDueTimers()).rejects.toMatchObject({ name: 'LedgerFacetMissingError', facet: 'schedule' });
  });
});
