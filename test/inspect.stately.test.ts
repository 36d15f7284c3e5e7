/**
 * Stately's own inspector (`@statelyai/inspect`) on Baton's runner: what it
 * would send (its real conversion code, through `createInspector` with an
 * adapter that keeps the sent events) never holds a sensitive answer or
 * context value, the root actor is named after the machine in every round,
 * and a round's answer does not go out before its events were sent.
 */
import {
  createRequestStateCodec,
  createRunner,
  defineFlow,
  form,
  generateKey,
  type InputRequiredOutcome,
} from '@baton/engine';
import { createInspector } from '@statelyai/inspect';
import { describe, expect, it } from 'vitest';
import { assign, fromPromise, setup } from 'xstate';
import { z } from 'zod';

const SECRET_CODE = 'MINTED-7f3a9c';
const SECRET_PIN = 'pin-48213';

const inputs = { pin: form({ message: 'PIN?', schema: z.object({ pin: z.string().max(20) }), sensitive: true }) };
const machine = setup({
  types: { context: {} as { user: string; code: string }, input: {} as { user: string } },
  actors: { mint: fromPromise(async () => SECRET_CODE) },
}).createMachine({
  id: 'secret_flow',
  context: ({ input }) => ({ user: input.user, code: '' }),
  initial: 'asking',
  states: {
    asking: { meta: { ask: ['pin'] }, on: { 'input.pin': 'minting' } },
    minting: {
      invoke: {
        id: 'mint',
        src: 'mint',
        onDone: { target: 'done', actions: assign({ code: ({ event }) => event.output }) },
      },
    },
    done: { type: 'final', output: ({ context }) => `Code for ${context.user}: ${context.code}` },
  },
});
const flow = defineFlow({
  name: 'secret_flow',
  description: 'mints a secret',
  args: z.object({ user: z.string() }),
  inputs,
  machine,
  sensitive: ['code'],
  auditValues: true,
});

function statelyCapture() {
  const sent: any[] = [];
  const inspector = createInspector({
    send: (event) => void sent.push(JSON.parse(JSON.stringify(event))),
    start() {},
    stop() {},
  });
  return { sent, inspector };
}

/** The index, among the root's snapshot events, of the last one sent in round 1. */
function round1Last(sent: any[], round1: number): number {
  return sent.slice(0, round1).filter((e) => e.type === '@xstate.snapshot' && e.sessionId === e.rootId).length - 1;
}

describe("Stately's inspector", () => {
  it('never sees a sensitive answer or context value; the audit trail neither; the answer waits for the events', async () => {
    const { sent, inspector } = statelyCapture();
    const entries: any[] = [];
    const runner = createRunner({
      flows: [flow],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      inspect: inspector,
      audit: { append: async (e) => void entries.push(e), instances: async () => [], rounds: async () => [] },
    });
    const context = { principal: 'alice', method: 'tools/call' as const, target: 'secret_flow' };
    const first = (await runner.run({ flow: 'secret_flow', args: { user: 'bob' }, context })) as InputRequiredOutcome;
    expect(first.type).toBe('input_required');
    const round1 = sent.length;
    expect(round1).toBeGreaterThan(0);
    const last = await runner.run({
      flow: 'secret_flow',
      args: { user: 'bob' },
      context,
      requestState: first.requestState,
      inputResponses: { pin: { action: 'accept', content: { pin: SECRET_PIN } } },
    });
    expect(last.type).toBe('complete');
    expect(JSON.stringify(last)).toContain(SECRET_CODE); // the caller gets it
    // Sent before the answer came back (no waiting here): the final state is already there.
    const rootSnapshots = sent.filter((e) => e.type === '@xstate.snapshot' && e.sessionId === e.rootId);
    expect(rootSnapshots.at(-1)!.snapshot.value).toBe('done');
    expect(rootSnapshots.at(-1)!.snapshot.context.code).toBe('[redacted]');
    const all = JSON.stringify(sent);
    expect(all).not.toContain(SECRET_CODE);
    expect(all).not.toContain(SECRET_PIN);
    expect(all).toContain('input.pin');
    expect(JSON.stringify(entries)).not.toContain(SECRET_PIN);
    expect(entries[1].received).toEqual([{ key: 'pin', action: 'accept', value: '[redacted]' }]);
    // The root actor: the machine's name in both rounds, one stable session.
    const actors = sent.filter((e) => e.type === '@xstate.actor' && e.sessionId === e.rootId);
    expect(actors.length).toBe(2);
    expect(actors.map((a) => a.name)).toEqual(['secret_flow', 'secret_flow']);
    expect(new Set(actors.map((a) => a.sessionId)).size).toBe(1);
    expect(actors[0].sessionId).toMatch(/^baton:/);
    // A round that ends waiting does not show a stopped actor.
    expect(sent.filter((e) => e.sessionId === e.rootId && e.snapshot?.status === 'stopped')).toEqual([]);
    expect(rootSnapshots[round1Last(sent, round1)].snapshot.value).toBe('asking');
  });

  it('a dead inspector delays a round by at most the bound', async () => {
    const runner = createRunner({
      flows: [flow],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      inspect: { inspect: () => {}, flush: () => new Promise(() => {}) },
    });
    const started = performance.now();
    await runner.run({
      flow: 'secret_flow',
      args: { user: 'bob' },
      context: { principal: 'alice', method: 'tools/call', target: 'secret_flow' },
    });
    const ms = performance.now() - started;
    expect(ms).toBeGreaterThanOrEqual(95);
    expect(ms).toBeLessThan(10_000); // a flush that never settles is cut at the bound, not awaited forever
  });
});
