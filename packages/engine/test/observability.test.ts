import { describe, expect, it } from 'vitest';
import { createActor, createMachine, fromPromise, type InspectionEvent } from 'xstate';
import { z } from 'zod';
import {
  type AuditEntry,
  type AuditLog,
  type CallContext,
  createRequestStateCodec,
  createRunner,
  defineFlow,
  generateKey,
  type InputRequiredOutcome,
  inspectionSessionId,
} from '../src/index.js';
import { inspectDirectly } from '../src/inspection/inspector.js';
import { deployFlow } from './fixtures/deployFlow.js';

/** An AuditLog kept in an array (the store's real ones are tested in @baton/store). */
function arrayAuditLog(): AuditLog & { entries: AuditEntry[] } {
  const entries: AuditEntry[] = [];
  return {
    entries,
    async append(entry) {
      entries.push(entry);
    },
    async instances() {
      return [];
    },
    async rounds(fid) {
      return entries.filter((e) => e.fid === fid);
    },
  };
}

const ctx: CallContext = { principal: 'alice', method: 'tools/call', target: 'deploy_production' };
const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

describe('audit trail', () => {
  it('records one entry per round: states, asked keys, answers (no values by default), outcome', async () => {
    const audit = arrayAuditLog();
    const runner = createRunner({
      flows: [deployFlow],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      audit,
    });
    const args = { version: '1.0.0' };
    const first = (await runner.run({ flow: 'deploy_production', args, context: ctx })) as InputRequiredOutcome;
    const second = (await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: 'nope' }), change_ticket: accept({ ticket: 'CHG-1' }) },
    })) as InputRequiredOutcome;
    await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: second.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }) },
    });
    const [r1, r2, r3] = audit.entries;
    expect(audit.entries.map((e) => [e.round, e.outcome])).toEqual([
      [1, 'input_required'],
      [2, 'input_required'],
      [3, 'complete'],
    ]);
    expect(new Set(audit.entries.map((e) => e.fid)).size).toBe(1);
    expect(r1).toMatchObject({ before: null, after: 'awaiting', path: ['planning', 'awaiting'] });
    expect(r1!.asked).toEqual(['confirm_deploy', 'change_ticket']);
    expect(r2!.received).toEqual([
      { key: 'confirm_deploy', action: 'invalid' },
      { key: 'change_ticket', action: 'accept' },
    ]);
    expect(r2!.asked).toEqual(['confirm_deploy']);
    expect(r3).toMatchObject({ before: 'awaiting', after: 'deployed', asked: [] });
    // The ticket, held since round 2, shows in round 3 that used it.
    expect(r3!.received).toEqual([
      { key: 'confirm_deploy', action: 'accept' },
      { key: 'change_ticket', action: 'accept', held: true },
    ]);
    // Without auditValues: no arguments; no readable principal without storeRequesterNames.
    expect(r1!.args).toBeUndefined();
    expect(r1!.principalName).toBeUndefined();
    // Rounds that ask record when the state they handed out expires (the runner's 30 min by default).
    expect(r1!.expiresAt! - r1!.at).toBeGreaterThan(29 * 60_000);
    expect(r1!.expiresAt! - r1!.at).toBeLessThanOrEqual(30 * 60_000 + 1000);
    expect(r3!.expiresAt).toBeUndefined();
    expect(r3!.path).toEqual(['awaiting', 'confirmed', 'deployed']);
    expect(JSON.stringify(audit.entries)).not.toContain('CHG-1');
    expect(JSON.stringify(audit.entries)).not.toContain('alice');
  });

  it('records answer values only for flows that opt in', async () => {
    const audit = arrayAuditLog();
    const flow = defineFlow({ ...deployFlowConfig(), auditValues: true });
    const runner = createRunner({ flows: [flow], codec: createRequestStateCodec({ keys: [generateKey()] }), audit });
    const first = (await runner.run({ flow: flow.name, args: { version: '2' }, context: ctx })) as InputRequiredOutcome;
    await runner.run({
      flow: flow.name,
      args: { version: '2' },
      context: ctx,
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-77' }) },
    });
    expect(audit.entries[1]!.received[1]).toEqual({
      key: 'change_ticket',
      action: 'accept',
      value: accept({ ticket: 'CHG-77' }),
    });
  });

  it('records arguments with auditValues, sensitive paths redacted, and the caller by name when names are stored', async () => {
    const audit = arrayAuditLog();
    const flow = defineFlow({
      ...deployFlowConfig(),
      args: z.object({ version: z.string(), token: z.string() }) as never,
      auditValues: true,
      sensitive: ['token'],
    });
    const runner = createRunner({
      flows: [flow],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      audit,
      storeRequesterNames: true,
    });
    await runner.run({ flow: flow.name, args: { version: '4', token: 'tok-secret-1' }, context: ctx });
    expect(audit.entries[0]).toMatchObject({ args: { version: '4', token: '[redacted]' }, principalName: 'alice' });
    expect(JSON.stringify(audit.entries)).not.toContain('tok-secret-1');
  });
});

function deployFlowConfig() {
  return {
    name: deployFlow.name,
    description: deployFlow.description,
    args: deployFlow.args as never,
    inputs: deployFlow.inputs,
    machine: deployFlow.machine,
  };
}

describe('inspection across rounds', () => {
  it('reports every round of one instance under one stable session, starting from the restored state', async () => {
    const events: InspectionEvent[] = [];
    const runner = createRunner({
      flows: [deployFlow],
      codec: createRequestStateCodec({ keys: [generateKey()] }),
      inspect: (event) => events.push(event),
    });
    const args = { version: '3.0.0' };
    const first = (await runner.run({ flow: 'deploy_production', args, context: ctx })) as InputRequiredOutcome;
    const session = inspectionSessionId(first.fid);
    const roundOne = events.length;
    await runner.run({
      flow: 'deploy_production',
      args,
      context: ctx,
      requestState: first.requestState,
      inputResponses: { confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-3' }) },
    });
    const rootEvents = events.filter((e) => e.actorRef.sessionId === session);
    expect(rootEvents.length).toBeGreaterThan(4);
    expect(events.every((e) => e.rootId === session)).toBe(true);
    // Round two starts from the restored state, then the answers are visible events.
    const secondRound = events.slice(roundOne).filter((e) => e.actorRef.sessionId === session);
    const firstSnapshot = secondRound.find((e) => e.type === '@xstate.snapshot') as unknown as {
      snapshot: { value: unknown };
    };
    expect(firstSnapshot.snapshot.value).toBe('awaiting');
    const delivered = secondRound
      .filter((e) => e.type === '@xstate.event')
      .map((e) => (e as { event: { type: string } }).event.type);
    expect(delivered).toContain('input.confirm_deploy');
    expect(delivered).toContain('input.change_ticket');
    // The invoked promise of round one is a child under the same session.
    expect(events.some((e) => e.actorRef.sessionId.startsWith(`${session}/`))).toBe(true);
  });
});

describe('inspectDirectly', () => {
  // A machine restored with an invoked child machine (which has a child of its own) and a promise.
  const child = createMachine({
    id: 'child',
    initial: 'on',
    invoke: { id: 'grandchild', src: fromPromise(() => new Promise(() => {})) },
    states: { on: { on: { ping: 'on' } } },
  });
  const machine = createMachine({
    id: 'parent',
    initial: 'a',
    states: {
      a: { on: { go: 'b' } },
      b: {
        invoke: [
          { id: 'sub', src: child },
          { id: 'wait', src: fromPromise(() => new Promise(() => {})) },
        ],
        on: { go: 'c' },
      },
      c: { type: 'final' },
    },
  });
  const persisted = (() => {
    const actor = createActor(machine).start();
    actor.send({ type: 'go' });
    const snapshot = actor.getPersistedSnapshot();
    actor.stop();
    return snapshot;
  })();
  /** What a restored round reports: event types, the actor (by id), the event's type. */
  function play(direct: boolean) {
    const seen: string[] = [];
    const observer = (e: InspectionEvent) => {
      const root = e.rootId === e.actorRef.sessionId;
      seen.push(
        `${e.type} ${root ? 'root' : (e.actorRef as { id?: string }).id} ${(e as { event?: { type: string } }).event?.type ?? ''}`,
      );
    };
    const actor = direct
      ? createActor(machine, { snapshot: persisted })
      : createActor(machine, { snapshot: persisted, inspect: observer });
    if (direct) inspectDirectly(actor, observer, true);
    actor.start();
    actor.send({ type: 'go' });
    actor.stop();
    return seen;
  }

  it("reports a restored actor's events as XState's own dispatch does, its construction included", () => {
    const xstate = play(false);
    expect(xstate.filter((e) => e.startsWith('@xstate.actor'))).toEqual([
      '@xstate.actor root ',
      '@xstate.actor sub ',
      '@xstate.actor grandchild ',
      '@xstate.actor wait ',
    ]);
    expect(play(true)).toEqual(xstate);
  });

  it('takes the events from the hook it replaces (a later XState without it falls back, slower)', () => {
    const actor = createActor(machine, { snapshot: persisted });
    expect(typeof (actor.system as { _sendInspectionEvent?: unknown })._sendInspectionEvent).toBe('function');
  });
});
