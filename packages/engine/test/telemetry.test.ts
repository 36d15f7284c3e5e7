/**
 * The engine's spans, in process, on the real OpenTelemetry SDK (`@opentelemetry/sdk-trace` with an
 * in-memory exporter, AsyncLocalStorage's context manager, the W3C propagator): before an SDK is
 * registered a state carries no trace context and no span is made; once one is, a flow instance's
 * rounds are one trace (the second round a child of the first, through the `traceparent` kept in
 * the sealed body), a round under an incoming context is its child and links the instance's trace,
 * and a state minted before tracing still opens (its instance's trace starts there). An outbox
 * message a round raises carries no `traceparent` without an SDK, and the round's with one (on the
 * memory ledger), so its deliveries join the instance's trace.
 */

import { createMemoryLedger } from '@baton/store';
import { context, propagation, ROOT_CONTEXT, type SpanContext, TraceFlags, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import {
  type CallContext,
  createRequestStateCodec,
  createRunner,
  defineFlow,
  defineInputs,
  generateKey,
  type InputRequiredOutcome,
  notify,
  type RoundOutcome,
} from '../src/index.js';
import { deployFlow } from './fixtures/deployFlow.js';

const keys = [generateKey()];
const codec = createRequestStateCodec({ keys });
const runner = createRunner({ flows: [deployFlow], codec });
const ctx: CallContext = { principal: 'alice', method: 'tools/call', target: 'deploy_production' };
const args = { version: '1.2.3' };
const answers = {
  confirm_deploy: { action: 'accept', content: { confirm: true } },
  change_ticket: { action: 'accept', content: { ticket: 'CHG-42' } },
};
const binding = {
  principal: 'alice',
  flow: 'deploy_production',
  method: 'tools/call',
  target: 'deploy_production',
  args,
};

/** Announces itself and ends in its first round: one outbox message, written on its own. */
const announce = defineFlow({
  name: 'announce',
  description: 'Announces and ends.',
  args: z.object({}),
  inputs: defineInputs({}),
  machine: setup({}).createMachine({
    id: 'announce',
    initial: 'done',
    states: { done: { type: 'final', entry: notify({ kind: 'announced' }), output: () => 'ok' } },
  }),
});
const outboxLedger = createMemoryLedger({ pruneIntervalMs: 0 });
const outboxRunner = createRunner({ flows: [announce], codec, ledger: outboxLedger, outbox: true });
/** Play `announce` once; the outbox messages it raised. */
async function announced() {
  const done = await outboxRunner.run({
    flow: 'announce',
    args: {},
    context: { principal: 'alice', method: 'tools/call', target: 'announce' },
  });
  expect(done.type).toBe('complete');
  return outboxLedger.outbox.claimOutbox({
    now: Number.MAX_SAFE_INTEGER - 1,
    leaseUntil: Number.MAX_SAFE_INTEGER,
    limit: 100,
  });
}

function expectInput(outcome: RoundOutcome): InputRequiredOutcome {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${outcome.type}`);
  return outcome;
}
const bodyOf = (token: string) => codec.open(token, binding).body as { tc?: string };
const first = () => runner.run({ flow: 'deploy_production', args, context: ctx }).then(expectInput);
const second = (requestState: string) =>
  runner.run({ flow: 'deploy_production', args, context: ctx, requestState, inputResponses: answers });

const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
const rounds = () => exporter.getFinishedSpans().filter((s) => s.name === 'baton.round');
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const childrenOf = (span: ReadableSpan) =>
  exporter
    .getFinishedSpans()
    .filter((s) => parentOf(s) === span.spanContext().spanId)
    .map((s) => s.name);

let untraced: InputRequiredOutcome;

describe('without an SDK', () => {
  it('keeps no trace context in the state and makes no span', async () => {
    untraced = await first();
    expect(bodyOf(untraced.requestState).tc).toBeUndefined();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('writes outbox messages with no traceparent', async () => {
    const messages = await announced();
    expect(messages).toHaveLength(1);
    expect(messages[0]).not.toHaveProperty('traceparent');
  });
});

describe('with the SDK registered', () => {
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  });
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
  });
  beforeEach(() => exporter.reset());

  it("puts an instance's rounds in one trace: the second a child of the first", async () => {
    const one = await first();
    const tc = bodyOf(one.requestState).tc;
    expect(tc).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect((await second(one.requestState)).type).toBe('complete');
    const [r1, r2] = rounds();
    expect(r2!.spanContext().traceId).toBe(r1!.spanContext().traceId);
    expect(parentOf(r2!)).toBe(r1!.spanContext().spanId);
    expect(tc).toBe(`00-${r1!.spanContext().traceId}-${r1!.spanContext().spanId}-01`);
    expect(parentOf(r1!)).toBeUndefined();
    expect(r1!.attributes).toMatchObject({
      'baton.flow': 'deploy_production',
      'baton.round': 1,
      'baton.via': 'call',
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'deploy_production',
      'baton.outcome': 'input_required',
      'baton.state.after': 'awaiting',
    });
    expect(r2!.attributes).toMatchObject({
      'baton.round': 2,
      'baton.state.before': 'awaiting',
      'baton.state.after': 'deployed',
      'baton.outcome': 'complete',
    });
    expect(r1!.attributes['enduser.pseudo.id']).toBe(codec.digest('alice', 'audit-principal'));
    expect(childrenOf(r1!)).toEqual(['baton.state.seal', 'baton.round']);
    expect(childrenOf(r2!)).toEqual(['baton.state.open']);
    // Nothing the caller said is in an attribute.
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))).not.toMatch(/CHG-42|alice/);
  });

  it('makes a round under an incoming trace context its child, linked to the instance', async () => {
    const one = await first();
    const [r1] = rounds();
    const caller: SpanContext = {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    };
    await context.with(trace.setSpanContext(ROOT_CONTEXT, caller), () => second(one.requestState));
    const r2 = rounds()[1]!;
    expect(r2.spanContext().traceId).toBe(caller.traceId);
    expect(parentOf(r2)).toBe(caller.spanId);
    expect(r2.links.map((l) => l.context.spanId)).toEqual([r1!.spanContext().spanId]);
  });

  it("writes the raising round's traceparent with its outbox messages", async () => {
    const messages = await announced();
    const round = exporter
      .getFinishedSpans()
      .find((s) => s.name === 'baton.round' && s.attributes['baton.flow'] === 'announce');
    const { traceId, spanId } = round!.spanContext();
    expect(messages.map((m) => m.traceparent)).toEqual([`00-${traceId}-${spanId}-01`]);
  });

  it('opens a state minted before tracing; its instance is traced from there', async () => {
    expect((await second(untraced.requestState)).type).toBe('complete');
    const [r2] = rounds();
    expect(r2!.attributes['baton.round']).toBe(2);
    expect(parentOf(r2!)).toBeUndefined();
  });
});
