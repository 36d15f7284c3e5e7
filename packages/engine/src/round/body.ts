/**
 * What the engine keeps inside a requestState between two rounds, the
 * questions the runner asks of a machine's state, and how a client's answers
 * are read. The body holds the compact snapshot, the pending deadlines and the
 * answers already received and valid (as parsed, so only fields their schema
 * knows); the keys a state waits for are not stored: they follow from the
 * state value through the machine's `meta.ask`. Answers are read from the
 * client's `inputResponses` by `readAnswers` only, for both the retry digest
 * and delivery, so the two always see the same answers.
 */
import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';
import type { Flow } from '../authoring/flowTypes.js';
import { isDecision } from '../authoring/inputs/decision.js';
import { isEvent } from '../authoring/inputs/event.js';
import type { RequestStateClaims } from '../codec/types.js';
import { InvalidRequestStateError } from '../errors.js';
import { isRunningSteps, type RunningSteps } from '../steps/durableSteps.js';
import { type CompactSnapshot, isCompactSnapshot } from './snapshot.js';
import { type Deadline, isDeadlineList } from './timers.js';

/** The engine's payload inside a requestState. */
export interface RoundBody {
  /** Compact snapshot. */
  s: CompactSnapshot;
  /** Pending deadlines. */
  t?: Deadline[];
  /**
   * Answers already received and valid, held until the rest arrive: the event payloads their
   * spec parsed (never the raw input, so a junk field cannot inflate a state), delivered as
   * they are when the rest arrive.
   */
  h?: Record<string, unknown>;
  /**
   * Flows with decisions only. The version of the flow instance's parked request this state
   * was minted from (see `parked.ts`): a state whose version is behind the ledger's continues
   * from the ledger's latest parked state instead ("old states follow").
   */
  pv?: number;
  /**
   * Flows with decisions only, on "retry later" states: this call's wait so far, as
   * `[first waiting round's time (ms), requestState-only rounds answered]`.
   */
  w?: [number, number];
  /** Flows with decisions only: the decision keys already delivered to this instance (each at most once). */
  d?: string[];
  /**
   * Flows with events only: the events already delivered to this instance (`<name>/<id>`), so an
   * event is delivered to an instance at most once (by routing or from the lookback window).
   */
  e?: string[];
  /** Flows with durable steps: invocations of each step id already settled (numbers the next one). */
  k?: Record<string, number>;
  /** Flows with durable steps, while steps outlive rounds: the invocations still running, restored on resume. */
  r?: RunningSteps;
  /**
   * With tracing on (an OpenTelemetry SDK registered): the W3C `traceparent` of the instance's
   * first traced round, so later rounds join its trace (`telemetry/tracing.ts`). Absent in states
   * minted without tracing, and in states older than it: both stay readable.
   */
  tc?: string;
}

/**
 * The body of an opened (authenticated) state.
 * @throws InvalidRequestStateError('bad_snapshot') when it is not shaped like one.
 */
export function readBody(claims: RequestStateClaims): RoundBody {
  const body = claims.body as Partial<RoundBody> | null;
  const ok =
    typeof body === 'object' &&
    body !== null &&
    isCompactSnapshot(body.s) &&
    (body.t === undefined || isDeadlineList(body.t)) &&
    (body.h === undefined || (typeof body.h === 'object' && body.h !== null && !Array.isArray(body.h))) &&
    (body.pv === undefined || Number.isSafeInteger(body.pv)) &&
    (body.w === undefined ||
      (Array.isArray(body.w) && body.w.length === 2 && body.w.every((n) => Number.isSafeInteger(n)))) &&
    (body.d === undefined || (Array.isArray(body.d) && body.d.every((k) => typeof k === 'string'))) &&
    (body.e === undefined || (Array.isArray(body.e) && body.e.every((k) => typeof k === 'string'))) &&
    (body.k === undefined ||
      (typeof body.k === 'object' &&
        body.k !== null &&
        Object.values(body.k).every((n) => Number.isSafeInteger(n) && (n as number) >= 0))) &&
    (body.r === undefined || isRunningSteps(body.r)) &&
    (body.tc === undefined || (typeof body.tc === 'string' && body.tc.length <= 256));
  if (!ok) throw new InvalidRequestStateError('bad_snapshot');
  return body as RoundBody;
}

declare const ANSWERS: unique symbol;

/**
 * A client's answers by input key, as {@link readAnswers} read them: own properties only, in a
 * null-prototype record. Branded so a round cannot be handed raw `inputResponses`.
 */
export type Answers = Readonly<Record<string, unknown>> & { readonly [ANSWERS]: true };

/**
 * The answers in a client's `inputResponses` for `keys` (every key when omitted), read from own
 * data properties only. `inputResponses` is attacker-controlled: after the SDK copies it, a
 * `"__proto__"` member can have become the object's prototype, and `responses.confirm` would
 * then find an answer the client never sent as its own. The runner digests exactly what this
 * returns and the round delivers exactly what it holds, so a retry's digest covers what was
 * delivered.
 */
export function readAnswers(responses: unknown, keys?: readonly string[]): Answers {
  const answers = Object.create(null) as Record<string, unknown>;
  if (typeof responses !== 'object' || responses === null || Array.isArray(responses)) return answers as Answers;
  for (const key of keys ?? Object.keys(responses)) {
    const own = Object.getOwnPropertyDescriptor(responses, key);
    if (own && 'value' in own && own.value !== undefined) answers[key] = own.value;
  }
  return answers as Answers;
}

/** Keys asked by the active states (`meta.ask`), in document order, without duplicates. */
function askedKeysOf(snapshot: AnyMachineSnapshot): string[] {
  const keys = new Set<string>();
  for (const meta of Object.values(snapshot.getMeta() as Record<string, { ask?: string[] } | undefined>)) {
    for (const key of meta?.ask ?? []) keys.add(key);
  }
  return [...keys];
}

/** What a state value asks, split: every asked key, the caller's, the decisions by others, the events. */
interface AskedSplit {
  readonly asked: readonly string[];
  readonly caller: readonly string[];
  readonly decisions: readonly string[];
  readonly events: readonly string[];
}

/**
 * The asked keys by state value, per flow: a round asks this several times of the same few
 * states, and the answer depends only on the active state nodes, which a string state value
 * (an atomic state under the root) names exactly. Object values (parallel or nested states)
 * are computed afresh. Each map holds at most one entry per state of the machine. (A flow's
 * machine with services provided, `machineWith`, has the same states and meta.)
 */
const splitsByFlow = new WeakMap<Flow, Map<string, AskedSplit>>();

function splitOf(flow: Flow, snapshot: AnyMachineSnapshot): AskedSplit {
  const value = snapshot.value;
  const cacheable = typeof value === 'string' && snapshot.status === 'active';
  let cache: Map<string, AskedSplit> | undefined;
  if (cacheable) {
    cache = splitsByFlow.get(flow);
    const found = cache?.get(value);
    if (found) return found;
  }
  const asked = askedKeysOf(snapshot);
  const split: AskedSplit = Object.freeze({
    asked: Object.freeze(asked),
    caller: Object.freeze(asked.filter((key) => !isDecision(flow.inputs[key]) && !isEvent(flow.inputs[key]))),
    decisions: Object.freeze(asked.filter((key) => isDecision(flow.inputs[key]))),
    events: Object.freeze(asked.filter((key) => isEvent(flow.inputs[key]))),
  });
  if (cacheable) {
    if (!cache) {
      cache = new Map();
      splitsByFlow.set(flow, cache);
    }
    cache.set(value, split);
  }
  return split;
}

/** Keys asked by the active states (`meta.ask`), in document order, without duplicates. */
export function askedKeys(snapshot: AnyMachineSnapshot): readonly string[] {
  return askedKeysOf(snapshot);
}

/** The asked keys that are events another system sends (`event()` inputs); do not mutate. */
export function awaitedEvents(flow: Flow, snapshot: AnyMachineSnapshot): readonly string[] {
  return splitOf(flow, snapshot).events;
}

/** The asked keys the caller answers (every asked key but the flow's decisions and events); do not mutate. */
export function callerKeys(flow: Flow, snapshot: AnyMachineSnapshot): readonly string[] {
  return splitOf(flow, snapshot).caller;
}

/** The asked keys that are decisions someone else makes; do not mutate. */
export function awaitedDecisions(flow: Flow, snapshot: AnyMachineSnapshot): readonly string[] {
  return splitOf(flow, snapshot).decisions;
}

/**
 * The machine's output. XState takes it from the root `output` only; Baton also accepts the
 * `output` of the top-level final state reached (a constant or a function of `{ context }`),
 * so each ending of a flow can say what it returns.
 */
export function machineOutput(machine: AnyStateMachine, snapshot: AnyMachineSnapshot): unknown {
  if (snapshot.output !== undefined || machine.config.output !== undefined) return snapshot.output;
  if (typeof snapshot.value !== 'string') return undefined;
  const output = machine.root.states[snapshot.value]?.output;
  return typeof output === 'function'
    ? (output as (args: { context: unknown }) => unknown)({ context: snapshot.context })
    : output;
}
