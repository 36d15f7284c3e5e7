/**
 * `event()` waits through the runner (`runner.sendEvent`), on the memory
 * ledger and on SQLite: `deploy_production` with a commit parks waiting for
 * `ci.finished` of that commit and asks for its confirmation once CI reports
 * green (without a commit, or without a ledger, it asks at once as before);
 * the machine receives a typed event; a red build ends it; an event before
 * the wait is delivered when the wait begins (lookback), once; an event id
 * seen before delivers nothing again; the 30-minute timeout fired by the
 * scheduler leaves a stale waiter no event reaches; of two events racing for
 * one waiter exactly one is delivered; bad data is refused naming the field;
 * and two flows declaring one event name differently are refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryAuditLog, createMemoryLedger } from '@baton/store';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, describe, expect, expectTypeOf, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { ciFinished, deployProduction } from '../../../examples/approvals/deployProduction.js';
import {
  ask,
  type CallContext,
  createRequestStateCodec,
  createRunner,
  defineFlow,
  defineInputs,
  event,
  FlowDefinitionError,
  type FullLedger,
  generateKey,
  type InputEvents,
  type RoundOutcome,
} from '../src/index.js';

const keys = [generateKey()];
const alice: CallContext = { principal: 'alice', method: 'tools/call', target: 'deploy_production' };
const dir = mkdtempSync(join(tmpdir(), 'baton-events-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let made = 0;
const LEDGERS: Record<string, () => FullLedger> = {
  memory: () => createMemoryLedger({ pruneIntervalMs: 0 }),
  sqlite: () => createSqliteLedger({ path: join(dir, `ledger-${++made}.db`), pruneIntervalMs: 0 }),
};
const MINUTE = 60_000;

const waitingId = (outcome: RoundOutcome) => {
  expect(outcome).toMatchObject({ type: 'complete', result: { structuredContent: { status: 'waiting' } } });
  return (outcome as unknown as { result: { structuredContent: { id: string } } }).result.structuredContent.id;
};
const text = (outcome: unknown) => JSON.stringify(outcome);

describe.each(Object.keys(LEDGERS))('event waits on %s', (name) => {
  const setupRunner = (ledger: FullLedger, clock: { now: number }) => {
    const audit = createMemoryAuditLog();
    const now = () => clock.now;
    const runner = createRunner({
      flows: [deployProduction],
      codec: createRequestStateCodec({ keys, now }),
      now,
      ledger,
      audit,
      holdMs: 5,
      pollMs: 1,
      waitInCallSeconds: 0,
    });
    return { runner, audit };
  };
  const deploy = (runner: ReturnType<typeof setupRunner>['runner'], commit?: string) =>
    runner.run({
      flow: 'deploy_production',
      args: { version: '1.2.3', ...(commit ? { commit } : {}) },
      context: alice,
    });

  it('parks deploy_production until CI reports its commit green, then asks for the confirmation', async () => {
    const ledger = LEDGERS[name]!();
    const clock = { now: Date.UTC(2026, 11, 2, 9) };
    const { runner, audit } = setupRunner(ledger, clock);
    expect(runner.awaitsEvents).toBe(true);
    // Without a commit: asked at once, as before.
    expect((await deploy(runner)).type).toBe('input_required');

    const id = waitingId(await deploy(runner, 'a1b2c3d'));
    const row = await ledger.requests.getRequest(id);
    expect(row).toMatchObject({ status: 'waiting', waitingFor: [{ key: 'ci', event: 'ci.finished' }] });
    expect(row?.dueAt).toBe(clock.now + 30 * MINUTE);
    // Another commit's report reaches nobody.
    expect(await runner.sendEvent('ci.finished', { data: { commit: 'fffffff', status: 'success' } })).toMatchObject({
      status: 'delivered',
      delivered: 0,
    });
    const sent = await runner.sendEvent('ci.finished', {
      id: 'build-7',
      data: { commit: 'a1b2c3d', status: 'success' },
    });
    expect(sent).toEqual({ status: 'delivered', delivered: 1, duplicate: false, id: 'build-7' });
    expect((await ledger.requests.getRequest(id))?.waitingFor).toEqual([]);
    // The requester comes back to the confirmation.
    const resumed = await runner.resume({ id, context: { principal: 'alice' } });
    expect(resumed).toMatchObject({ type: 'input_required' });
    expect(Object.keys((resumed as { inputRequests: object }).inputRequests)).toEqual([
      'confirm_deploy',
      'change_ticket',
    ]);
    expect((await audit.rounds(id)).map((e) => e.via)).toContain('event');
    // The retry of the same id is answered with the first count and moves nothing.
    const version = (await ledger.requests.getRequest(id))?.version;
    expect(
      await runner.sendEvent('ci.finished', { id: 'build-7', data: { commit: 'a1b2c3d', status: 'success' } }),
    ).toEqual({
      status: 'delivered',
      delivered: 1,
      duplicate: true,
      id: 'build-7',
    });
    expect((await ledger.requests.getRequest(id))?.version).toBe(version);
  });

  it('ends on a red build, and refuses data its schema does not take, naming the field', async () => {
    const ledger = LEDGERS[name]!();
    const clock = { now: Date.UTC(2026, 11, 2, 9) };
    const { runner } = setupRunner(ledger, clock);
    const id = waitingId(await deploy(runner, 'bad0bad'));
    expect(await runner.sendEvent('ci.finished', { data: { commit: 'bad0bad', status: 'green' } })).toEqual({
      status: 'invalid',
      problem: expect.stringMatching(/^data\.status: must be one of/),
    });
    expect(await runner.sendEvent('ci.finished', { id: ' spaced ', data: {} })).toMatchObject({ status: 'invalid' });
    expect(await runner.sendEvent('ci.done', { data: {} })).toMatchObject({ status: 'unknown' });
    await runner.sendEvent('ci.finished', { data: { commit: 'bad0bad', status: 'failure' } });
    expect(await ledger.requests.getRequest(id)).toMatchObject({ status: 'completed' });
    expect(text(await runner.resume({ id, context: { principal: 'alice' } }))).toContain(
      'CI reported failure for bad0bad; 1.2.3 was not deployed.',
    );
  });

  it('delivers an event that arrived before the wait when the wait begins, once', async () => {
    const ledger = LEDGERS[name]!();
    const clock = { now: Date.UTC(2026, 11, 2, 9) };
    const { runner } = setupRunner(ledger, clock);
    expect(
      await runner.sendEvent('ci.finished', { id: 'early', data: { commit: 'e0e0e0e', status: 'success' } }),
    ).toMatchObject({
      delivered: 0,
    });
    clock.now += MINUTE;
    // The first call finds it in its lookback window: the confirmation is asked in the same call.
    const first = await deploy(runner, 'e0e0e0e');
    expect(first.type).toBe('input_required');
    // Past the window (5 minutes by default), a new wait does not receive it.
    clock.now += 5 * MINUTE;
    waitingId(await deploy(runner, 'e0e0e0e'));
  });

  it('never delivers to a wait that timed out (the scheduler fired it): the stale waiter is not reached', async () => {
    const ledger = LEDGERS[name]!();
    const clock = { now: Date.UTC(2026, 11, 2, 9) };
    const { runner } = setupRunner(ledger, clock);
    const id = waitingId(await deploy(runner, 'de1a7ed'));
    clock.now += 30 * MINUTE + 1;
    expect(await runner.fireDueTimers()).toMatchObject({ fired: 1 });
    expect(await ledger.requests.getRequest(id)).toMatchObject({ status: 'completed' }); // its own timeout branch
    expect(await runner.sendEvent('ci.finished', { data: { commit: 'de1a7ed', status: 'success' } })).toMatchObject({
      delivered: 0,
    });
    expect(text(await runner.resume({ id, context: { principal: 'alice' } }))).toContain(
      'CI did not report on de1a7ed within 30 minutes',
    );
  });

  it('of two events racing for one waiter, delivers exactly one', async () => {
    const ledger = LEDGERS[name]!();
    const clock = { now: Date.UTC(2026, 11, 2, 9) };
    const { runner } = setupRunner(ledger, clock);
    const other = setupRunner(ledger, clock).runner;
    const id = waitingId(await deploy(runner, 'cafe123'));
    const [a, b] = await Promise.all([
      runner.sendEvent('ci.finished', { id: 'one', data: { commit: 'cafe123', status: 'success' } }),
      other.sendEvent('ci.finished', { id: 'two', data: { commit: 'cafe123', status: 'failure' } }),
    ]);
    const delivered = [a, b].map((r) => (r.status === 'delivered' ? r.delivered : -1));
    expect(delivered.sort()).toEqual([0, 1]);
    // It moved on once: to the confirmation (success) or to its end (failure), never both.
    expect((await ledger.requests.getRequest(id))?.waitingFor).toEqual([]);
  });
});

describe('event()', () => {
  it('types the event the machine receives', () => {
    const inputs = defineInputs({ ci: ciFinished });
    type Received = Extract<InputEvents<typeof inputs>, { type: 'input.ci' }>;
    expectTypeOf<Received['data']>().toEqualTypeOf<{ commit: string; status: 'success' | 'failure' }>();
    expectTypeOf<Received['id']>().toEqualTypeOf<string>();
  });

  it('is refused when flows declare one event name differently, or a name it cannot route', () => {
    const flowWith = (name: string, spec: ReturnType<typeof event>) => {
      const inputs = defineInputs({ e: spec });
      return defineFlow({
        name,
        description: 'waits',
        args: z.object({}),
        inputs,
        machine: setup({ types: { events: {} as InputEvents<typeof inputs> } }).createMachine({
          id: name,
          initial: 'w',
          states: { w: { meta: ask(inputs, 'e'), on: { 'input.e': 'd' } }, d: { type: 'final' } },
        }),
      });
    };
    const a = flowWith('a', event({ name: 'x.done', schema: z.object({ n: z.number() }) }));
    const b = flowWith('b', event({ name: 'x.done', schema: z.object({ s: z.string() }) }));
    const codec = createRequestStateCodec({ keys });
    expect(() => createRunner({ flows: [a, b], codec, ledger: createMemoryLedger({ pruneIntervalMs: 0 }) })).toThrow(
      FlowDefinitionError,
    );
    expect(() => event({ name: 'has space', schema: z.object({}) })).toThrow(FlowDefinitionError);
    expect(() => event({ name: 'x', schema: z.object({}), match: () => 'k' })).toThrow(/both/);
    // The same declaration shared by two flows is fine.
    const shared = event({ name: 'y.done', schema: z.object({}) });
    expect(createRunner({ flows: [flowWith('c', shared), flowWith('d', shared)], codec }).awaitsEvents).toBe(true);
  });

  it('needs a ledger only once a flow waits: deploy_production without one asks at once, with a commit it says so', async () => {
    const runner = createRunner({ flows: [deployProduction], codec: createRequestStateCodec({ keys }) });
    expect((await runner.run({ flow: 'deploy_production', args: { version: '1' }, context: alice })).type).toBe(
      'input_required',
    );
    const waiting = await runner.run({
      flow: 'deploy_production',
      args: { version: '1', commit: 'abcdef0' },
      context: alice,
    });
    expect(waiting).toMatchObject({ type: 'error', message: expect.stringContaining('needs a ledger') });
  });
});
