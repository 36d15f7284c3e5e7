/**
 * The engine's OpenTelemetry seam, on `@opentelemetry/api` only: the tracer
 * (`@baton/engine`), the span and attribute names, and what the rest of the
 * engine asks of tracing. `tracing()` says whether an SDK is registered at all
 * (without one a round does no tracing work and allocates nothing for it);
 * `RoundTrace` is one round's span, whose parent is the incoming W3C trace
 * context when the caller sent one and otherwise the flow instance's own
 * (kept in its sealed body, `RoundBody.tc`, written by `activeTraceparent`),
 * so every round of one instance is in one trace, whichever server plays it;
 * `childSpan` starts a child of the active round span, or nothing when no span
 * records; `inInstanceSpan` is an instance's work outside a round (recording a
 * decision); `settledState` is the round's word on the state it ended in. The
 * trace context is read and written with the globally registered propagator
 * (W3C trace context under `baton serve --otlp`), never parsed here. Imports
 * nothing of the engine: any folder may use it (`docs/observability.md`).
 */

import { createRequire } from 'node:module';
import {
  type Attributes,
  type Context,
  context,
  type Link,
  ProxyTracerProvider,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

/** The instrumentation scope's name. */
export const TRACER_NAME = '@baton/engine';

/**
 * The version of `@baton/engine`, for the instrumentation scope (read once from its package.json,
 * which sits two folders up in `src/` and in `dist/` alike; `undefined` when a bundler moved it).
 */
const VERSION = ((): string | undefined => {
  try {
    return (createRequire(import.meta.url)('../../package.json') as { version?: string }).version;
  } catch {
    return undefined;
  }
})();

const tracer = trace.getTracer(TRACER_NAME, VERSION);

/** Span names. */
export const SPAN = {
  round: 'baton.round',
  open: 'baton.state.open',
  seal: 'baton.state.seal',
  redeem: 'baton.ledger.redeem',
  park: 'baton.ledger.park',
  step: 'baton.step',
  decision: 'baton.decision.record',
  handOver: 'baton.decision.delegate',
  eventDeliver: 'baton.event.deliver',
} as const;

/**
 * Attribute names. `mcp.method.name`, `gen_ai.tool.name`, `gen_ai.prompt.name`,
 * `mcp.resource.uri`, `enduser.pseudo.id`, `db.operation.name`, `messaging.operation.type`,
 * `messaging.destination.name` and `error.type` are the OpenTelemetry semantic conventions' (the
 * MCP, gen_ai, enduser and messaging ones from its incubating entry,
 * copied here as that package advises for incubating names); the rest are Baton's own, under
 * `baton.`.
 */
export const ATTR = {
  mcpMethod: 'mcp.method.name',
  toolName: 'gen_ai.tool.name',
  promptName: 'gen_ai.prompt.name',
  resourceUri: 'mcp.resource.uri',
  pseudoUser: 'enduser.pseudo.id',
  dbOperation: 'db.operation.name',
  errorType: 'error.type',
  flow: 'baton.flow',
  instance: 'baton.instance.id',
  round: 'baton.round',
  via: 'baton.via',
  before: 'baton.state.before',
  after: 'baton.state.after',
  outcome: 'baton.outcome',
  stepKey: 'baton.step.key',
  stepAttempt: 'baton.step.attempt',
  decisionKey: 'baton.decision.key',
  decisionAction: 'baton.decision.action',
  redemption: 'baton.ledger.redemption',
  requestStatus: 'baton.request.status',
  parkResult: 'baton.ledger.park.result',
  messagingOperation: 'messaging.operation.type',
  messagingDestination: 'messaging.destination.name',
  eventDelivered: 'baton.event.delivered',
} as const;

/**
 * Whether an OpenTelemetry SDK is registered. Without one, `@opentelemetry/api` answers every call
 * with no-ops; this check lets a round skip even those (and every attribute it would compute).
 */
export function tracing(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer(TRACER_NAME, VERSION) !== undefined;
}

/** The MCP conventions' attribute for what a method names. */
function targetAttribute(method: string | undefined): string {
  return method === 'prompts/get' ? ATTR.promptName : method === 'resources/read' ? ATTR.resourceUri : ATTR.toolName;
}

/** A state value as an attribute: a string as is, a nested value as JSON. */
export function stateAttribute(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * The W3C `traceparent` of the active span, to keep with a flow instance (`RoundBody.tc`);
 * `undefined` when no span records (no SDK, or not sampled), so nothing is added to a state then.
 */
export function activeTraceparent(): string | undefined {
  const active = context.active();
  if (!trace.getSpan(active)?.isRecording()) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(active, carrier);
  return carrier.traceparent;
}

/** The span context a kept `traceparent` names, through the registered propagator. */
function instanceContext(traceparent: string | undefined) {
  if (traceparent === undefined) return undefined;
  return trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
}

/** What a round span starts with. */
export interface RoundStart {
  readonly flow: string;
  /** The flow instance (absent when the state that names it did not open). */
  readonly fid?: string;
  readonly round?: number;
  readonly via: string;
  /** The MCP method of a round a client's request plays (`tools/call`, `prompts/get`, `resources/read`). */
  readonly method?: string;
  /** What the method names: the tool or prompt, or the URI read. */
  readonly target?: string;
  /** The keyed hash of the caller's principal (never the principal). */
  readonly principalHash?: string;
}

/** What a round span ends with (the state after is the round's own word: {@link settledState}). */
export interface RoundEndAttributes {
  readonly outcome: string;
  readonly before?: unknown;
}

/** The state a round's machine settled in, on the active round span (when it records). */
export function settledState(value: unknown): void {
  const span = trace.getActiveSpan();
  if (span?.isRecording()) span.setAttribute(ATTR.after, stateAttribute(value));
}

/** An attribute of the active span, when it records (said once a span's work is done). */
export function activeAttribute(name: string, value: string | number | boolean): void {
  const span = trace.getActiveSpan();
  if (span?.isRecording()) span.setAttribute(name, value);
}

/** Now, in ms since the epoch with a fraction (span times finer than `Date.now()`). */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * One round's span. Created where a round begins (`new RoundTrace()`, only when `tracing()`: its
 * start time is then), started by `begin` once the instance's trace context is known (opening
 * the state that holds it is a `mark`: a child recorded with its times), run in by `run`, ended
 * by `end`. Its parent: the active context's span when the caller sent a trace context (the
 * instance's first round is then linked when it is in another trace), else the instance's first
 * round, else none (the instance's first round starts its trace).
 */
export class RoundTrace {
  readonly #startTime = epochMs();
  readonly #marks: { name: string; start: number; end: number }[] = [];
  #span: Span | undefined;
  #context: Context | undefined;

  /** A child that ran before the span could start, kept with its times. */
  mark(name: string, start: number, end: number): void {
    this.#marks.push({ name, start, end });
  }

  /** Start the span (once: a replayed attempt of the same round keeps it). */
  begin(start: RoundStart, instance: string | undefined): void {
    if (this.#span) return;
    const active = context.active();
    const incoming = trace.getSpanContext(active);
    const kept = instanceContext(instance);
    let parent = active;
    let links: Link[] | undefined;
    if (incoming && trace.isSpanContextValid(incoming)) {
      if (kept && kept.traceId !== incoming.traceId) links = [{ context: kept }];
    } else if (kept) {
      parent = trace.setSpanContext(active, kept);
    }
    const attributes: Attributes = { [ATTR.flow]: start.flow, [ATTR.via]: start.via };
    if (start.fid !== undefined) attributes[ATTR.instance] = start.fid;
    if (start.round !== undefined) attributes[ATTR.round] = start.round;
    if (start.method) attributes[ATTR.mcpMethod] = start.method;
    if (start.target !== undefined) attributes[targetAttribute(start.method)] = start.target;
    if (start.principalHash) attributes[ATTR.pseudoUser] = start.principalHash;
    const span = tracer.startSpan(
      SPAN.round,
      {
        kind: start.method ? SpanKind.SERVER : SpanKind.INTERNAL,
        attributes,
        startTime: this.#startTime,
        ...(links ? { links } : {}),
      },
      parent,
    );
    this.#span = span;
    this.#context = trace.setSpan(parent, span);
    for (const m of this.#marks) tracer.startSpan(m.name, { startTime: m.start }, this.#context).end(m.end);
  }

  #before: unknown;

  /** The state the round found (`end` says it when not told). */
  found(before: unknown): void {
    this.#before = before;
  }

  /** Run `fn` in the round span's context (after `begin`). */
  run<T>(fn: () => T): T {
    return this.#context ? context.with(this.#context, fn) : fn();
  }

  /** End the span with the round's outcome, or `error`, what cut the round short (after `begin`). */
  end(attributes: RoundEndAttributes | undefined, error?: unknown): void {
    const span = this.#span;
    if (!span) return;
    if (attributes && span.isRecording()) {
      span.setAttribute(ATTR.outcome, attributes.outcome);
      const before = attributes.before ?? this.#before;
      if (before !== undefined && before !== null) span.setAttribute(ATTR.before, stateAttribute(before));
      if (attributes.outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR });
    }
    if (error !== undefined) failed(span, error);
    span.end();
  }
}

/** A span's error: its type (the error's class) and status; never the message, which may quote input. */
export function failed(span: Span, error: unknown): void {
  span.setAttribute(ATTR.errorType, error instanceof Error ? error.name : typeof error);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/**
 * A child of the active span, or `undefined` when none records (no SDK, not sampled, or outside a
 * round): a caller sets its attributes and ends it only then.
 */
export function childSpan(name: string, attributes?: Attributes): Span | undefined {
  if (!trace.getActiveSpan()?.isRecording()) return undefined;
  return tracer.startSpan(name, attributes ? { attributes } : {});
}

/**
 * `work` as it is, ended in `span` when one records (a {@link childSpan}): `describe` tells the
 * span what the work came to, a failure marks it ({@link failed}), and the span ends either way.
 * Without a span, `work` itself is returned: nothing is added to the call.
 */
export function spanned<T>(
  span: Span | undefined,
  work: Promise<T>,
  describe?: (span: Span, value: T) => void,
): Promise<T> {
  if (!span) return work;
  return work.then(
    (value) => {
      describe?.(span, value);
      span.end();
      return value;
    },
    (error: unknown) => {
      failed(span, error);
      span.end();
      throw error;
    },
  );
}

/**
 * A span of its own for work outside a round that belongs to a flow instance (recording a
 * decision): child of the incoming trace context when there is one, else of the instance's kept
 * one (`instance` and `attributes` are asked only then). `fn` runs in its context (a round it
 * starts is its child); without an SDK, `fn` just runs.
 */
export async function inInstanceSpan<T>(
  name: string,
  instance: () => string | undefined,
  attributes: () => Attributes,
  fn: () => Promise<T>,
): Promise<T> {
  if (!tracing()) return fn();
  const active = context.active();
  const incoming = trace.getSpanContext(active);
  const kept = instanceContext(instance());
  const parent =
    incoming && trace.isSpanContextValid(incoming) ? active : kept ? trace.setSpanContext(active, kept) : active;
  const span = tracer.startSpan(name, { attributes: attributes() }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), fn);
  } catch (error) {
    failed(span, error);
    throw error;
  } finally {
    span.end();
  }
}
