/**
 * Sending an event to the flows that wait for it (`runner.sendEvent`, behind
 * `POST /events/<name>`). The event is checked against the schema its flows
 * declare, keyed (`key` over its data), recorded in the ledger once per
 * (name, id) — a retried send with the same id is answered with what the
 * first one reached, nothing delivered again — and only then routed: the
 * waiting instances whose correlation key is the event's are read from the
 * ledger's (event, key) index and each is advanced from its latest parked
 * state with the event delivered (`decisions/advance.ts`: one compare-and-set
 * write, so of two racing deliveries exactly one moves an instance, and an
 * instance that stopped waiting, its timeout fired, say, is not reached).
 * Recording before reading the waiters is what makes the lookback
 * (`decisions/lookback.ts`) lose nothing: a wait that begins after the record
 * finds the event there. A waiter the ledger read with its request row
 * (`EventWaiter.request`) is advanced from that row, not read again. Audited
 * with `via: 'event'`. Traced (an OpenTelemetry SDK registered): each delivery is a span,
 * `baton.event.deliver`, in the instance's trace (its kept trace context, read from the row the
 * delivery starts from: with tracing, a waiter without its row has it read once, and the round
 * starts from that row), and the round it plays is its child.
 */

import type { Flow } from '../authoring/flowTypes.js';
import { type EventSpec, isEvent } from '../authoring/inputs/event.js';
import type { EventWaiter, ParkedRequest, RecordEventResult } from '../contract/ledger.js';
import { advance } from '../decisions/advance.js';
import { sealEventData } from '../decisions/lookback.js';
import { openParked } from '../decisions/parked.js';
import type { DecisionsPort } from '../decisions/port.js';
import { FlowDefinitionError } from '../errors.js';
import { type ReceivedEvent, receivedId } from '../round/play.js';
import { ATTR, activeAttribute, inInstanceSpan, SPAN, tracing } from '../telemetry/tracing.js';

/** What {@link sendEvent} sends. */
export interface SendEventRequest {
  /**
   * The event's id, for de-duplication: a second send with the same name and id within
   * {@link EVENT_DEDUP_SECONDS} is answered with the first one's count and delivers nothing.
   * 1-256 printable ASCII characters. Absent: a random id (no de-duplication).
   */
  readonly id?: string;
  /** The event's data, checked against the event's schema. */
  readonly data: unknown;
  /** Who sends it, for the audit trail (hashed there): a signing source, a bearer's principal. */
  readonly sender?: string;
}

/**
 * What {@link sendEvent} came to.
 * - `delivered`: routed; `delivered` waiting instances received it (`duplicate`: a retried send
 *   of an id seen before, answered with the first delivery's count; nothing was delivered again).
 * - `unknown`: no served flow declares an event of that name.
 * - `invalid`: the data (or id) was refused; `problem` names the field (never echoes a value).
 */
export type SendEventResult =
  | { readonly status: 'delivered'; readonly delivered: number; readonly duplicate: boolean; readonly id: string }
  | { readonly status: 'unknown'; readonly problem: string }
  | { readonly status: 'invalid'; readonly problem: string };

/** How long an event id is remembered for de-duplication, seconds (24 hours). */
export const EVENT_DEDUP_SECONDS = 24 * 3600;

/** The principal the audit trail records for an event without a named sender. */
export const EVENT_PRINCIPAL = 'baton:event';

const ID = /^[\x21-\x7e]{1,256}$/;
/** Waiting instances read per page, and advanced at once at most. */
const PAGE = 500;
const CONCURRENCY = 4;
/** How long a duplicate waits for the first delivery of its id to finish, ms. */
const DUPLICATE_HOLD_MS = 5_000;

/**
 * The event specs of a runner's flows by name, one per name.
 * @throws FlowDefinitionError when two flows declare one event name with different schemas,
 *   keys or lookback windows.
 */
export function eventCatalog(flows: Iterable<Flow<any, any>>): ReadonlyMap<string, EventSpec> {
  const byName = new Map<string, { spec: EventSpec; flow: string }>();
  for (const flow of flows) {
    for (const key of flow.events) {
      const spec = flow.inputs[key];
      if (!isEvent(spec)) continue;
      const seen = byName.get(spec.name);
      if (seen && seen.spec.identity !== spec.identity) {
        throw new FlowDefinitionError(
          `flows "${seen.flow}" and "${flow.name}" declare the event "${spec.name}" differently (schema, key or lookback): declare it once with event() and share it`,
        );
      }
      if (!seen) byName.set(spec.name, { spec, flow: flow.name });
    }
  }
  return new Map([...byName].map(([name, { spec }]) => [name, spec]));
}

/** What {@link sendEvent} needs of the runner. */
export interface EventPort {
  readonly core: DecisionsPort;
  readonly events: ReadonlyMap<string, EventSpec>;
  readonly newId: () => string;
}

/**
 * Send an event to every waiting instance whose correlation key is the event's: see the module
 * comment and {@link SendEventResult}.
 * @throws Error when the runner has no ledger.
 */
export async function sendEvent(port: EventPort, name: string, request: SendEventRequest): Promise<SendEventResult> {
  const { core, events } = port;
  const ledger = core.ledger;
  if (ledger === undefined) throw new Error('sendEvent needs a ledger that keeps events');
  const spec = events.get(name);
  if (!spec) return { status: 'unknown', problem: `No served flow waits for the event "${name}".` };
  // A served flow waits for it: createRunner checked that the ledger has the `events` facet.
  if (request.id !== undefined && (typeof request.id !== 'string' || !ID.test(request.id))) {
    return { status: 'invalid', problem: 'id: must be 1-256 printable ASCII characters' };
  }
  const parsed = spec.parseData(request.data);
  if (!parsed.ok) return { status: 'invalid', problem: parsed.problem };
  const keyed = spec.keyOf(parsed.answer);
  if (!keyed.ok) return { status: 'invalid', problem: `data: ${keyed.problem}` };
  const id = request.id ?? `evt_${port.newId()}`;
  const now = core.now();
  const lookbackUntil = now + spec.lookbackMs;
  const recorded = await ledger.events.recordEvent({
    event: name,
    id,
    match: keyed.answer,
    data: sealEventData(core.codec, name, id, parsed.answer),
    now,
    lookbackUntil,
    expiresAt: Math.max(lookbackUntil, now + EVENT_DEDUP_SECONDS * 1000),
  });
  if (recorded.status === 'duplicate') {
    const first = await settled(port, name, id, recorded);
    if (first !== null) return { status: 'delivered', delivered: first, duplicate: true, id };
    // The first delivery did not finish (its server stopped, say): route again. Instances that
    // received it already are not reached again (each keeps the ids it received).
  }
  const event: ReceivedEvent = { name, id, match: keyed.answer, data: parsed.answer };
  const delivered = await route(core, event, request.sender ?? EVENT_PRINCIPAL);
  await ledger.events.settleEvent(name, id, delivered);
  return { status: 'delivered', delivered, duplicate: recorded.status === 'duplicate', id };
}

/** A duplicate's first delivery count, once settled (waiting a bounded time); `null` if it never settles. */
async function settled(
  port: EventPort,
  name: string,
  id: string,
  first: Extract<RecordEventResult, { status: 'duplicate' }>,
): Promise<number | null> {
  if (first.delivered !== null) return first.delivered;
  const ledger = port.core.ledger!;
  const until = performance.now() + DUPLICATE_HOLD_MS;
  while (performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const again = await ledger.events.getEvent(name, id);
    if (again === undefined) return null;
    if (again.delivered !== null) return again.delivered;
  }
  return null;
}

/** Deliver `event` to every instance waiting for it under its key; how many received it. */
async function route(core: DecisionsPort, event: ReceivedEvent, sender: string): Promise<number> {
  const ledger = core.ledger!;
  let delivered = 0;
  let after: string | undefined;
  for (;;) {
    const page = await ledger.events.eventWaiters({
      event: event.name,
      match: event.match,
      limit: PAGE,
      ...(after === undefined ? {} : { after }),
    });
    let next = 0;
    const worker = async () => {
      while (next < page.length) {
        const waiter = page[next++]!;
        const flow = core.flows.get(waiter.flow);
        if (!flow) continue; // Not served here: nothing of it can run on this instance.
        const reached: string[] = [];
        try {
          const row = waiter.request ?? (tracing() ? await ledger.requests.getRequest(waiter.id) : undefined);
          await deliverSpan(core, event, waiter, row, async () => {
            await advance(core, flow, waiter.id, sender, 'event', undefined, undefined, undefined, {
              event,
              delivered: reached,
              ...(row ? { row } : {}),
            });
            activeAttribute(ATTR.eventDelivered, reached.includes(receivedId(event.name, event.id)));
          });
        } catch (error) {
          core.log({ type: 'flow_error', flow: flow.name, fid: waiter.id, error });
        }
        if (reached.includes(receivedId(event.name, event.id))) delivered++;
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, page.length) }, worker));
    if (page.length < PAGE) return delivered;
    after = page[page.length - 1]!.id;
  }
}

/**
 * One delivery, in its span when traced (`baton.event.deliver`, in the instance's trace): the
 * event's name as the messaging conventions' destination, never its data or id.
 */
function deliverSpan(
  core: DecisionsPort,
  event: ReceivedEvent,
  waiter: EventWaiter,
  row: ParkedRequest | undefined,
  fn: () => Promise<void>,
): Promise<void> {
  return inInstanceSpan(
    SPAN.eventDeliver,
    () => (row ? openParked(core.codec, row)?.s.tc : undefined),
    () => ({
      [ATTR.flow]: waiter.flow,
      [ATTR.instance]: waiter.id,
      [ATTR.via]: 'event',
      [ATTR.messagingOperation]: 'process',
      [ATTR.messagingDestination]: event.name,
    }),
    fn,
  );
}
