/**
 * The one model of deciding that every way of deciding shares: `baton_decide`'s
 * two MRTR rounds (`decide.ts`) and the one-shot entry for callers that already
 * hold the answer (`answer.ts`: the HTTP decision API, the decision page).
 * `chooseDecision` says which decision a caller makes on a request, or refuses
 * with a reason code and a sentence (the request ended, four eyes, a wrong role,
 * unknown, already decided, closed, expired, several possible and no `key`);
 * `recordChosen` seals the validated answer, records it with one compare-and-set
 * on the request's version (re-checked and retried a bounded number of times
 * while the request keeps changing), tells `onDecided`, advances the parked flow
 * at once (audited with the channel the decision came through) and says what
 * became of it. The sentences are the decision tools' (tool errors) and the
 * reason codes are what the HTTP API maps to statuses. A quorum decision's answer
 * is a vote (`quorum.ts`), written by the same loop; only the vote that
 * completes it tells `onDecided` and advances the flow.
 */

import type { Flow } from '../authoring/flowTypes.js';
import { type DecisionSpec, isDecision } from '../authoring/inputs/decision.js';
import type { AuditVia } from '../contract/audit.js';
import type { DecisionRecord, ParkedRequest, RecordVoteResult, RequestStatus, VoteRecord } from '../contract/ledger.js';
import { isLedgerUnavailable } from '../errors.js';
import { ATTR, inInstanceSpan, SPAN } from '../telemetry/tracing.js';
import { load } from './access.js';
import { advance, aftermath, finalText } from './advance.js';
import { type Authority, type DelegatedCaller, mayMake } from './delegation.js';
import { isRequester, openParked, type ParkedBlob, principalHash, sealDecision } from './parked.js';
import { callHook, type DecisionsPort } from './port.js';
import { castVote, hasVoted, readVotes } from './quorum.js';
import type { DecidedBy, DecisionCaller, DecisionRefusal, DecisionRefusalReason } from './types.js';

/** The decide tool's name: decide states are bound to it. */
export const DECIDE_TOOL = 'baton_decide';

/** What a valid decision key looks like (a client-given `key` is checked before anything is read). */
export const DECISION_KEY = /^[A-Za-z0-9_.-]{1,64}$/;

const ENDED: Record<Exclude<RequestStatus, 'waiting'>, (id: string) => string> = {
  completed: (id) => `Request ${id} has ended: there is nothing left to decide.`,
  expired: (id) => `Request ${id} expired: its decisions can no longer be made.`,
  withdrawn: (id) => `Request ${id} was withdrawn by its requester: there is nothing left to decide.`,
  terminated: (id) => `Request ${id} was ended by an operator: there is nothing left to decide.`,
};

/** The refusal reason of a request that stopped waiting. */
function endedReason(status: RequestStatus | undefined): DecisionRefusalReason {
  return status === 'withdrawn' ? 'withdrawn' : status === 'expired' ? 'expired' : 'ended';
}

/** How many times a decision is checked and recorded again while its request keeps changing. */
const MAX_RECORD_ATTEMPTS = 8;

/** A refusal with its reason code and sentence. */
export function refusal(
  reason: DecisionRefusalReason,
  message: string,
  extra: Pick<DecisionRefusal, 'decidedBy' | 'keys' | 'retryAfterMs' | 'ownRequest'> = {},
): DecisionRefusal {
  return { status: 'refused', reason, message, ...extra };
}

/** The refusal of a submitted decision whose request ended first (withdrawn, expired, completed). */
export function notRecorded(id: string, key: string, status: RequestStatus | undefined): DecisionRefusal {
  const what =
    status === 'withdrawn'
      ? 'was withdrawn first, by its requester'
      : status === 'expired'
        ? 'expired first'
        : 'ended first';
  return refusal(endedReason(status), `Not recorded: request ${id} ${what}. Your decision "${key}" was not recorded.`);
}

/**
 * Who made a recorded decision, as a decider may be told: the readable principal when the
 * runner stores names, else its keyed hash; `you` when it was the caller.
 */
export function decidedBy(core: DecisionsPort, record: DecisionRecord, caller: DecisionCaller): DecidedBy {
  const mine = principalHash(core.codec, caller.principal);
  const hash = record.decider ?? '';
  return {
    key: record.key,
    decider: record.deciderName ?? hash,
    you: hash !== '' && hash === mine,
    ...(record.decidedAt === null ? {} : { decidedAt: record.decidedAt }),
    ...(record.onBehalfOf ? { onBehalfOf: record.onBehalfOfName ?? record.onBehalfOf } : {}),
  };
}

/**
 * The decision `caller` makes on this request, or a refusal saying why not. With `key`, that
 * decision; without it, the one pending decision the caller may make (several: `ambiguous_key`).
 * Who decided is told (`decidedBy`) only to a caller who may make that decision. `votes`: the
 * request's quorum votes ({@link readVotes}); a quorum decision the caller voted on is not theirs
 * to make again (`already_voted`).
 */
export function chooseDecision(
  core: DecisionsPort,
  row: ParkedRequest,
  flow: Flow,
  blob: ParkedBlob,
  records: readonly DecisionRecord[],
  key: string | undefined,
  caller: DelegatedCaller,
  votes: readonly VoteRecord[] = [],
): { readonly record: DecisionRecord; readonly onBehalfOf?: Authority } | { readonly refusal: DecisionRefusal } {
  const { codec } = core;
  // In its own right, or for someone through a delegation (`delegation.ts`).
  const allowed = (r: DecisionRecord) => {
    const right = mayMake(codec, flow, blob, r, caller);
    return typeof right === 'string' ? right : true;
  };
  const chosen = (r: DecisionRecord) => {
    const right = mayMake(codec, flow, blob, r, caller);
    return typeof right !== 'string' && right.onBehalfOf ? { record: r, onBehalfOf: right.onBehalfOf } : { record: r };
  };
  const id = row.id;
  const now = core.now();
  const no = (
    reason: DecisionRefusalReason,
    message: string,
    extra?: Pick<DecisionRefusal, 'decidedBy' | 'keys' | 'ownRequest'>,
  ) => ({
    refusal: refusal(reason, message, extra),
  });
  const expired = (r: DecisionRecord) => r.deadline !== null && r.deadline <= now;
  if (row.status !== 'waiting') {
    // A decision left unmade past its deadline expired, also when the flow went on without it (its own
    // timeout branch completes the request): say so rather than only that the request ended.
    const lapsed = records.find((r) => (key === undefined || r.key === key) && r.status !== 'decided' && expired(r));
    if (lapsed && isDecision(flow.inputs[lapsed.key])) {
      return no('expired', `The decision "${lapsed.key}" on request ${id} expired: it can no longer be made.`);
    }
    return no(endedReason(row.status), ENDED[row.status](id));
  }
  if (isRequester(codec, blob, caller.principal)) {
    return no(
      'not_allowed',
      `You requested ${id}, so you cannot decide it: a requester never decides their own request (four eyes).`,
      { ownRequest: true },
    );
  }
  // A pending decision the request no longer awaits (escalated elsewhere) cannot be made.
  const decisionKey = (r: DecisionRecord) =>
    isDecision(flow.inputs[r.key]) && (r.status !== 'pending' || row.waitingFor.some((w) => w.key === r.key));
  const told = (r: DecisionRecord) => (allowed(r) === true ? { decidedBy: decidedBy(core, r, caller) } : {});
  if (key !== undefined) {
    const record = records.find((r) => r.key === key);
    if (!record || !decisionKey(record)) return no('unknown', `Request ${id} has no decision "${key}".`);
    if (record.status === 'decided') {
      return no('already_decided', `The decision "${key}" on request ${id} has already been made.`, told(record));
    }
    if (record.status === 'closed')
      return no('ended', `The decision "${key}" on request ${id} is closed: the request ended first.`);
    if (expired(record))
      return no('expired', `The decision "${key}" on request ${id} expired: it can no longer be made.`);
    const may = allowed(record);
    if (may !== true) return no('not_allowed', `You may not make the decision "${key}" on request ${id}: ${may}.`);
    if (hasVoted(core, votes, key, caller)) return no('already_voted', alreadyVoted(id, key));
    return chosen(record);
  }
  const pending = records.filter((r) => r.status === 'pending' && decisionKey(r));
  const open = pending.filter((r) => !expired(r));
  const allowedOpen = open.filter((r) => allowed(r) === true);
  const mine = allowedOpen.filter((r) => !hasVoted(core, votes, r.key, caller));
  if (mine.length === 0 && allowedOpen.length > 0) return no('already_voted', alreadyVoted(id, allowedOpen[0]!.key));
  if (mine.length === 1) return chosen(mine[0]!);
  if (mine.length > 1) {
    const keys = mine.map((r) => r.key);
    return no(
      'ambiguous_key',
      `You may make more than one decision on request ${id} (${keys.join(', ')}): say which with "key".`,
      { keys },
    );
  }
  if (open.length > 0) {
    const why = open.map((r) => `"${r.key}": ${allowed(r)}`).join('; ');
    return no('not_allowed', `You may not make the pending decisions on request ${id} (${why}).`);
  }
  if (pending.length > 0) return no('expired', `The decisions on request ${id} expired: they can no longer be made.`);
  const decided = records.filter((r) => r.status === 'decided' && decisionKey(r));
  if (decided.length > 0) {
    const mineDecided = decided.filter((r) => allowed(r) === true).at(-1);
    return no(
      'already_decided',
      `The decisions on request ${id} have already been made.`,
      mineDecided ? told(mineDecided) : {},
    );
  }
  return no('unknown', `Request ${id} awaits no decision right now.`);
}

/** The refusal sentence of a second answer by one voter on a quorum decision. */
function alreadyVoted(id: string, key: string): string {
  return `You have already voted on the decision "${key}" on request ${id}: a person counts once, so this answer was not recorded.`;
}

/** A decision recorded by {@link recordChosen}: what became of the flow, in a sentence. */
export interface Recorded {
  readonly status: 'recorded';
  readonly next: string;
}

/** What {@link recordChosen} records. */
export interface ChosenAnswer {
  readonly flow: Flow;
  /** The request as read when the decision was chosen. */
  readonly row: ParkedRequest;
  readonly key: string;
  /** The validated content (the schema's output). */
  readonly content: unknown;
  readonly caller: DelegatedCaller;
  /** Which channel the decision came through, for the audit trail (`decide`: the MCP tool). */
  readonly via: Extract<AuditVia, 'decide' | 'decide_api' | 'decide_page' | 'app'>;
  /** Whom the caller decides for, when `chooseDecision` chose it through a delegation. */
  readonly onBehalfOf?: Authority;
}

/**
 * Record a chosen, validated decision once: one compare-and-set on the request's version (a
 * withdrawal, a timer or another decision that wrote it since it was read makes this one read
 * it again and check again), then `onDecided`, then the parked flow advanced at once.
 */
export function recordChosen(core: DecisionsPort, answer: ChosenAnswer): Promise<Recorded | DecisionRefusal> {
  return inInstanceSpan(
    SPAN.decision,
    () => openParked(core.codec, answer.row)?.s.tc,
    () => ({
      [ATTR.flow]: answer.flow.name,
      [ATTR.instance]: answer.row.id,
      [ATTR.decisionKey]: answer.key,
      [ATTR.via]: answer.via,
      [ATTR.pseudoUser]: core.codec.digest(answer.caller.principal, 'audit-principal'),
    }),
    () => record(core, answer),
  );
}

/** {@link recordChosen}, in its span when traced. */
async function record(core: DecisionsPort, answer: ChosenAnswer): Promise<Recorded | DecisionRefusal> {
  const { codec } = core;
  const ledger = core.ledger!;
  const { flow, row, key, caller } = answer;
  const decidedAt = core.now();
  const storeNames = core.decisions.storePrincipalNames;
  const behalf = answer.onBehalfOf?.principal;
  const sealed = sealDecision(codec, row.id, key, caller.principal, answer.content, storeNames, {
    ...(behalf === undefined ? {} : { onBehalfOf: behalf }),
  });
  const onBehalf =
    behalf === undefined
      ? {}
      : { onBehalfOf: principalHash(codec, behalf), onBehalfOfName: storeNames ? behalf : null };
  const quorum = (flow.inputs[key] as DecisionSpec).quorum > 1;
  let current = row;
  let recorded: RecordVoteResult | undefined;
  let completes = !quorum;
  let needed = 0;
  for (let attempt = 0; attempt < MAX_RECORD_ATTEMPTS; attempt++) {
    if (quorum) {
      const cast = await castVote(core, { ...answer, id: row.id, now: decidedAt, expectedVersion: current.version });
      ({ result: recorded, completes, needed } = cast);
    } else {
      recorded = await ledger.decisions.recordDecision({
        id: row.id,
        key,
        ...sealed,
        ...onBehalf,
        deciderDisplay: storeNames && caller.displayName ? caller.displayName : null,
        via: answer.via,
        now: decidedAt,
        expectedVersion: current.version,
      });
    }
    if (recorded.status !== 'conflict') break;
    const again = await load(core, DECIDE_TOOL, row.id);
    if ('refusal' in again) return refusal(again.reason!, again.refusal!.message);
    if (again.row.status !== 'waiting') break;
    const rechecked = chooseDecision(
      core,
      again.row,
      flow,
      again.blob,
      await ledger.decisions.listDecisions({ id: row.id }),
      key,
      caller,
      await readVotes(core, flow, row.id),
    );
    if ('refusal' in rechecked) return rechecked.refusal;
    current = again.row;
  }
  if (recorded?.status !== 'recorded') {
    const ended =
      recorded?.status === 'closed' || recorded?.status === 'conflict'
        ? await ledger.requests.getRequest(row.id)
        : undefined;
    const lost = `The decision "${key}" on request ${row.id} was made by someone else first; yours was not recorded.`;
    switch (recorded?.status ?? 'conflict') {
      case 'already_decided': {
        const winner = (await ledger.decisions.listDecisions({ id: row.id })).find((r) => r.key === key);
        return refusal('lost_race', lost, winner ? { decidedBy: decidedBy(core, winner, caller) } : {});
      }
      case 'closed':
        return notRecorded(row.id, key, ended?.status);
      case 'expired':
        return refusal(
          'expired',
          `The decision "${key}" on request ${row.id} expired before your answer arrived; it was not recorded.`,
        );
      case 'unknown':
        return refusal('unknown', `Request ${row.id} has no decision "${key}".`);
      case 'already_voted':
        return refusal('already_voted', alreadyVoted(row.id, key));
      default:
        return ended && ended.status !== 'waiting'
          ? notRecorded(row.id, key, ended.status)
          : refusal(
              'lost_race',
              `Not recorded: request ${row.id} kept changing while your decision "${key}" was recorded. Decide again in a moment.`,
            );
    }
  }
  if (!completes) {
    const more = needed === 1 ? '1 more approval is' : `${needed} more approvals are`;
    return {
      status: 'recorded',
      next: `Your vote on "${key}" is recorded; ${more} needed before request ${row.id} moves on.`,
    };
  }
  const shown = (p: string) => (core.decisions.hookPrincipals === 'id' ? p : principalHash(codec, p));
  callHook(core, 'onDecided', core.decisions.onDecided, {
    id: row.id,
    key,
    flow: flow.name,
    decider: shown(caller.principal),
    ...(behalf === undefined ? {} : { onBehalfOf: shown(behalf) }),
    decidedAt,
  });
  // The decision is recorded (acknowledged): a ledger outage while advancing the flow only delays
  // it, since the next round of the request (requester, resume, another decision) delivers it.
  let result: Awaited<ReturnType<typeof advance>>;
  try {
    result = await advance(core, flow, row.id, caller.principal, answer.via);
  } catch (error) {
    if (!isLedgerUnavailable(error)) throw error;
    core.log({ type: 'flow_error', flow: flow.name, fid: row.id, error });
    result = undefined;
  }
  let next = aftermath(row.id, result);
  if (!result) {
    // Someone else's round delivered it (the requester's, a withdrawal's): say how the flow ended.
    const after = await ledger.requests.getRequest(row.id).catch(() => undefined);
    if (after && after.status !== 'waiting') {
      const said = finalText(core, after);
      next = `The flow has ended${said ? `: ${said}` : ` (${after.status}).`}`;
    }
  }
  return { status: 'recorded', next };
}
