/**
 * What the SQL drivers share about parked requests and decisions: turning
 * the rows drizzle reads back (`baton_requests`, `baton_decisions`) into the
 * engine's `ParkedRequest` and `DecisionRecord`, and `waitingFor` into the
 * JSON text stored in `waiting_for` and back. The memory ledger keeps the
 * same normal form, so every ledger hands back the same values. A stored
 * value this code cannot read (a hand-edited row) is a one-line
 * `LedgerError` naming the row, never a silent default.
 */
import type {
  DecisionRecord,
  DecisionStatus,
  HandOver,
  LegacyDecider,
  ParkedRequest,
  RecordVote,
  RequestStatus,
  VoteRecord,
  WaitingFor,
} from '@baton/engine';
import { LedgerError } from './errors.js';

const REQUEST_STATUSES: ReadonlySet<string> = new Set<RequestStatus>([
  'waiting',
  'completed',
  'expired',
  'withdrawn',
  'terminated',
]);
const DECISION_STATUSES: ReadonlySet<string> = new Set<DecisionStatus>(['pending', 'decided', 'closed']);

/**
 * A `baton_requests` row as drizzle returns it (camelCase fields): the engine's `ParkedRequest`,
 * with the status unchecked and `waitingFor` as its stored JSON text.
 */
export type StoredRequest = Omit<ParkedRequest, 'status' | 'waitingFor' | 'dueAt'> & {
  readonly status: string;
  readonly waitingFor: string;
  readonly dueAt?: number | null;
};

/** A `baton_decisions` row as drizzle returns it (camelCase fields): a `DecisionRecord`, its status unchecked. */
export type StoredDecision = Omit<DecisionRecord, 'status' | 'handover'> & {
  readonly status: string;
  /** The hand-over as JSON text (schema 12). */
  readonly handover?: string | null;
};

/** `waitingFor` in its normal form: `{ key }`, `{ key, role }` or `{ key, event }`, nothing else. */
export function normalizeWaitingFor(list: readonly WaitingFor[]): WaitingFor[] {
  return list.map((entry) =>
    entry.event !== undefined
      ? { key: entry.key, event: entry.event }
      : entry.role === undefined
        ? { key: entry.key }
        : { key: entry.key, role: entry.role },
  );
}

/** The JSON text stored in `waiting_for`. */
export function encodeWaitingFor(list: readonly WaitingFor[]): string {
  return JSON.stringify(normalizeWaitingFor(list));
}

/** A stored `baton_requests` row as the engine's `ParkedRequest`. */
export function toParkedRequest(row: StoredRequest): ParkedRequest {
  if (!REQUEST_STATUSES.has(row.status)) {
    throw new LedgerError(`baton_requests row "${row.id}" has an unknown status "${row.status}"`);
  }
  let waitingFor: WaitingFor[];
  try {
    waitingFor = normalizeWaitingFor(JSON.parse(row.waitingFor) as WaitingFor[]);
  } catch (error) {
    throw new LedgerError(`baton_requests row "${row.id}" has an unreadable waiting_for`, { cause: error });
  }
  return {
    id: row.id,
    flow: row.flow,
    requester: row.requester,
    requesterName: row.requesterName,
    status: row.status as RequestStatus,
    waitingFor,
    state: row.state,
    version: Number(row.version),
    createdAt: Number(row.createdAt),
    updatedAt: Number(row.updatedAt),
    expiresAt: Number(row.expiresAt),
    dueAt: row.dueAt === null || row.dueAt === undefined ? null : Number(row.dueAt),
  };
}

/** A stored hand-over (JSON text) as the engine's `HandOver`; `null` when there is none. */
function parseHandover(row: StoredDecision): HandOver | null {
  if (row.handover === null || row.handover === undefined) return null;
  try {
    return JSON.parse(row.handover) as HandOver;
  } catch (error) {
    throw new LedgerError(`baton_decisions row ("${row.id}", "${row.key}") has an unreadable handover`, {
      cause: error,
    });
  }
}

/** A stored `baton_decisions` row as the engine's `DecisionRecord`. */
export function toDecisionRecord(row: StoredDecision): DecisionRecord {
  if (!DECISION_STATUSES.has(row.status)) {
    throw new LedgerError(`baton_decisions row ("${row.id}", "${row.key}") has an unknown status "${row.status}"`);
  }
  return {
    id: row.id,
    key: row.key,
    flow: row.flow,
    role: row.role,
    message: row.message,
    schema: row.schema,
    requester: row.requester,
    requestedAt: Number(row.requestedAt),
    deadline: row.deadline === null ? null : Number(row.deadline),
    status: row.status as DecisionStatus,
    decider: row.decider,
    deciderName: row.deciderName,
    content: row.content,
    decidedAt: row.decidedAt === null ? null : Number(row.decidedAt),
    assignee: row.assignee ?? null,
    handover: parseHandover(row),
    onBehalfOf: row.onBehalfOf ?? null,
    onBehalfOfName: row.onBehalfOfName ?? null,
    // Schema 11: set only where recorded (a decision recorded before, or without them, reads as before).
    ...(row.deciderDisplay == null ? {} : { deciderDisplay: row.deciderDisplay }),
    ...(row.via == null ? {} : { via: row.via }),
  };
}

/** The `baton_decision_votes` row of a vote written at `now`, by the write that made `version`. */
export function voteRow(vote: RecordVote, now: number, version: number) {
  return {
    id: vote.id,
    key: vote.key,
    voter: vote.voter,
    voterName: vote.voterName ?? null,
    displayName: vote.displayName ?? null,
    content: vote.content,
    decidedAt: now,
    via: vote.via,
    version,
  };
}

/** A stored `baton_decision_votes` row as the engine's `VoteRecord`. */
export function toVoteRecord(
  row: Omit<VoteRecord, 'decidedAt' | 'version'> & {
    readonly decidedAt: number | bigint;
    readonly version: number | bigint;
  },
): VoteRecord {
  return {
    id: row.id,
    key: row.key,
    voter: row.voter,
    voterName: row.voterName,
    displayName: row.displayName,
    content: row.content,
    decidedAt: Number(row.decidedAt),
    via: row.via,
    version: Number(row.version),
  };
}

/** Legacy deciders (decided before schema 6) read and rewritten per batch by `rewriteLegacyDeciders`. */
export const REWRITE_DECIDERS_BATCH = 500;

/**
 * The `baton_meta` key set once `rewriteLegacyDeciders` found no legacy decider left: later starts
 * read this one row instead of scanning `baton_decisions` (the legacy rows have no index). Only
 * migration 0006 makes legacy rows, so start-up deletes the key whenever it applies a migration
 * (a database restored from before schema 6, say), and the next runner scans again.
 */
export const LEGACY_DECIDERS_DONE_KEY = 'legacy_deciders_rewritten';

/** A row decided before schema 6 (readable `decider_name`, empty `decider`) as a `LegacyDecider`. */
export function toLegacyDecider(row: {
  id: string;
  key: string;
  deciderName: string | null;
  content: string | null;
}): LegacyDecider {
  return { id: row.id, key: row.key, principal: row.deciderName ?? '', content: row.content };
}
