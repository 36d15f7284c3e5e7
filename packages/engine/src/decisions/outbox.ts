/**
 * The notifications a parked write carries into the ledger's outbox, in the
 * same write (`ParkRequest.outbox`): `decision.requested` for each decision
 * newly awaited, `decision.made` for each recorded decision the round
 * delivered, `request.ended` once when the request stops waiting (with
 * `data.status` as `baton_requests` shows it), and `flow.notification` for
 * each `notify()` of the round. Bodies are `{ type, timestamp, data }`;
 * `data` has `requestId` and `flow`, and for decisions `key`, `role` and
 * `deadline` (ISO 8601), `decision.made` its `decider` (and `onBehalfOf`, for
 * a delegate's decision), and `url`, the decision page, when the runner has a
 * `decisionUrl`. Principals are keyed hashes, or ids when the runner
 * says so (`hookPrincipals`). Ids are derived from the request, the round and
 * the event, so a write replayed after a conflict carries the same ids and
 * the ledger keeps one row each. A round that writes no parked request (a
 * flow that completes, or asks its caller, before it ever parks) still
 * delivers its `notify()`s: `enqueueRoundNotifications` writes them on their
 * own, before the round answers and before its outcome is recorded for
 * retries, so a retry answered from that record finds them written. When a
 * span records, each message carries the active span's W3C `traceparent`
 * (the round's, or its child's), so its deliveries join the instance's trace.
 */
import type { Notification } from '../authoring/notify.js';
import type { OutboxMessage, RequestStatus } from '../contract/ledger.js';
import type { AwaitedDecision } from '../round/play.js';
import { activeTraceparent } from '../telemetry/tracing.js';
import { principalHash } from './parked.js';
import type { DecisionsPort } from './port.js';

/** The event types of the outbox (the contract of `../shared/DESIGN.md` §5b). */
export type OutboxEventType = 'decision.requested' | 'decision.made' | 'request.ended' | 'flow.notification';

/** What one parked write tells the outbox. */
export interface OutboxFacts {
  readonly flow: string;
  readonly fid: string;
  readonly round: number;
  readonly requesterPrincipal: string;
  readonly status: RequestStatus;
  /** The request's status before this write (`undefined`: first parked now). */
  readonly before: RequestStatus | undefined;
  /** Decision keys awaited before this write. */
  readonly awaitedBefore: readonly string[];
  readonly awaited: readonly AwaitedDecision[];
  /** Recorded decisions the round delivered: key, the decider's principal, and whom they decided for (a delegation). */
  readonly made: readonly {
    readonly key: string;
    readonly decider: string | undefined;
    readonly onBehalfOf?: string | undefined;
  }[];
  readonly notifications: readonly Notification[];
}

const iso = (ms: number) => new Date(ms).toISOString();

/** One outbox message of request `fid`'s round `round`: its id is derived from them, the type and `suffix`. */
function message(
  core: DecisionsPort,
  at: { readonly fid: string; readonly flow: string; readonly round: number },
  type: OutboxEventType,
  suffix: string,
  data: Record<string, unknown>,
  traceparent: string | undefined,
): OutboxMessage {
  const id = `msg_${core.codec.digest(`${at.fid}\u0000${at.round}\u0000${type}\u0000${suffix}`, 'outbox-id')}`;
  const body = { type, timestamp: iso(core.now()), data: { requestId: at.fid, flow: at.flow, ...data } };
  return { id, type, body: JSON.stringify(body), ...(traceparent === undefined ? {} : { traceparent }) };
}

/** The `flow.notification` messages of a round's `notify()`s, in order. */
function flowNotifications(
  core: DecisionsPort,
  at: { readonly fid: string; readonly flow: string; readonly round: number },
  notifications: readonly Notification[],
  traceparent: string | undefined,
): OutboxMessage[] {
  return notifications.map((n, i) =>
    message(
      core,
      at,
      'flow.notification',
      String(i),
      {
        kind: n.kind,
        ...(n.to === undefined ? {} : { to: n.to }),
        ...(n.data === undefined ? {} : { data: n.data }),
      },
      traceparent,
    ),
  );
}

/**
 * Write the `notify()`s of a round that writes no parked request into the outbox (see the module
 * comment); nothing when the runner writes no outbox or the round announced nothing.
 */
export async function enqueueRoundNotifications(
  core: DecisionsPort,
  at: { readonly fid: string; readonly flow: string; readonly round: number },
  notifications: readonly Notification[],
): Promise<void> {
  if (!core.decisions.outbox || notifications.length === 0) return;
  // `createRunner` refuses `outbox: true` on a ledger without the `outbox` facet (`runner/facets.ts`).
  await core.ledger!.outbox.enqueueOutbox(flowNotifications(core, at, notifications, activeTraceparent()), core.now());
}

/** The outbox messages of one parked write; empty when the runner writes no outbox. */
export function outboxMessages(core: DecisionsPort, facts: OutboxFacts): OutboxMessage[] {
  if (!core.decisions.outbox) return [];
  const now = core.now();
  const who = (principal: string) =>
    core.decisions.hookPrincipals === 'id' ? principal : principalHash(core.codec, principal);
  const base = { requestId: facts.fid, flow: facts.flow };
  const at = { fid: facts.fid, flow: facts.flow, round: facts.round };
  // The active span (the round's, or a child of it) when tracing: deliveries join the instance's trace.
  const traceparent = activeTraceparent();
  const out: OutboxMessage[] = [];
  const add = (type: OutboxEventType, suffix: string, data: Record<string, unknown>) => {
    out.push(message(core, at, type, suffix, data, traceparent));
  };
  for (const made of facts.made) {
    add('decision.made', made.key, {
      key: made.key,
      ...(made.decider === undefined ? {} : { decider: who(made.decider) }),
      ...(made.onBehalfOf === undefined ? {} : { onBehalfOf: who(made.onBehalfOf) }),
    });
  }
  const before = new Set(facts.awaitedBefore);
  const link = core.decisions.decisionUrl;
  if (facts.status === 'waiting') {
    for (const d of facts.awaited) {
      if (before.has(d.key)) continue;
      add('decision.requested', d.key, {
        key: d.key,
        ...(d.role === null ? {} : { role: d.role }),
        ...(d.deadline === null ? {} : { deadline: iso(d.deadline) }),
        message: d.message,
        requester: who(facts.requesterPrincipal),
        ...(link ? { url: link(facts.fid, d.key) } : {}),
      });
    }
  }
  out.push(...flowNotifications(core, at, facts.notifications, traceparent));
  if (facts.status !== 'waiting' && facts.before !== facts.status) {
    // Once per end: the id is the request's and the end's alone.
    const id = `msg_${core.codec.digest(`${facts.fid}\u0000ended`, 'outbox-id')}`;
    out.push({
      id,
      type: 'request.ended',
      body: JSON.stringify({
        type: 'request.ended',
        timestamp: iso(now),
        data: { ...base, status: facts.status, requester: who(facts.requesterPrincipal) },
      }),
      ...(traceparent === undefined ? {} : { traceparent }),
    });
  }
  return out;
}
