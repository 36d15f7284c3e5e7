import { beforeEach, describe, expect, it } from 'vitest';
import { assign, raise, setup } from 'xstate';
import { z } from 'zod';
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
  InvalidRequestStateError,
  type RoundOutcome,
  type RunnerLogEvent,
  roots,
  sampling,
} from '../src/index.js';
import { deployFlow, planCalls } from './fixtures/deployFlow.js';

const keys = [generateKey()];
let clock = Date.UTC(2026, 10, 29, 12, 0, 0);
const now = () => clock;
const ctx: CallContext = { principal: 'alice', method: 'tools/call', target: 'deploy_production' };
const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

function makeRunner(extra: { ledger?: FullLedger; flows?: any[]; log?: (e: RunnerLogEvent) => void } = {}) {
  const codec = createRequestStateCodec({ keys, now });
  return createRunner({ flows: extra.flows ?? [deployFlow], codec, now, ...extra });
}

function expectInput(outcome: RoundOutcome): InputRequiredOutcome {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(outcome)}`);
  return outcome;
}
const text = (outcome: RoundOutcome) => {
  if (outcome.type !== 'complete') throw new Error(`expected complete, got ${JSON.stringify(outcome)}`);
  return outcome.result.content.map((c) => (c as { text: string }).text).join('');
};

beforeEach(() => {
  clock = Date.UTC(2026, 10, 29, 12, 0, 0);
  planCalls.length = 0;
});

describe('deploy approval flow', () => {
  it('computes the plan, then asks both questions in one round with context in the message', async () => {
    const runner = makeRunner();
    const first = expectInput(
      await runner.run({ flow: 'deploy_production', args: { version: '1.2.3' }, context: ctx }),
    );
    expect(Object.keys(first.inputRequests)).toEqual(['confirm_deploy', 'change_ticket']);
    const confirm = first.inputRequests.confirm_deploy!;
    expect(confirm).toMatchObject({
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: 'Deploy 1.2.3 to production? Plan: rolling update to 1.2.3 on 3 nodes',
        requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] },
      },
    });
    expect(first.round).toBe(1);
    expect(planCalls).toEqual(['1.2.3']);
  });

  it('deploys when confirmed with a ticket, without re-running the plan', async () => {
    const runner = makeRunner();
    const args = { version: '1.2.3' };
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    const done = await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-42' }) },
    });
    expect(text(done)).toBe('Deployed 1.2.3 (ticket CHG-42)');
    expect(done.fid).toBe(first.fid);
    expect(done.round).toBe(2);
    expect(planCalls).toEqual(['1.2.3']);
  });

  it('re-asks only the missing response and keeps the answer received', async () => {
    const runner = makeRunner();
    const args = { version: '2.0.0' };
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    const second = expectInput(
      await runner.run({
        flow: 'deploy_production',
        args,
        context: ctx,
        requestState: first.requestState,
        inputResponses: { confirm_deploy: accept({ confirm: true }), unrelated: { action: 'accept' } },
      }),
    );
    expect(Object.keys(second.inputRequests)).toEqual(['change_ticket']);
    expect(second.fid).toBe(first.fid);
    const done = await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: second.requestState,
      inputResponses: { change_ticket: accept({ ticket: 'CHG-7' }) },
    });
    expect(text(done)).toBe('Deployed 2.0.0 (ticket CHG-7)');
  });

  it('re-asks a response that fails validation, and ignores extra keys', async () => {
    const runner = makeRunner();
    const args = { version: '3.0.0' };
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    const second = expectInput(
      await runner.run({
        flow: 'deploy_production',
        args,
        context: ctx,
        requestState: first.requestState,
        inputResponses: {
          confirm_deploy: accept({ confirm: 'yes please' }),
          change_ticket: accept({ ticket: 'CHG-1' }),
          extra: accept({ anything: 1 }),
        },
      }),
    );
    expect(Object.keys(second.inputRequests)).toEqual(['confirm_deploy']);
    const third = expectInput(
      await runner.run({
        flow: 'deploy_production',
        args,
        context: ctx,
        requestState: second.requestState,
        inputResponses: { change_ticket: accept({ ticket: 'not-a-ticket' }) },
      }),
    );
    // change_ticket was not asked this round: its fresh value is ignored and the held one kept.
    expect(Object.keys(third.inputRequests)).toEqual(['confirm_deploy']);
    const done = await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: third.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }) },
    });
    expect(text(done)).toBe('Deployed 3.0.0 (ticket CHG-1)');
  });

  it.each([
    ['declined', { action: 'decline' }],
    ['cancelled', { action: 'cancel' }],
    ['not confirmed', accept({ confirm: false })],
  ])('ends cancelled (not an error) when %s', async (_label, response) => {
    const runner = makeRunner();
    const args = { version: '4.0.0' };
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    const done = await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: first.requestState,
      inputResponses: { confirm_deploy: response, change_ticket: { action: 'decline' } },
    });
    expect(done.type).toBe('complete');
    expect(text(done)).toBe('Deployment of 4.0.0 cancelled');
  });

  it('expires after 15 minutes without an answer: the deadline fires before responses are delivered', async () => {
    const runner = makeRunner();
    const args = { version: '5.0.0' };
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    clock += 10 * 60_000;
    const second = expectInput(
      await runner.run({
        flow: 'deploy_production',
        args,
        context: ctx,
        requestState: first.requestState,
        inputResponses: { confirm_deploy: accept({ confirm: true }) },
      }),
    );
    clock += 6 * 60_000; // 16 minutes after the question was first asked
    const done = await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: second.requestState,
      inputResponses: { change_ticket: accept({ ticket: 'CHG-9' }) },
    });
    expect(text(done)).toBe('Approval for 5.0.0 expired');
  });

  it('keeps a delayed event with a payload intact across rounds (not only `after` timers)', async () => {
    const reminderInputs = defineInputs({ ok: form({ message: 'OK?', schema: z.object({ ok: z.boolean() }) }) });
    const reminder = defineFlow({
      name: 'reminder',
      description: 'Asks, and nudges after a minute.',
      args: z.object({}),
      inputs: reminderInputs,
      machine: setup({
        types: {
          context: {} as { note: string },
          events: {} as InputEvents<typeof reminderInputs> | { type: 'remind'; note: string },
        },
      }).createMachine({
        context: { note: '' },
        initial: 'waiting',
        states: {
          waiting: {
            meta: ask(reminderInputs, 'ok'),
            entry: raise({ type: 'remind', note: 'still there?' }, { delay: 60_000, id: 'nudge' }),
            on: {
              remind: { target: 'reminded', actions: assign({ note: ({ event }) => event.note }) },
              'input.ok': 'answered',
            },
          },
          reminded: { type: 'final', output: ({ context }: { context: { note: string } }) => context.note },
          answered: { type: 'final', output: 'answered' },
        },
      }),
    });
    const runner = makeRunner({ flows: [reminder] });
    const context = { ...ctx, target: 'reminder' };
    const first = expectInput(await runner.run({ flow: 'reminder', args: {}, context }));
    clock += 61_000;
    const done = await runner.run({ flow: 'reminder', args: {}, context, requestState: first.requestState });
    expect(text(done)).toBe('still there?');
  });

  it('answers within the deadline are delivered', async () => {
    const runner = makeRunner();
    const args = { version: '5.1.0' };
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    clock += 14 * 60_000;
    const done = await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-3' }) },
    });
    expect(text(done)).toBe('Deployed 5.1.0 (ticket CHG-3)');
  });

  it('returns a user-actionable error from a FlowError, and a generic one (no secrets) otherwise', async () => {
    const events: RunnerLogEvent[] = [];
    const runner = makeRunner({ log: (e) => events.push(e) });
    const broken = await runner.run({ flow: 'deploy_production', args: { version: 'broken' }, context: ctx });
    expect(broken).toMatchObject({ type: 'error', message: 'No build exists for version "broken".' });
    const crash = await runner.run({ flow: 'deploy_production', args: { version: 'crash' }, context: ctx });
    expect(crash.type).toBe('error');
    expect(JSON.stringify(crash)).not.toContain('hunter2');
    expect(JSON.stringify(crash)).not.toMatch(/at .*\.ts:\d+/);
    expect(events.some((e) => e.type === 'flow_error')).toBe(true);
  });

  it('rejects invalid arguments with a clear message', async () => {
    const runner = makeRunner();
    const outcome = await runner.run({ flow: 'deploy_production', args: { version: '' }, context: ctx });
    expect(outcome).toMatchObject({ type: 'error' });
    expect((outcome as { message: string }).message).toMatch(/^Invalid arguments: version: /);
  });
});

describe('requestState checks in the runner', () => {
  async function firstState(runner = makeRunner(), args = { version: '1.0.0' }) {
    return expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
  }
  const answers = { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-1' }) };

  it('rejects a tampered state with the opaque error', async () => {
    const runner = makeRunner();
    const first = await firstState(runner);
    const s = first.requestState;
    const tampered = s.slice(0, 40) + (s[40] === 'A' ? 'B' : 'A') + s.slice(41);
    const run = runner.run({
      flow: 'deploy_production',
      args: { version: '1.0.0' },
      context: ctx,
      requestState: tampered,
      inputResponses: answers,
    });
    await expect(run).rejects.toBeInstanceOf(InvalidRequestStateError);
    await expect(run).rejects.toThrow('Invalid or expired requestState');
  });

  it('rejects another principal, other arguments, and an expired state', async () => {
    const runner = makeRunner();
    const first = await firstState(runner);
    const base = { flow: 'deploy_production', requestState: first.requestState, inputResponses: answers };
    await expect(
      runner.run({ ...base, args: { version: '1.0.0' }, context: { ...ctx, principal: 'mallory' } }),
    ).rejects.toMatchObject({ reason: 'bad_integrity' });
    await expect(runner.run({ ...base, args: { version: '6.6.6' }, context: ctx })).rejects.toMatchObject({
      reason: 'bad_integrity',
    });
    clock += 24 * 3600_000 + 1;
    await expect(runner.run({ ...base, args: { version: '1.0.0' }, context: ctx })).rejects.toMatchObject({
      reason: 'expired',
    });
  });

  it('keeps the state alive past its deadline so the flow can report the expiry', async () => {
    const runner = createRunner({
      flows: [deployFlow],
      codec: createRequestStateCodec({ keys, now }),
      now,
      ttlSeconds: 60,
    });
    const first = await firstState(runner);
    clock += 15 * 60_000 + 30_000;
    const done = await runner.run({
      flow: 'deploy_production',
      args: { version: '1.0.0' },
      context: ctx,
      requestState: first.requestState,
      inputResponses: answers,
    });
    expect(text(done)).toBe('Approval for 1.0.0 expired');
  });

  it('rejects a state minted by an older definition, unless a migration is registered', async () => {
    const v1 = makeRunner();
    const first = await firstState(v1);
    const v2Machine = setup({
      types: {
        context: {} as { version: string; note?: string },
        input: {} as { version: string },
        events: {} as InputEvents<typeof v2Inputs>,
      },
    }).createMachine({
      id: 'deploy',
      context: ({ input }) => ({ version: input.version }),
      initial: 'waiting',
      states: {
        waiting: {
          meta: ask(v2Inputs, 'confirm_deploy'),
          on: { 'input.confirm_deploy': { target: 'done', actions: assign({ note: () => 'migrated' }) } },
        },
        done: { type: 'final', output: ({ context }) => `v2 done ${context.version} ${context.note}` },
      },
    });
    const stale = createRunner({
      flows: [defineFlow({ ...v2Config(v2Machine) })],
      codec: createRequestStateCodec({ keys, now }),
      now,
    });
    const events: RunnerLogEvent[] = [];
    const staleLogged = createRunner({
      flows: [defineFlow({ ...v2Config(v2Machine) })],
      codec: createRequestStateCodec({ keys, now }),
      now,
      log: (e) => events.push(e),
    });
    const request = {
      flow: 'deploy_production',
      args: { version: '1.0.0' },
      context: ctx,
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }) },
    };
    await expect(stale.run(request)).rejects.toMatchObject({ reason: 'stale_definition' });
    await expect(staleLogged.run(request)).rejects.toThrow('Invalid or expired requestState');
    expect(events[0]).toMatchObject({ type: 'invalid_state', reason: 'stale_definition' });
    expect((events[0] as { detail: string }).detail).toContain('register a migration');

    const migrated = createRunner({
      flows: [
        defineFlow({
          ...v2Config(v2Machine),
          migrations: {
            [deployFlow.hash]: (state) => ({ value: 'waiting', context: { version: state.context.version } }),
          },
        }),
      ],
      codec: createRequestStateCodec({ keys, now }),
      now,
    });
    expect(text(await migrated.run(request))).toBe('v2 done 1.0.0 migrated');
  });

  it('never puts context secrets into a sealed state', async () => {
    const first = await firstState();
    const bytes = Buffer.from(first.requestState, 'base64url');
    expect(bytes.includes(Buffer.from('sk-live-SECRET-9999'))).toBe(false);
    expect(first.requestState).not.toContain('SECRET');
  });
});

const v2Inputs = defineInputs({
  confirm_deploy: form({ message: 'Deploy?', schema: z.object({ confirm: z.boolean() }) }),
});
function v2Config(machine: any) {
  return {
    name: 'deploy_production',
    description: 'v2',
    args: z.object({ version: z.string().min(1) }),
    inputs: v2Inputs,
    machine,
  };
}
describe('client capabilities and other input kinds', () => {
  const draftInputs = defineInputs({
    workspace: roots(),
    draft: sampling<{ roots: string[] }>({
      fallback: true,
      params: ({ context }) => ({
        messages: [{ role: 'user', content: { type: 'text', text: `Release notes for ${context.roots.join(', ')}` } }],
        maxTokens: 200,
      }),
    }),
  });
  const draftMachine = setup({
    types: {
      context: {} as { roots: string[]; notes?: string },
      events: {} as InputEvents<typeof draftInputs>,
      output: {} as string,
    },
  }).createMachine({
    id: 'draft',
    context: { roots: [] },
    initial: 'listing',
    states: {
      listing: {
        meta: ask(draftInputs, 'workspace'),
        on: {
          'input.workspace': {
            target: 'drafting',
            actions: assign({
              roots: ({ event }) => (event.action === 'accept' ? event.roots.map((r) => r.uri) : []),
            }),
          },
        },
      },
      drafting: {
        meta: ask(draftInputs, 'draft'),
        on: {
          'input.draft': {
            target: 'done',
            actions: assign({
              notes: ({ event }) =>
                event.action === 'accept' ? String(event.result.content.text) : 'no model available: template used',
            }),
          },
        },
      },
      done: { type: 'final', output: ({ context }) => context.notes ?? '' },
    },
  });
  const draftFlow = defineFlow({
    name: 'draft_notes',
    description: 'Draft release notes',
    args: z.object({}),
    inputs: draftInputs,
    machine: draftMachine,
  });
  const dctx: CallContext = { principal: 'p', method: 'tools/call', target: 'draft_notes' };

  it('asks roots, then sampling, and delivers both', async () => {
    const runner = makeRunner({ flows: [draftFlow] });
    const first = expectInput(await runner.run({ flow: 'draft_notes', args: {}, context: dctx }));
    expect(first.inputRequests).toEqual({ workspace: { method: 'roots/list' } });
    const second = expectInput(
      await runner.run({
        flow: 'draft_notes',
        args: {},
        context: dctx,
        requestState: first.requestState,
        inputResponses: { workspace: { roots: [{ uri: 'file:///repo', name: 'repo' }] } },
      }),
    );
    expect(second.inputRequests.draft).toMatchObject({
      method: 'sampling/createMessage',
      params: { messages: [{ content: { text: 'Release notes for file:///repo' } }] },
    });
    const done = await runner.run({
      flow: 'draft_notes',
      args: {},
      context: dctx,
      requestState: second.requestState,
      inputResponses: { draft: { role: 'assistant', content: { type: 'text', text: 'Fixed bugs.' }, model: 'm' } },
    });
    expect(text(done)).toBe('Fixed bugs.');
  });

  it('takes the declared fallback when the client lacks sampling, and fails clearly without one', async () => {
    const runner = makeRunner({ flows: [draftFlow] });
    const noSampling = { ...dctx, capabilities: { roots: true, form: true } };
    const first = expectInput(await runner.run({ flow: 'draft_notes', args: {}, context: noSampling }));
    const done = await runner.run({
      flow: 'draft_notes',
      args: {},
      context: noSampling,
      requestState: first.requestState,
      inputResponses: { workspace: { roots: [] } },
    });
    expect(text(done)).toBe('no model available: template used');

    const noRoots = await runner.run({ flow: 'draft_notes', args: {}, context: { ...dctx, capabilities: {} } });
    expect(noRoots).toMatchObject({ type: 'error' });
    expect((noRoots as { message: string }).message).toContain('roots');
  });
});

describe('answers on a first call', () => {
  it('delivers valid answers to the first questions, ignores unknown keys, and re-asks invalid ones', async () => {
    const runner = makeRunner();
    const args = { version: '8.0.0' };
    const done = await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      inputResponses: {
        confirm_deploy: accept({ confirm: true }),
        change_ticket: accept({ ticket: 'CHG-8' }),
        unknown: accept({ x: 1 }),
      },
    });
    expect(text(done)).toBe('Deployed 8.0.0 (ticket CHG-8)');
    const partial = expectInput(
      await runner.run({
        flow: 'deploy_production',
        args,
        context: ctx,
        inputResponses: { confirm_deploy: accept({ confirm: 12345 }), change_ticket: accept({ ticket: 'CHG-8' }) },
      }),
    );
    expect(Object.keys(partial.inputRequests)).toEqual(['confirm_deploy']);
  });
});

describe('answers that must have been asked (onlyWhenAsked)', () => {
  const gateInputs = defineInputs({
    confirm: form({ message: 'Go?', schema: z.object({ go: z.boolean() }), onlyWhenAsked: true }),
    note: form({ message: 'Note?', schema: z.object({ note: z.string().max(20) }) }),
  });
  const gate = defineFlow({
    name: 'gate',
    description: 'Asks a confirmation that must be seen, and a note.',
    args: z.object({}),
    inputs: gateInputs,
    machine: setup({
      types: { context: {} as { note: string }, events: {} as InputEvents<typeof gateInputs> },
    }).createMachine({
      context: { note: '' },
      initial: 'asking',
      states: {
        asking: {
          meta: ask(gateInputs, 'confirm', 'note'),
          on: {
            'input.confirm': [
              { guard: ({ event }) => event.action === 'accept' && event.content.go, target: 'noting' },
              { target: 'stopped' },
            ],
          },
        },
        noting: {
          meta: ask(gateInputs, 'note'),
          on: {
            'input.note': {
              target: 'done',
              actions: assign({ note: ({ event }) => (event.action === 'accept' ? event.content.note : '') }),
            },
          },
        },
        done: { type: 'final', output: ({ context }: { context: { note: string } }) => `done: ${context.note}` },
        stopped: { type: 'final', output: 'stopped' },
      },
    }),
  });
  const context = { ...ctx, target: 'gate' };

  it('ignores an answer sent ahead for it and shows the request, holding the other answers sent ahead', async () => {
    const runner = makeRunner({ flows: [gate] });
    const ahead = expectInput(
      await runner.run({
        flow: 'gate',
        args: {},
        context,
        inputResponses: { confirm: accept({ go: true }), note: accept({ note: 'early' }) },
      }),
    );
    expect(Object.keys(ahead.inputRequests)).toEqual(['confirm']);
    const done = await runner.run({
      flow: 'gate',
      args: {},
      context,
      requestState: ahead.requestState,
      inputResponses: { confirm: accept({ go: true }) },
    });
    expect(text(done)).toBe('done: early');
  });

  it('is part of the definition hash', () => {
    const make = (onlyWhenAsked: boolean) =>
      defineFlow({
        name: 'h',
        description: 'h',
        args: z.object({}),
        inputs: defineInputs({ c: form({ message: 'c', schema: z.object({ c: z.boolean() }), onlyWhenAsked }) }),
        machine: setup({}).createMachine({ initial: 'a', states: { a: { type: 'final' } } }),
      });
    expect(make(true).hash).not.toBe(make(false).hash);
  });
});

describe('answers read from own properties only', () => {
  it('delivers nothing found only on the prototype of inputResponses', async () => {
    const runner = makeRunner();
    const args = { version: '12.0.0' };
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    const smuggled = Object.create({
      confirm_deploy: accept({ confirm: true }),
      change_ticket: accept({ ticket: 'CHG-12' }),
    }) as Record<string, unknown>;
    const again = expectInput(
      await runner.run({
        flow: 'deploy_production',
        args,
        context: ctx,
        requestState: first.requestState,
        inputResponses: smuggled,
      }),
    );
    expect(Object.keys(again.inputRequests)).toEqual(['confirm_deploy', 'change_ticket']);
    // Nor on a first call.
    const fresh = expectInput(
      await runner.run({ flow: 'deploy_production', args, context: ctx, inputResponses: smuggled }),
    );
    expect(Object.keys(fresh.inputRequests)).toEqual(['confirm_deploy', 'change_ticket']);
  });
});

describe('a next state too large to mint', () => {
  const smallRunner = (extra: { log?: (e: RunnerLogEvent) => void } = {}) =>
    createRunner({
      flows: [deployFlow],
      codec: createRequestStateCodec({ keys, now, maxTokenBytes: 1200 }),
      now,
      ...extra,
    });

  it('asks the previous questions again from the previous state, saying what is too large and the limit', async () => {
    const events: RunnerLogEvent[] = [];
    const runner = smallRunner({ log: (e) => events.push(e) });
    const args = { version: '13.0.0' };
    const first = expectInput(await runner.run({ flow: 'deploy_production', args, context: ctx }));
    const again = expectInput(
      await runner.run({
        flow: 'deploy_production',
        args,
        context: ctx,
        requestState: first.requestState,
        inputResponses: { change_ticket: accept({ ticket: `CHG-${'4'.repeat(900)}` }) },
      }),
    );
    expect(again.round).toBe(2);
    expect(again.requestState).not.toBe(first.requestState);
    expect(Object.keys(again.inputRequests)).toEqual(['confirm_deploy', 'change_ticket']);
    const message = (again.inputRequests.change_ticket as { params: { message: string } }).params.message;
    expect(message).toMatch(
      /^The answer to "change_ticket" is too large \(9\d\d characters\).*over its limit of 1,200\./,
    );
    expect(message).toContain('\n\nChange ticket for this deployment?');
    expect(events.some((e) => e.type === 'flow_error')).toBe(true);
    const done = await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: again.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-13' }) },
    });
    expect(text(done)).toBe('Deployed 13.0.0 (ticket CHG-13)');
  });

  it('turns any other minting failure into a sentence too', async () => {
    const bigintInputs = defineInputs({ n: form({ message: 'n?', schema: z.object({ n: z.number() }) }) });
    const bigint = defineFlow({
      name: 'bigint',
      description: 'Keeps a bigint in its context, which no state can hold.',
      args: z.object({}),
      inputs: bigintInputs,
      machine: setup({
        types: { context: {} as { big: bigint }, events: {} as InputEvents<typeof bigintInputs> },
      }).createMachine({
        context: { big: 1n },
        initial: 'asking',
        states: { asking: { meta: ask(bigintInputs, 'n') } },
      }),
    });
    const runner = makeRunner({ flows: [bigint] });
    const outcome = await runner.run({ flow: 'bigint', args: {}, context: { ...ctx, target: 'bigint' } });
    expect(outcome).toMatchObject({ type: 'error', message: expect.stringContaining('could not save its state') });
  });
});
