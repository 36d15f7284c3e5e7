/**
 * Parked flow instances: what the engine stores in the ledger for a flow that
 * waits on someone other than its caller, and how it reads it back. A parked
 * request's `state` is a blob sealed with the codec (AES-256-GCM under the
 * `parked` purpose, bound as associated data to the request id and the flow,
 * so a row moved onto another id does not open) holding everything needed to
 * continue the flow on any instance for any caller of the decision tools: the
 * requester's binding (principal, method, target, arguments: the database
 * never holds a readable principal unless the operator opts in), the round
 * body (compact snapshot, deadlines, decisions delivered), the definition
 * hash, the round number and, once the flow has ended, its final outcome. It
 * also holds the status words shared by every writer (`statusAfter`), keyed
 * principal hashes and their constant-time comparison (four eyes), and how a
 * recorded decision is sealed: the decider as a keyed hash, the readable id
 * sealed with the content (schema 6; older rows are opened and rewritten).
 */
import { timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../codec/canonicalJson.js';
import type { RequestStateCodec, StateBinding } from '../codec/types.js';
import type {
  DeciderRewrite,
  DecisionRecord,
  LegacyDecider,
  ParkedRequest,
  RequestStatus,
  WaitingFor,
} from '../contract/ledger.js';
import type { FlowResult } from '../contract/outcome.js';
import { InvalidRequestStateError, unknownKeySentence } from '../errors.js';
import type { RoundBody } from '../round/body.js';
import type { RoundEnd } from '../round/play.js';
import { isCompactSnapshot } from '../round/snapshot.js';
import { isDeadlineList } from '../round/timers.js';

/** How a parked flow instance ended, kept so any later round answers with it. */
export type FinalOutcome =
  | { readonly type: 'complete'; readonly result: FlowResult }
  | { readonly type: 'error'; readonly message: string };

/** The plaintext of a parked request's sealed `state`. */
export interface ParkedBlob {
  /** Format version. */
  readonly v: 1;
  /** The requester's binding: principal, method, target, arguments (the flow is the row's). */
  readonly b: { readonly p: string; readonly m: string; readonly t: string; readonly a: unknown };
  /** The definition hash the body was written by. */
  readonly h: string;
  /** The round number of the last round played on the instance. */
  readonly r: number;
  /** The machine's state: compact snapshot, deadlines, decisions delivered, steps (never `pv`, `w`). */
  readonly s: RoundBody;
  /** Set once the flow has ended. */
  readonly o?: FinalOutcome;
  /**
   * Tasks only: what the requester was last asked, when a `tasks/update` answer was refused and
   * asked again with the reason (`taskTools.ts`). Any later write of the request drops it.
   */
  readonly q?: Readonly<Record<string, import('../contract/wire.js').WireInputRequest>>;
  /**
   * Tasks only: the request version each open question was first shown at, kept when a
   * `tasks/update` answered only some of them (the answers are held), so that the others keep
   * their task keys (`<key>@<version>`). Any later write of the request drops it.
   */
  readonly a?: Readonly<Record<string, number>>;
}

const PURPOSE = 'parked';

/** Associated data of a parked blob: it opens only under its own request id and flow. */
function parkedBinding(id: string, flow: string): string {
  return canonicalJson(['parked', id, flow]);
}

/** Seal a parked blob for request `id` of `flow`. */
export function sealParked(codec: RequestStateCodec, id: string, flow: string, blob: ParkedBlob): string {
  return codec.sealBlob(JSON.stringify(blob), PURPOSE, parkedBinding(id, flow));
}

/**
 * Open a parked request's blob; `undefined` when it does not open (the row was moved or
 * altered, or its key left the ring) or is not shaped like one.
 */
export function openParked(codec: RequestStateCodec, row: ParkedRequest): ParkedBlob | undefined {
  let blob: Partial<ParkedBlob>;
  try {
    blob = JSON.parse(codec.openBlob(row.state, PURPOSE, parkedBinding(row.id, row.flow)));
  } catch {
    return undefined;
  }
  const binding = blob.b as Partial<ParkedBlob['b']> | undefined;
  const ok =
    blob.v === 1 &&
    typeof binding?.p === 'string' &&
    typeof binding.m === 'string' &&
    typeof binding.t === 'string' &&
    typeof blob.h === 'string' &&
    Number.isSafeInteger(blob.r) &&
    typeof blob.s === 'object' &&
    blob.s !== null &&
    isCompactSnapshot(blob.s.s) &&
    (blob.s.t === undefined || isDeadlineList(blob.s.t));
  return ok ? (blob as ParkedBlob) : undefined;
}

/**
 * Why a parked request that did not open cannot be read here, when the reason is a key: the
 * sentence naming the key id it was sealed with (see {@link unknownKeySentence}); `undefined`
 * when it was sealed with a key of the ring (then the row was moved or altered).
 */
export function unknownParkedKey(codec: RequestStateCodec, row: ParkedRequest): string | undefined {
  const keyId = unknownParkedKeyId(codec, row);
  return keyId === undefined ? undefined : unknownKeySentence(keyId);
}

/** The key id a parked request that does not open here was sealed with, when that is why; else `undefined`. */
export function unknownParkedKeyId(codec: RequestStateCodec, row: ParkedRequest): string | undefined {
  try {
    codec.openBlob(row.state, PURPOSE, parkedBinding(row.id, row.flow));
  } catch (error) {
    if (error instanceof InvalidRequestStateError && error.keyId !== undefined) return error.keyId;
  }
  return undefined;
}

/** The requester's binding as parked. */
export function toParkedBinding(binding: StateBinding): ParkedBlob['b'] {
  return { p: binding.principal, m: binding.method, t: binding.target, a: binding.args };
}

/** The binding the parked requester's flow tool uses. */
export function requesterBinding(flow: string, blob: ParkedBlob): StateBinding {
  return { principal: blob.b.p, flow, method: blob.b.m, target: blob.b.t, args: blob.b.a };
}

/** The body as parked: only what continues the machine (no wait budget, no version, nothing held). */
export function parkedBody(body: RoundBody): RoundBody {
  const parked: RoundBody = { s: body.s };
  if (body.t) parked.t = body.t;
  if (body.h) parked.h = body.h;
  if (body.d) parked.d = body.d;
  if (body.e) parked.e = body.e;
  if (body.k) parked.k = body.k;
  if (body.r) parked.r = body.r;
  if (body.tc) parked.tc = body.tc;
  return parked;
}

/** A principal's keyed hash, as the ledger stores requesters. */
export function principalHash(codec: RequestStateCodec, principal: string): string {
  return codec.digest(principal, 'requester');
}

/**
 * Whether `principal` is the parked request's requester: keyed hashes of both, computed now
 * with the same key (so a key rotation cannot make a requester a stranger), compared in
 * constant time.
 */
export function isRequester(codec: RequestStateCodec, blob: ParkedBlob, principal: string): boolean {
  const a = Buffer.from(principalHash(codec, principal));
  const b = Buffer.from(principalHash(codec, blob.b.p));
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The status a parked instance takes after a round that ended it: `withdrawn` when the round
 * delivered the withdrawal; `expired` when a deadline fired, nothing was delivered, and the flow
 * could not handle it (the round failed: the deadline ended the request, not the flow); else
 * `completed`, a flow that ends through its own timeout branch (`after` to a final "timed out"
 * state) included: it handled its deadline. The one status of `baton_requests`, `baton runs` and
 * `request.ended`'s `data.status`.
 */
export function statusAfter(end: RoundEnd): Exclude<RequestStatus, 'waiting'> {
  if (end.eventSent) return 'withdrawn';
  const deadlineOnly = end.fired > 0 && end.delivered.length === 0 && end.received.length === 0;
  if (deadlineOnly && end.type === 'done' && end.outcome.type === 'error') return 'expired';
  return 'completed';
}

/** What a parked request waits for, for listings and the waiting result: its decisions, then its events. */
export function waitingForOf(
  decisions: readonly { key: string; role: string | null }[],
  events: readonly { key: string; name: string }[] = [],
): WaitingFor[] {
  return [
    ...decisions.map(({ key, role }) => (role === null ? { key } : { key, role })),
    ...events.map(({ key, name }) => ({ key, event: name })),
  ];
}

/** How long a parked row is kept after its last write (listings cover 30 days). */
export const PARKED_RETENTION_MS = 30 * 24 * 3600 * 1000;

/** When a parked row may be pruned: 30 days after its last write, and never before a day after its deadline. */
export function parkedExpiry(now: number, deadline: number | null): number {
  return Math.max(now + PARKED_RETENTION_MS, deadline === null ? 0 : deadline + 24 * 3600 * 1000);
}

/**
 * Associated data of a recorded decision's content: it opens only for its request, key and
 * decider (the keyed hash the ledger holds in `decider`).
 */
function decisionBinding(id: string, key: string, deciderHash: string): string {
  return canonicalJson(['decision/2', id, key, deciderHash]);
}

/** Associated data of a decision recorded before schema version 6: bound to the readable decider. */
function legacyDecisionBinding(id: string, key: string, decider: string): string {
  return canonicalJson(['decision', id, key, decider]);
}

/** What a completed quorum decision seals with its deciding answer: every vote, and the result. */
export interface SealedQuorum {
  /**
   * `p`: the voter's principal, `c`: the content, `t`: when (ms), `a`: whether it approves, `w`:
   * the channel, `n`: the display name (only when names are stored).
   */
  readonly votes: readonly {
    readonly p: string;
    readonly c: unknown;
    readonly t: number;
    readonly a: boolean;
    readonly w?: string;
    readonly n?: string;
  }[];
  readonly approved: boolean;
}

/** Associated data of a quorum vote's content: it opens only for its request, key and voter hash. */
function voteBinding(id: string, key: string, voterHash: string): string {
  return canonicalJson(['vote/1', id, key, voterHash]);
}

/** Seal a quorum vote: the voter's principal with the content, bound to the voter's keyed hash. */
export function sealVote(
  codec: RequestStateCodec,
  id: string,
  key: string,
  principal: string,
  content: unknown,
): string {
  const voter = principalHash(codec, principal);
  return codec.sealBlob(JSON.stringify({ p: principal, c: content ?? null }), 'decision', voteBinding(id, key, voter));
}

/** Open a quorum vote; `undefined` when it does not open (altered, or its key left the ring). */
export function openVote(
  codec: RequestStateCodec,
  vote: { readonly id: string; readonly key: string; readonly voter: string; readonly content: string },
): { principal: string; content: unknown } | undefined {
  try {
    const opened = JSON.parse(codec.openBlob(vote.content, 'decision', voteBinding(vote.id, vote.key, vote.voter))) as {
      p?: unknown;
      c?: unknown;
    };
    return typeof opened.p === 'string' ? { principal: opened.p, content: opened.c } : undefined;
  } catch {
    return undefined;
  }
}

/** A decision as the ledger records it: the decider's keyed hash, its name only when names are stored. */
export interface RecordedDecider {
  readonly decider: string;
  readonly deciderName: string | null;
  /** The content and the decider's principal, sealed together (the machine's event names the decider). */
  readonly content: string;
}

/**
 * Seal a decision for the ledger: the decider as a keyed hash (the readable principal only
 * with `storeNames`), and the content with the principal inside it, sealed (a decider's comment
 * and id are no more readable there than a parked state).
 */
export function sealDecision(
  codec: RequestStateCodec,
  id: string,
  key: string,
  principal: string,
  content: unknown,
  storeNames: boolean,
  sealed: { readonly quorum?: SealedQuorum; readonly onBehalfOf?: string } = {},
): RecordedDecider {
  const decider = principalHash(codec, principal);
  const { quorum, onBehalfOf } = sealed;
  return {
    decider,
    deciderName: storeNames ? principal : null,
    content: codec.sealBlob(
      JSON.stringify({
        p: principal,
        c: content ?? null,
        ...(quorum ? { v: quorum.votes, a: quorum.approved } : {}),
        ...(onBehalfOf === undefined ? {} : { b: onBehalfOf }),
      }),
      'decision',
      decisionBinding(id, key, decider),
    ),
  };
}

/**
 * Open a recorded decision: the decider's principal, the content, and whom the decider acted for
 * (a delegation: `onBehalfOf`, sealed with them) and, for a quorum, its votes; `undefined` when it does
 * not open. A decision recorded before schema version 6 is bound to the readable decider, which
 * its row holds in `deciderName` until the runner rewrites it (or in `decider`, when an older
 * Baton wrote it after the migration).
 */
export function openDecision(
  codec: RequestStateCodec,
  record: Pick<DecisionRecord, 'id' | 'key' | 'decider' | 'deciderName' | 'content'>,
): { principal: string; content: unknown; quorum?: SealedQuorum; onBehalfOf?: string } | undefined {
  const sealed = record.content ?? '';
  if (record.decider !== null) {
    try {
      const opened = JSON.parse(
        codec.openBlob(sealed, 'decision', decisionBinding(record.id, record.key, record.decider)),
      ) as { p?: unknown; c?: unknown; v?: unknown; a?: unknown; b?: unknown };
      if (typeof opened.p === 'string') {
        const quorum =
          Array.isArray(opened.v) && typeof opened.a === 'boolean'
            ? { votes: opened.v as SealedQuorum['votes'], approved: opened.a }
            : undefined;
        return {
          principal: opened.p,
          content: opened.c,
          ...(quorum ? { quorum } : {}),
          ...(typeof opened.b === 'string' ? { onBehalfOf: opened.b } : {}),
        };
      }
    } catch {
      // Not sealed as now: maybe as before schema version 6.
    }
  }
  const legacy = record.decider ?? record.deciderName;
  if (legacy === null) return undefined;
  const content = openLegacyDecision(codec, record.id, record.key, legacy, sealed);
  return content && { principal: legacy, content: content.value };
}

/** The content of a decision recorded before schema version 6; `undefined` when it does not open. */
function openLegacyDecision(
  codec: RequestStateCodec,
  id: string,
  key: string,
  decider: string,
  sealed: string,
): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(codec.openBlob(sealed, 'decision', legacyDecisionBinding(id, key, decider))) };
  } catch {
    return undefined;
  }
}

/**
 * A decision recorded before schema version 6, as the engine records deciders now: keyed hash,
 * name only with `storeNames`, content sealed again with the principal (left as it was when it
 * does not open: it never will).
 */
export function rewriteLegacyDecider(
  codec: RequestStateCodec,
  legacy: LegacyDecider,
  storeNames: boolean,
): DeciderRewrite {
  const opened =
    legacy.content === null
      ? undefined
      : openLegacyDecision(codec, legacy.id, legacy.key, legacy.principal, legacy.content);
  if (opened === undefined) {
    return {
      decider: principalHash(codec, legacy.principal),
      deciderName: storeNames ? legacy.principal : null,
      content: legacy.content,
    };
  }
  return sealDecision(codec, legacy.id, legacy.key, legacy.principal, opened.value, storeNames);
}
