/**
 * What the inspect page says about one flow instance, from its audited rounds
 * and (when given) its parked request and decisions in the ledger: who
 * started it (readable id when the server stored one, else the principal's
 * keyed hash), its arguments (only when the flow records values:
 * `auditValues`; sensitive paths arrive redacted), where it stands (waiting on
 * what and on whom, finished in which final state, failed, expired, withdrawn,
 * or abandoned once its requestState's lifetime passed without an answer), its
 * times, and each decision: who decided (like "started by": the readable id
 * when the server stored names, else the keyed hash from the audit trail),
 * when, and what. Rounds run by other calls count as much as the requester's
 * (`via`): the state it stands in is the last one a round left it in. Pure: no
 * I/O, the current time is a parameter.
 */
import type { AuditEntry, DecisionRecord, Flow, ParkedRequest, VoteRecord } from '@baton/engine';
import type { StateValue } from 'xstate';
import { waitingFromAudit, waitingText } from './recordedPath.js';

/** Who started the instance: the readable id when the server stored it, and the keyed hash. */
export interface StartedBy {
  /** Keyed hash of the principal (base64url). */
  readonly hash: string;
  /** The readable principal id (`storePrincipalNames`), else `null`. */
  readonly name: string | null;
}

/** The run's arguments, or why they are not shown. */
export type ArgsView =
  | { readonly shown: true; readonly value: unknown }
  | { readonly shown: false; readonly reason: string };

/** Where an instance stands. */
export type InstanceState = 'waiting' | 'finished' | 'failed' | 'expired' | 'withdrawn' | 'abandoned';

/** Its status, for people: `{ state: 'finished', finalState: 'deployed', text: 'finished in deployed' }`. */
export interface StatusView {
  readonly state: InstanceState;
  /** The final state(s) it ended in (`finished`, `withdrawn`, `expired` by a deadline state). */
  readonly finalState?: string;
  readonly text: string;
}

/** Its times (ms since epoch). */
export interface TimesView {
  readonly started: number;
  readonly lastRound: number;
  /** When what it waits for lapses: its requestState, or the earliest pending decision's deadline. */
  readonly expires: number | null;
  /** When its next durable timer is scheduled to fire on the server (ms), or `null` (none, or ended). */
  readonly timerDue: number | null;
  /** The rounds the scheduler fired (audited `via: 'timer'`): round number and when. */
  readonly timersFired: readonly { readonly round: number; readonly at: number }[];
}

/** One decision of the instance: who decided, when, and what. */
export interface DecisionView {
  readonly key: string;
  readonly role: string | null;
  /** `pending`, `decided`, or `closed` (the request ended first). */
  readonly status: 'pending' | 'decided' | 'closed';
  /** The decider's readable id (from the ledger, only when the server stores names), else `null`. */
  readonly decider: string | null;
  /** The decider's keyed hash (from the audit trail, like "started by"), else `null`. */
  readonly deciderHash: string | null;
  readonly decidedAt: number | null;
  readonly deadline: number | null;
  /** `key:action` as the protocol carried it, e.g. `manager_approval:accept`. */
  readonly answer: string | null;
  /** The decision's content, only when the flow records values. */
  readonly value?: unknown;
  /** The round that delivered it to the flow. */
  readonly round: number | null;
  /** The decider's display name (only when the server stores names; schema 11). */
  readonly deciderDisplay?: string;
  /** The channel it came through: `decide` (the MCP tool), `decide_page`, `decide_api` (schema 11). */
  readonly via?: string;
  /** A quorum decision's votes, oldest first (from the audit trail). */
  readonly votes?: readonly VoteView[];
  /** Whom it was decided for (a delegation): the readable id when names are stored, else the audited keyed hash. */
  readonly onBehalfOf?: string;
  /** While pending and handed over: "handed by X to Y (reason)", principals as names or ledger hashes. */
  readonly handedOver?: string;
}

/** One vote of a quorum decision. */
export interface VoteView {
  /** The voter's name, only when the server stores names, else `null`. */
  readonly decider: string | null;
  /** The voter's keyed hash (as in the audit trail). */
  readonly deciderHash: string;
  readonly decidedAt: number;
  readonly via: string | null;
  readonly approves: boolean;
  /** The vote's answer, only when the flow records values. */
  readonly value?: unknown;
}

/**
 * The audit facts of a decision beyond who and when: display name, channel, votes (only those
 * known). A vote's name comes from the ledger's vote recorded at the same time for the same key
 * (the audit trail holds hashes only).
 */
function decisionAudit(
  record: Pick<DecisionRecord, 'key' | 'deciderDisplay' | 'via'> | undefined,
  answer: AuditEntry['received'][number] | undefined,
  ledgerVotes: readonly VoteRecord[] = [],
): Pick<DecisionView, 'deciderDisplay' | 'via' | 'votes'> {
  const via = record?.via ?? answer?.via;
  const nameAt = (at: number) => {
    const vote = ledgerVotes.find((v) => v.key === (record?.key ?? answer?.key) && v.decidedAt === at);
    return vote?.displayName ?? vote?.voterName ?? null;
  };
  return {
    ...(record?.deciderDisplay ? { deciderDisplay: record.deciderDisplay } : {}),
    ...(via ? { via } : {}),
    ...(answer?.votes
      ? {
          votes: answer.votes.map((v) => ({
            decider: nameAt(v.decidedAt),
            deciderHash: v.decider,
            decidedAt: v.decidedAt,
            via: v.via ?? null,
            approves: v.approves,
            ...('value' in v ? { value: v.value } : {}),
          })),
        }
      : {}),
  };
}

/** Everything the page shows about an instance besides its rounds. */
export interface InstanceDetails {
  readonly startedBy: StartedBy;
  readonly args: ArgsView;
  readonly status: StatusView;
  readonly times: TimesView;
  readonly decisions: readonly DecisionView[];
}

/** What {@link describeInstance} reads. */
export interface DescribeInput {
  readonly flow: Flow<any, any> | undefined;
  /** The instance's audited rounds, in order (at least one). */
  readonly rounds: readonly AuditEntry[];
  /** Its parked request, when the ledger has one. */
  readonly request?: ParkedRequest;
  /** Its decisions in the ledger. */
  readonly decisions?: readonly DecisionRecord[];
  /** Its quorum votes in the ledger (names, when the server stores them). */
  readonly votes?: readonly VoteRecord[];
  /** The current time (ms). */
  readonly now: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The leaf state names of a state value: `deployed`, `gather.left.named, gather.right.picked`. */
export function leafText(value: StateValue | null): string {
  if (value === null || value === undefined) return '∅';
  if (typeof value === 'string') return value;
  const leaves: string[] = [];
  const walk = (prefix: string, v: StateValue) => {
    if (typeof v === 'string') leaves.push(`${prefix}${v}`);
    else for (const [key, sub] of Object.entries(v)) walk(`${prefix}${key}.`, sub as StateValue);
  };
  walk('', value);
  return leaves.join(', ');
}

/**
 * Describe an instance.
 *
 * @example
 * ```ts
 * import { describeInstance } from '@baton/adapters';
 * import { openAuditLog } from '@baton/store';
 * import { deployProduction } from './flows.js';
 *
 * const audit = await openAuditLog('sqlite:baton.db');
 * const rounds = await audit.rounds('MC_kfretbaW51VFJ_jXHBQ');
 * const details = describeInstance({ flow: deployProduction, rounds, now: Date.now() });
 * details.status.text; // 'waiting for cHJpbmNpcGFs to answer confirm_deploy, change_ticket (until 2026-11-30T12:15:00.000Z)'
 * ```
 */
export function describeInstance(input: DescribeInput): InstanceDetails {
  const { flow, rounds, request, now } = input;
  const first = rounds[0]!;
  const last = rounds[rounds.length - 1]!;
  const startedBy: StartedBy = {
    hash: first.principal,
    name: first.principalName ?? (request && request.requesterName !== null ? request.requesterName : null),
  };
  const who = startedBy.name ?? `principal ${startedBy.hash}`;
  const args: ArgsView =
    first.args !== undefined
      ? { shown: true, value: first.args }
      : {
          shown: false,
          reason: flow?.auditValues
            ? 'not recorded (the run started before its arguments were recorded)'
            : 'hidden: the flow does not record values (auditValues)',
        };
  const decisions = decisionViews(input);
  const pendingDeadlines = decisions
    .filter((d) => d.status === 'pending' && d.deadline !== null)
    .map((d) => d.deadline as number);
  let expires: number | null = null;
  let status: StatusView;

  // The state it stands in: the last round's, unless that round found it ended by another call's
  // round and moved nothing (a `baton_resume` after a decider finished it).
  const settled = [...rounds].reverse().find((round) => round.after !== null) ?? last;
  // A call whose wait ran out completes with a "waiting" result: the request is still parked.
  const stillParked =
    request?.status === 'waiting' || (flow !== undefined && waitingFromAudit(flow, settled) !== undefined);
  if (request?.status === 'terminated') {
    // `baton runs terminate` or the page's action: the last round is the operator's, with the reason.
    status = { state: 'failed', text: `terminated by an operator: ${last.message ?? 'no reason given'}` };
  } else if (last.outcome === 'error') {
    status = { state: 'failed', text: `failed in round ${last.round}: ${last.message ?? 'error'}` };
  } else if (last.outcome === 'complete' && !stillParked) {
    const finalState = leafText(settled.after);
    status =
      request?.status === 'withdrawn'
        ? { state: 'withdrawn', finalState, text: `withdrawn by its requester (ended in ${finalState})` }
        : { state: 'finished', finalState, text: `finished in ${finalState}` };
  } else if (request?.status === 'expired') {
    status = { state: 'expired', text: 'expired: nobody decided before the deadline' };
  } else if (request?.status === 'withdrawn') {
    status = { state: 'withdrawn', text: 'withdrawn by its requester' };
  } else if (request?.status === 'waiting' && request.waitingFor.length > 0) {
    expires = pendingDeadlines.length > 0 ? Math.min(...pendingDeadlines) : null;
    const waiting = request.waitingFor.map((w) => {
      const d = decisions.find((x) => x.key === w.key);
      return { key: w.key, role: w.role ?? null, ...(d?.deadline != null ? { deadline: d.deadline } : {}) };
    });
    status =
      expires !== null && pendingDeadlines.every((deadline) => deadline <= now)
        ? { state: 'expired', text: `expired: the decision deadline passed at ${iso(expires)}` }
        : { state: 'waiting', text: waitingText('waiting', waiting) };
  } else {
    const onDecisions = flow ? waitingFromAudit(flow, settled) : undefined;
    if (onDecisions) {
      status = { state: 'waiting', text: onDecisions.text };
    } else {
      expires = last.expiresAt ?? null;
      const asked = last.asked.length > 0 ? `answer ${last.asked.join(', ')}` : 'come back';
      if (expires !== null && expires <= now) {
        status = {
          state: 'abandoned',
          text: `abandoned: ${who} did not ${asked} before its state expired at ${iso(expires)}`,
        };
      } else {
        const until = expires !== null ? ` (until ${iso(expires)})` : '';
        status = { state: 'waiting', text: `waiting for ${who} to ${asked}${until}` };
      }
    }
  }
  return {
    startedBy,
    args,
    status,
    times: {
      started: first.at,
      lastRound: last.at,
      expires,
      timerDue: request?.status === 'waiting' ? (request.dueAt ?? null) : null,
      timersFired: rounds.filter((r) => r.via === 'timer').map((r) => ({ round: r.round, at: r.at })),
    },
    decisions,
  };
}

/** A decision's delegation as the page shows it: for whom it was decided, or to whom it is handed. */
function delegationOf(
  record: NonNullable<DescribeInput['decisions']>[number],
  answer: AuditEntry['received'][number] | undefined,
): { onBehalfOf?: string; handedOver?: string } {
  const behalf = record.onBehalfOfName ?? answer?.onBehalfOf ?? record.onBehalfOf ?? undefined;
  const h = record.status === 'pending' && record.assignee ? record.handover : null;
  return {
    ...(behalf ? { onBehalfOf: behalf } : {}),
    ...(h
      ? {
          handedOver: `handed by ${h.byName ?? h.by} to ${h.toName ?? h.to}${h.reason ? ` (${h.reason})` : ''}`,
        }
      : {}),
  };
}

/** The decisions: the ledger's records, joined with the audited answers that delivered them. */
function decisionViews(input: DescribeInput): DecisionView[] {
  const delivered = new Map<string, { round: number; answer: AuditEntry['received'][number] }>();
  for (const round of input.rounds) {
    for (const answer of round.received) {
      if (answer.decider !== undefined) delivered.set(answer.key, { round: round.round, answer });
    }
  }
  const views: DecisionView[] = [];
  const seen = new Set<string>();
  for (const record of input.decisions ?? []) {
    seen.add(record.key);
    const audited = delivered.get(record.key);
    views.push({
      key: record.key,
      role: record.role,
      status: record.status,
      decider: record.deciderName,
      deciderHash: audited?.answer.decider ?? null,
      decidedAt: record.decidedAt,
      deadline: record.deadline,
      answer: audited ? `${record.key}:${audited.answer.action}` : record.status === 'decided' ? `${record.key}` : null,
      ...(audited && 'value' in audited.answer ? { value: audited.answer.value } : {}),
      round: audited?.round ?? null,
      ...decisionAudit(record, audited?.answer, input.votes),
      ...delegationOf(record, audited?.answer),
    });
  }
  // Without a ledger (or once pruned from it): what the audit trail says.
  for (const [key, { round, answer }] of delivered) {
    if (seen.has(key)) continue;
    const role = (input.flow?.inputs as Record<string, { role?: string }> | undefined)?.[key]?.role ?? null;
    views.push({
      key,
      role,
      status: 'decided',
      decider: null,
      deciderHash: answer.decider ?? null,
      decidedAt: input.rounds.find((r) => r.round === round)?.at ?? null,
      deadline: null,
      answer: `${key}:${answer.action}`,
      ...('value' in answer ? { value: answer.value } : {}),
      round,
      ...decisionAudit(undefined, answer),
      ...(answer.onBehalfOf ? { onBehalfOf: answer.onBehalfOf } : {}),
    });
  }
  return views;
}
