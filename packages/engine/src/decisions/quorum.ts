/**
 * Quorum decisions (`decision({ quorum: 2 })`): each answer is a vote, written
 * by the one decision model in `deciding.ts` as one compare-and-set on the
 * parked request's version (`LedgerDecisions.recordVote`), so racing voters serialise.
 * This module holds what is particular to quorums: reading a request's votes
 * (none read for flows without a quorum decision), whether a caller voted
 * already (a principal counts once), counting approvals and rejections with
 * the decision's `approves` and `rejects`, sealing a vote and, when a vote
 * completes the decision (the quorum reached, or a rejection that ends it),
 * the deciding record sealed with every vote for the machine's one event; and
 * where a pending quorum stands, for the inbox and the decision page.
 */

import type { Flow } from '../authoring/flowTypes.js';
import { type DecisionSpec, isDecision } from '../authoring/inputs/decision.js';
import type { AuditVia } from '../contract/audit.js';
import type { RecordVoteResult, VoteRecord } from '../contract/ledger.js';
import { openVote, principalHash, type SealedQuorum, sealDecision, sealVote } from './parked.js';
import type { DecisionsPort } from './port.js';
import type { DecisionCaller, QuorumStatus } from './types.js';

/** Whether `key` is a decision of `flow` that needs more than one approval. */
export function isQuorum(flow: Flow, key: string): boolean {
  const spec = flow.inputs[key];
  return isDecision(spec) && spec.quorum > 1;
}

/** Whether `flow` has a quorum decision (then its ledger must take votes). */
export function hasQuorum(flow: Flow): boolean {
  return Object.keys(flow.inputs).some((key) => isQuorum(flow, key));
}

/** A request's votes; `[]`, with no read, for a flow without a quorum decision. */
export async function readVotes(core: DecisionsPort, flow: Flow, id: string): Promise<readonly VoteRecord[]> {
  if (!hasQuorum(flow) || !core.ledger) return [];
  return core.ledger.decisions.listVotes(id);
}

/** Whether `caller` has voted on decision `key` already (compared by keyed hash). */
export function hasVoted(
  core: DecisionsPort,
  votes: readonly VoteRecord[],
  key: string,
  caller: DecisionCaller,
): boolean {
  if (votes.length === 0) return false;
  const mine = principalHash(core.codec, caller.principal);
  return votes.some((v) => v.key === key && v.voter === mine);
}

interface OpenedVote {
  readonly principal: string;
  readonly content: unknown;
  readonly decidedAt: number;
  readonly approves: boolean;
  readonly via: string;
  readonly display: string | null;
}

/** The votes on `key` that open (one that does not is left out: altered, or its key left the ring). */
function opened(core: DecisionsPort, spec: DecisionSpec, votes: readonly VoteRecord[], key: string): OpenedVote[] {
  const out: OpenedVote[] = [];
  for (const vote of votes) {
    if (vote.key !== key) continue;
    const open = openVote(core.codec, vote);
    if (!open) continue;
    const { decidedAt, via, displayName } = vote;
    out.push({ ...open, decidedAt, via, display: displayName, approves: spec.approves(open.content) });
  }
  return out;
}

/** What a quorum's votes come to: still open, approved (the quorum reached) or rejected. */
export function quorumResult(
  spec: DecisionSpec,
  votes: readonly { readonly content: unknown; readonly approves: boolean }[],
): 'open' | 'approved' | 'rejected' {
  const approvals = votes.filter((v) => v.approves).length;
  if (approvals >= spec.quorum) return 'approved';
  const tally = { quorum: spec.quorum, approvals, rejections: votes.length - approvals, votes };
  return spec.rejects(tally) ? 'rejected' : 'open';
}

/** One vote to write, as {@link castVote} takes it. */
export interface Ballot {
  readonly flow: Flow;
  readonly id: string;
  readonly key: string;
  readonly caller: DecisionCaller;
  /** The validated content. */
  readonly content: unknown;
  readonly via: Extract<AuditVia, 'decide' | 'decide_api' | 'decide_page' | 'app'>;
  readonly now: number;
  /** The request's version the caller's checks read. */
  readonly expectedVersion: number;
}

/** What {@link castVote} wrote: the ledger's answer, and whether this vote completed the decision. */
export interface CastVote {
  readonly result: RecordVoteResult;
  readonly completes: boolean;
  /** Approvals still needed after this vote (when it did not complete the decision). */
  readonly needed: number;
}

/**
 * Write one vote: read the votes, count them with this one and write it with one compare-and-set
 * on `expectedVersion` (votes are only written with a version bump, so the votes read are the
 * ones at that version whenever the write succeeds); with the decision itself when this vote
 * completes it, sealed with every vote.
 */
export async function castVote(core: DecisionsPort, ballot: Ballot): Promise<CastVote> {
  const ledger = core.ledger!;
  const { flow, id, key, caller, content, via, now } = ballot;
  const spec = flow.inputs[key] as DecisionSpec;
  const storeNames = core.decisions.storePrincipalNames;
  const before = opened(core, spec, await ledger.decisions.listVotes(id), key);
  const display = storeNames && caller.displayName ? caller.displayName : null;
  const mine: OpenedVote = {
    principal: caller.principal,
    content,
    decidedAt: now,
    approves: spec.approves(content),
    via,
    display,
  };
  const all = [...before, mine];
  const result = quorumResult(spec, all);
  const sealedQuorum: SealedQuorum = {
    votes: all.map((v) => ({
      p: v.principal,
      c: v.content ?? null,
      t: v.decidedAt,
      a: v.approves,
      w: v.via,
      ...(v.display ? { n: v.display } : {}),
    })),
    approved: result === 'approved',
  };
  const decided =
    result === 'open'
      ? undefined
      : {
          ...sealDecision(core.codec, id, key, caller.principal, content, storeNames, { quorum: sealedQuorum }),
          deciderDisplay: display,
          via,
        };
  const written = await ledger.decisions.recordVote({
    id,
    key,
    voter: principalHash(core.codec, caller.principal),
    voterName: storeNames ? caller.principal : null,
    displayName: display,
    content: sealVote(core.codec, id, key, caller.principal, content),
    via,
    now,
    expectedVersion: ballot.expectedVersion,
    ...(decided ? { decide: decided } : {}),
  });
  const approvals = all.filter((v) => v.approves).length;
  return { result: written, completes: decided !== undefined, needed: Math.max(0, spec.quorum - approvals) };
}

/** Where a pending quorum decision stands, as `caller` may be told (names only when stored). */
export function quorumStatus(
  core: DecisionsPort,
  flow: Flow,
  votes: readonly VoteRecord[],
  key: string,
  caller: DecisionCaller,
): QuorumStatus | undefined {
  const spec = flow.inputs[key];
  if (!isDecision(spec) || spec.quorum <= 1) return undefined;
  const mine = principalHash(core.codec, caller.principal);
  const cast = votes
    .filter((v) => v.key === key)
    .map((v) => {
      const open = openVote(core.codec, v);
      return {
        decider: v.displayName ?? v.voterName ?? v.voter,
        approves: open ? spec.approves(open.content) : false,
        you: v.voter === mine,
        decidedAt: v.decidedAt,
      };
    });
  const approvals = cast.filter((v) => v.approves).length;
  return { required: spec.quorum, approvals, needed: Math.max(0, spec.quorum - approvals), votes: cast };
}
