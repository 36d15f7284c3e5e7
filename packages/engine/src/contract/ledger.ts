/**
 * The `Ledger` contract: the server-side memory that makes a requestState
 * single-use, and that keeps what outlives a round: single-use tokens, flow
 * instances parked while they wait on someone other than their caller, the
 * decisions those people make, and the recorded outcomes of durable steps
 * (claimed under a lease, recorded once). The engine defines it and calls it;
 * `@baton/store` implements it (memory, SQLite, PostgreSQL). Everything a
 * ledger stores beyond ids, digests, keys, roles and times is opaque to it:
 * outcomes, parked states and step results arrive already sealed by the engine, so a ledger
 * never needs the key ring.
 */

/** What the engine asks a ledger to redeem at the start of a round. */
export interface RedeemRequest {
  /** The envelope's random 128-bit id (base64url, 22 characters; 96-bit, 16, for format-version-2 states). */
  readonly jti: string;
  /** A digest (base64url) of this round's `inputResponses`, canonicalised. */
  readonly responsesDigest: string;
  /** When the envelope expires (ms since epoch): the row may be pruned after it. */
  readonly expiresAt: number;
  /** The current time (ms since epoch), from the engine's clock. */
  readonly now: number;
}

/**
 * The answer to {@link LedgerRedemptions.redeem}.
 * - `redeemed`: first use; the round runs.
 * - `retry`: the same jti with byte-identical responses was redeemed before and its
 *   outcome recorded; `outcome` is the sealed outcome to answer with again.
 * - `in_progress`: the same jti with byte-identical responses was redeemed at `redeemedAt`
 *   (ms since epoch, the redeeming engine's clock) and no outcome is recorded yet: its round
 *   is still running, or it crashed. The engine tells the two apart by age (a round runs for a
 *   bounded time) and holds a duplicate of a running round until its outcome lands.
 * - `replayed`: used before with other responses, or expired: reject.
 */
export type RedeemResult =
  | { readonly status: 'redeemed' }
  | { readonly status: 'retry'; readonly outcome: string }
  | { readonly status: 'in_progress'; readonly redeemedAt: number }
  | { readonly status: 'replayed' };

/** Options for {@link LedgerRedemptions.mintToken}. */
export interface MintTokenRequest {
  /** What the token is for (for example `"access-code"`); redemption must name the same purpose. */
  readonly purpose: string;
  /** When the token stops being redeemable (ms since epoch). */
  readonly expiresAt: number;
  /** Optional opaque data returned on redemption (for example the resource granted). */
  readonly data?: string;
  /** The current time (ms since epoch). */
  readonly now: number;
}

/** The answer to {@link LedgerRedemptions.redeemToken}. */
export type RedeemTokenResult =
  | { readonly status: 'redeemed'; readonly data: string | undefined }
  | { readonly status: 'already_used' }
  | { readonly status: 'expired' }
  | { readonly status: 'unknown' };

/** What a parked request waits for: one entry per pending decision, and one per awaited event. */
export interface WaitingFor {
  /** The decision's (or the event input's) key in the flow (e.g. `manager_approval`, `ci`). */
  readonly key: string;
  /** The role that may decide, when the flow names one. */
  readonly role?: string;
  /** For an event wait (schema 9): the event's name (e.g. `ci.finished`). */
  readonly event?: string;
}

/**
 * An event a parked request waits for (schema 9): the event's name and the correlation key the
 * request's `match` gave (`''` when the event has none). See {@link ParkRequest.events}.
 */
export interface EventWait {
  readonly event: string;
  readonly match: string;
}

/** What {@link LedgerEvents.recordEvent} records: a received event, before it is routed. */
export interface NewEvent {
  /** The event's name. */
  readonly event: string;
  /** The event's id: the sender's (de-duplication), or a random one. */
  readonly id: string;
  /** Its correlation key (`''` when the event has none). */
  readonly match: string;
  /** The event's data, sealed by the engine (opaque to the ledger). */
  readonly data: string;
  /** The current time (ms), from the engine's clock. */
  readonly now: number;
  /** Until when a wait that begins receives it (ms): the lookback window's end. */
  readonly lookbackUntil: number;
  /** When the row may be pruned (ms): the end of the de-duplication window (at least `lookbackUntil`). */
  readonly expiresAt: number;
}

/**
 * The answer to {@link LedgerEvents.recordEvent}: `recorded` for exactly one of any number of concurrent
 * calls with one (event, id); the others get `duplicate` with what the first delivery reached
 * (`delivered`, `null` while it still runs) and when it was received.
 */
export type RecordEventResult =
  | { readonly status: 'recorded' }
  | { readonly status: 'duplicate'; readonly delivered: number | null; readonly receivedAt: number };

/** A received event as {@link LedgerEvents.recentEvents} returns it. */
export interface EventRecord {
  readonly event: string;
  readonly id: string;
  readonly match: string;
  /** As recorded: sealed by the engine. */
  readonly data: string;
  readonly receivedAt: number;
}

/** A parked request waiting for an event, as {@link LedgerEvents.eventWaiters} finds it. */
export interface EventWaiter {
  readonly id: string;
  readonly flow: string;
  /**
   * The waiting request's row, when the ledger read it with the wait (PostgreSQL does, in the
   * same statement): routing starts from it instead of reading the request again. It may be
   * stale by the time it is used; the compare-and-set write catches that (then the request is
   * read again). Absent: routing reads it with `getRequest`.
   */
  readonly request?: ParkedRequest;
}

/**
 * Where a parked request stands. `completed`: its flow reached a final state (through its own
 * timeout branch too: an `after` to a "timed out" state handled the deadline); `expired`: a
 * deadline fired and the flow could not handle it (the round that fired it failed); `withdrawn`:
 * its requester (or an operator's cancel) delivered the flow's withdrawal; `terminated`: an
 * operator ended it whatever its flow says.
 */
export type RequestStatus = 'waiting' | 'completed' | 'expired' | 'withdrawn' | 'terminated';

/**
 * A flow instance parked in the ledger while it waits on something other than its caller's
 * answer (a decision by someone else). One row per request id, rewritten as the flow moves on.
 */
export interface ParkedRequest {
  /** The request id: the flow instance's id (`fid`). Shown to people ("request R-…"). */
  readonly id: string;
  /** The flow's name. */
  readonly flow: string;
  /** A keyed hash of the requester's principal (never the principal itself). */
  readonly requester: string;
  /** The requester's readable principal, stored only when the operator opts in; else `null`. */
  readonly requesterName: string | null;
  readonly status: RequestStatus;
  /** What it waits for while `waiting`; empty otherwise. */
  readonly waitingFor: readonly WaitingFor[];
  /** The flow's latest state, sealed by the engine (opaque to the ledger). */
  readonly state: string;
  /**
   * 1 when created, +1 on every write: the compare-and-set token of {@link LedgerRequests.parkRequest}
   * and {@link LedgerDecisions.recordDecision} (a recorded decision is a write of its request).
   */
  readonly version: number;
  /** When it was first parked (ms). */
  readonly createdAt: number;
  /** When it was last written (ms). */
  readonly updatedAt: number;
  /** When the row may be pruned (ms). */
  readonly expiresAt: number;
  /**
   * When its earliest durable timer is due (ms), while `waiting`; `null` (or absent, from a ledger
   * before schema 8): none. The scheduler fires it ({@link LedgerSchedule.claimDueRequests}).
   */
  readonly dueAt?: number | null;
}

/**
 * A notification for the outbox, written in the same ledger write as the round that raised it
 * ({@link ParkRequest.outbox}, or {@link LedgerOutbox.enqueueOutbox}), delivered later at least once.
 */
export interface OutboxMessage {
  /** Stable id: every delivery attempt carries it (`webhook-id`); a second insert of one id is ignored. */
  readonly id: string;
  /** The event type (`decision.requested`, `decision.made`, `request.ended`, `flow.notification`). */
  readonly type: string;
  /** The body to deliver, JSON text (`{ type, timestamp, data }`). */
  readonly body: string;
  /**
   * The W3C `traceparent` of the round that raised it, so its delivery attempts join the flow
   * instance's trace; absent without tracing.
   */
  readonly traceparent?: string;
}

/** An outbox row as {@link LedgerOutbox.claimOutbox} hands it out. */
export interface OutboxRecord extends OutboxMessage {
  /** Delivery attempts before this one. */
  readonly attempts: number;
  /** When it was written (ms). */
  readonly createdAt: number;
}

/** What {@link LedgerSchedule.claimDueRequests} asks for. */
export interface ClaimDue {
  /** Who claims: an opaque id per scheduler. */
  readonly owner: string;
  /** The current time (ms), from the engine's clock: timers due at or before it are claimed. */
  readonly now: number;
  /** The claim runs until then (ms); past it another scheduler may claim the request again. */
  readonly leaseUntil: number;
  /** At most this many. */
  readonly limit: number;
}

/** A parked request whose timer is due, claimed by one scheduler under a lease. */
export interface DueRequest {
  readonly id: string;
  readonly flow: string;
  /** When its timer was due (ms). */
  readonly dueAt: number;
  /** Its version when claimed. */
  readonly version: number;
}

/** What {@link LedgerOutbox.claimOutbox} asks for. */
export interface ClaimOutbox {
  readonly now: number;
  /** Claimed rows are not handed out again before this time (ms): the delivery lease. */
  readonly leaseUntil: number;
  readonly limit: number;
}

/** What {@link LedgerOutbox.settleOutbox} records about one delivery attempt. */
export interface SettleOutbox {
  readonly id: string;
  readonly now: number;
  /** `true`: delivered (never handed out again). `false`: failed; try again at `nextAttemptAt`. */
  readonly delivered: boolean;
  /** When to try again after a failure (ms). */
  readonly nextAttemptAt?: number;
}

/** What the scheduler's metrics read ({@link LedgerSchedule.schedulerStats}). */
export interface SchedulerStats {
  /** Waiting requests whose timer is due at `now` (fired or not yet). */
  readonly due: number;
  /** Notifications not delivered yet. */
  readonly outboxDepth: number;
  /** When the oldest of them was written (ms), or `null`. */
  readonly outboxOldestAt: number | null;
  /** Decisions requested and not made yet (pending, whether handed over or not); absent: not counted by this ledger. */
  readonly decisionsWaiting?: number;
}

/** What {@link LedgerRequests.parkRequest} writes (the ledger sets `version` and `createdAt`). */
export interface ParkRequest {
  readonly id: string;
  readonly flow: string;
  readonly requester: string;
  readonly requesterName: string | null;
  readonly status: RequestStatus;
  readonly waitingFor: readonly WaitingFor[];
  readonly state: string;
  /** The current time (ms), from the engine's clock. */
  readonly now: number;
  readonly expiresAt: number;
  /**
   * When its earliest durable timer is due (ms); `null` or absent: none. Every write also ends
   * any scheduler's claim on the request (schema 8).
   */
  readonly dueAt?: number | null;
  /** Notifications raised by the round, inserted in the same transaction as the write (only when it succeeds). */
  readonly outbox?: readonly OutboxMessage[];
  /**
   * The events the request waits for (schema 9). Every write replaces the request's event waits
   * with these, in the same transaction: none when absent or when `status` is not `waiting`, so a
   * request whose wait ended (a timeout fired, say) is never routed an event again.
   */
  readonly events?: readonly EventWait[];
}

/** The answer to {@link LedgerRequests.parkRequest}. */
export type ParkResult = { readonly status: 'parked'; readonly version: number } | { readonly status: 'conflict' };

/** Where a decision stands. `closed`: its request ended (withdrawn, expired, completed) before anyone decided. */
export type DecisionStatus = 'pending' | 'decided' | 'closed';

/** A decision requested of someone other than the requester. One row per (request id, key). */
export interface DecisionRecord {
  /** The request id (the flow instance's `fid`). */
  readonly id: string;
  /** The decision's key in the flow (e.g. `manager_approval`). */
  readonly key: string;
  readonly flow: string;
  /** The role that may decide; `null` when only the flow's predicate says who may. */
  readonly role: string | null;
  /** The rendered message shown to the decider. */
  readonly message: string;
  /** The elicitation form schema of the answer, as JSON text. */
  readonly schema: string;
  /** A keyed hash of the requester's principal (four eyes: it never decides). */
  readonly requester: string;
  /** When it was requested (ms). */
  readonly requestedAt: number;
  /** After it (ms), it can no longer be decided; `null`: no deadline. */
  readonly deadline: number | null;
  readonly status: DecisionStatus;
  /**
   * A keyed hash of the decider's principal (the same hash as requesters'), once decided; never
   * the principal itself. `null` while pending or closed, and for a decision recorded before
   * schema version 6 that the engine has not rewritten yet (its `deciderName` holds the old
   * readable value until {@link LedgerDecisions.rewriteLegacyDeciders} replaces it).
   */
  readonly decider: string | null;
  /** The decider's readable principal, stored only when the operator opts in; else `null`. */
  readonly deciderName: string | null;
  /** The decision's content as the engine stored it (opaque text), once decided. */
  readonly content: string | null;
  /** When it was decided (ms). */
  readonly decidedAt: number | null;
  /**
   * The decider's display name (an OAuth `name` claim, a token entry's `name`), stored only when
   * names are stored; `null` (or absent, from a ledger before schema 11) otherwise.
   */
  readonly deciderDisplay?: string | null;
  /**
   * The channel the decision came through (`decide`: the MCP tool, `decide_page`, `decide_api`);
   * `null` (or absent) before schema 11.
   */
  readonly via?: string | null;
  /**
   * Keyed hash of the principal a decider handed this decision to ({@link LedgerDecisions.handDecision});
   * `null` (or absent, from a ledger before schema 12): not handed over.
   */
  readonly assignee?: string | null;
  /**
   * The latest hand-over of this decision; `null` (or absent): never handed over. Kept once it is
   * decided (recording clears `assignee`), as the record of who handed it to whom and why.
   */
  readonly handover?: HandOver | null;
  /**
   * Keyed hash of the principal on whose behalf it was decided (a hand-over's or an absence's
   * authority); `null` (or absent): the decider decided in their own right.
   */
  readonly onBehalfOf?: string | null;
  /** That principal's readable id, only when names are stored; else `null`. */
  readonly onBehalfOfName?: string | null;
}

/**
 * A pending decision handed by one decider to another principal ("Y may act for X on this
 * decision"). Principals are keyed hashes (the same hash as requesters'), readable ids only when
 * names are stored. Times in ms.
 */
export interface HandOver {
  /** Keyed hash of the principal it was handed to (the decision's `assignee`). */
  readonly to: string;
  readonly toName: string | null;
  /** Keyed hash of who handed it (the latest hand-over's decider). */
  readonly by: string;
  readonly byName: string | null;
  /** Keyed hash of the principal whose right the assignee uses (the first hander, kept when handed on). */
  readonly onBehalfOf: string;
  readonly onBehalfOfName: string | null;
  /** That principal and the roles it decided with, sealed by the engine (opaque to the ledger). */
  readonly authority: string;
  /** Why, as the hander said it; `null`: no reason given. */
  readonly reason: string | null;
  readonly at: number;
}

/** What {@link LedgerDecisions.handDecision} writes: a pending decision's hand-over, one compare-and-set. */
export interface HandDecision {
  readonly id: string;
  readonly key: string;
  readonly handover: HandOver;
  /** The current time (ms): a decision past its deadline is refused (`expired`). */
  readonly now: number;
  /** As {@link RecordDecision.expectedVersion}: written only at this version, which it bumps. */
  readonly expectedVersion: number;
}

/** The answer to {@link LedgerDecisions.handDecision}: as {@link RecordDecisionResult}, `handed` for the one that wrote. */
export type HandDecisionResult =
  | { readonly status: 'handed'; readonly version: number }
  | Exclude<RecordDecisionResult, { readonly status: 'recorded' }>;

/**
 * An absence delegate: while `principal` is away (`startsAt` ≤ now < `endsAt`), `delegate` may make
 * the decisions `principal` could make with `roles`. Set and removed by operators; kept after its
 * removal (`removedAt`) as the record of who delegated what, when and why. Principals are keyed
 * hashes, readable ids only when names are stored. Times in ms.
 */
export interface DelegationRecord {
  /** A random id (`baton delegates remove <id>`). */
  readonly id: string;
  readonly principal: string;
  readonly principalName: string | null;
  readonly delegate: string;
  readonly delegateName: string | null;
  /** The roles of `principal` the delegate uses (stated by the operator). */
  readonly roles: readonly string[];
  /** `principal` and `roles`, sealed by the engine (opaque to the ledger). */
  readonly authority: string;
  readonly startsAt: number;
  readonly endsAt: number;
  readonly reason: string;
  /** Keyed hash of the operator who set it, and its name when names are stored. */
  readonly setBy: string;
  readonly setByName: string | null;
  readonly createdAt: number;
  /** When an operator removed it; `null` while it stands. */
  readonly removedAt: number | null;
  readonly removedReason: string | null;
  /** Keyed hash of the operator who removed it (their name, when names are stored, in `removedByName`). */
  readonly removedBy: string | null;
  readonly removedByName: string | null;
}

/** What {@link LedgerDecisions.setDelegation} inserts. */
export type NewDelegation = Omit<DelegationRecord, 'removedAt' | 'removedReason' | 'removedBy' | 'removedByName'>;

/** What {@link LedgerDecisions.removeDelegation} records. */
export interface RemoveDelegation {
  readonly id: string;
  readonly now: number;
  readonly reason: string;
  /** Keyed hash of the operator, and their name when names are stored. */
  readonly by: string;
  readonly byName: string | null;
}

/** Which delegations {@link LedgerDecisions.listDelegations} returns (all of them, newest first, without a filter). */
export interface DelegationFilter {
  /** Only those whose delegate is this keyed hash. */
  readonly delegate?: string;
  /** Only those not removed and in force at this time (ms). */
  readonly activeAt?: number;
}

/** What {@link LedgerDecisions.requestDecisions} inserts. */
export type NewDecision = Omit<
  DecisionRecord,
  | 'status'
  | 'decider'
  | 'deciderName'
  | 'content'
  | 'decidedAt'
  | 'deciderDisplay'
  | 'via'
  | 'assignee'
  | 'handover'
  | 'onBehalfOf'
  | 'onBehalfOfName'
>;

/** Which decisions {@link LedgerDecisions.listDecisions} returns. */
export interface DecisionFilter {
  /** Only this request's decisions (any status). */
  readonly id?: string;
  /** Only pending decisions whose deadline has not passed at `now`, whose role is one of
   * `roles` or `null`, and whose requester is not `excludeRequester`. */
  readonly pendingFor?: {
    readonly roles: readonly string[];
    readonly excludeRequester: string;
    readonly now: number;
  };
  /**
   * Only pending decisions handed to this keyed hash ({@link DecisionRecord.assignee}) whose
   * deadline has not passed at `now` (schema 12; a ledger without hand-overs returns none).
   */
  readonly handedTo?: { readonly assignee: string; readonly now: number };
}

/** What {@link LedgerDecisions.recordDecision} records. */
export interface RecordDecision {
  readonly id: string;
  readonly key: string;
  /** A keyed hash of the decider's principal. */
  readonly decider: string;
  /** The decider's readable principal when the operator opts in to storing names; else `null` (or absent). */
  readonly deciderName?: string | null;
  readonly content: string;
  /** The decider's display name when names are stored (schema 11); else `null` or absent. */
  readonly deciderDisplay?: string | null;
  /** The channel it came through (schema 11): `decide`, `decide_page`, `decide_api`. */
  readonly via?: string;
  /** Keyed hash of the principal the decider acted for (a delegation); absent or `null`: in their own right. */
  readonly onBehalfOf?: string | null;
  /** That principal's readable id, only when names are stored. */
  readonly onBehalfOfName?: string | null;
  /** The current time (ms): a decision past its deadline is refused. */
  readonly now: number;
  /**
   * The version of the parked request (`ParkedRequest.version`) the decider's checks read.
   * The decision is recorded only while the request is still `waiting` at exactly this
   * version, and recording it bumps the version (and `updatedAt` to `now`), in one transaction: the same
   * compare-and-set as {@link LedgerRequests.parkRequest}, so of a decision and any other write to
   * the request (a withdrawal, a timer, another decision) that raced from one version,
   * exactly one succeeds.
   */
  readonly expectedVersion: number;
}

/**
 * The answer to {@link LedgerDecisions.recordDecision}: `recorded` for exactly one of any number of
 * concurrent calls for one (id, key), and for at most one of any concurrent writes of its
 * request from one version; the others learn why not. Checked in this order:
 * - `unknown`: no such (id, key), or its request is gone (pruned).
 * - `already_decided`: someone recorded it first (also after its deadline: it was in time).
 * - `closed`: the decision was closed, or its request is no longer `waiting` (withdrawn,
 *   expired, completed), even before its pending decisions were closed.
 * - `expired`: its deadline passed.
 * - `conflict`: the request is still waiting but was written since `expectedVersion`
 *   (another decision, a delivered answer, a fired timer): nothing was recorded; read the
 *   request again, check again and retry with its version.
 * - `recorded`: recorded; `version` is the request's new version.
 */
export type RecordDecisionResult =
  | { readonly status: 'recorded'; readonly version: number }
  | { readonly status: 'already_decided' }
  | { readonly status: 'closed' }
  | { readonly status: 'conflict' }
  | { readonly status: 'expired' }
  | { readonly status: 'unknown' };

/**
 * One vote on a quorum decision (`decision({ quorum: 2 })`, schema 11): one row per (request id,
 * key, voter). A voter votes once; the vote that completes the decision (the quorum reached, or
 * a rejection that ends it) is written with the decision itself ({@link RecordVote.decide}).
 */
export interface VoteRecord {
  /** The request id. */
  readonly id: string;
  /** The decision's key. */
  readonly key: string;
  /** A keyed hash of the voter's principal (the same hash as deciders'). */
  readonly voter: string;
  /** The voter's readable principal, only when names are stored; else `null`. */
  readonly voterName: string | null;
  /** The voter's display name, only when names are stored; else `null`. */
  readonly displayName: string | null;
  /** The vote's content and the voter's principal, sealed by the engine (opaque to the ledger). */
  readonly content: string;
  /** When the vote was recorded (ms). */
  readonly decidedAt: number;
  /** The channel it came through: `decide`, `decide_page`, `decide_api`. */
  readonly via: string;
  /** The request's version this vote's write made (the order of a request's votes). */
  readonly version: number;
}

/** What {@link LedgerDecisions.recordVote} records. */
export interface RecordVote {
  readonly id: string;
  readonly key: string;
  readonly voter: string;
  readonly voterName?: string | null;
  readonly displayName?: string | null;
  /** The sealed vote. */
  readonly content: string;
  readonly via: string;
  /** The current time (ms): a decision past its deadline takes no vote. */
  readonly now: number;
  /** As {@link RecordDecision.expectedVersion}: the vote is a write of its request (compare-and-set). */
  readonly expectedVersion: number;
  /**
   * Set when this vote completes the decision (the engine counted the votes it read at
   * `expectedVersion`): the decision is recorded as {@link LedgerDecisions.recordDecision} would, in the
   * same transaction as the vote and the version bump.
   */
  readonly decide?: Pick<RecordDecision, 'decider' | 'deciderName' | 'deciderDisplay' | 'content' | 'via'>;
}

/**
 * The answer to {@link LedgerDecisions.recordVote}: as {@link RecordDecisionResult} (checked in the same
 * order), and `already_voted` when this voter has a vote on (id, key) already (checked after
 * `expired`, before `conflict`); nothing is written then.
 */
export type RecordVoteResult = RecordDecisionResult | { readonly status: 'already_voted' };

/**
 * A decision recorded before schema version 6, when ledgers held the decider's principal
 * readably: its migration moved that value into `decider_name` and left `decider` empty, for the
 * engine (which holds the keys) to rewrite through {@link LedgerDecisions.rewriteLegacyDeciders}.
 */
export interface LegacyDecider {
  readonly id: string;
  readonly key: string;
  /** The decider's readable principal, as the older version stored it. */
  readonly principal: string;
  /** The decision's content as the older version sealed it (bound to the readable principal). */
  readonly content: string | null;
}

/** What a {@link LegacyDecider} row becomes: the decider as the engine records it now. */
export interface DeciderRewrite {
  /** A keyed hash of the principal. */
  readonly decider: string;
  /** The readable principal when names are stored, else `null`. */
  readonly deciderName: string | null;
  /** The content sealed again as the engine seals it now (as it was when it does not open). */
  readonly content: string | null;
}

/** Where a durable step stands: `running` under a lease until its result or final error is recorded. */
export type StepStatus = 'running' | 'succeeded' | 'failed';

/**
 * A durable step of a flow instance: one row per (flow instance id, step key). The key names the
 * step and its invocation (`issueRefund#0`, `issueRefund#1` when the instance invokes it again).
 */
export interface StepRecord {
  /** The flow instance's id (`fid`). */
  readonly id: string;
  /** The step's id and invocation number, as the engine writes it (`<step id>#<n>`). */
  readonly key: string;
  readonly status: StepStatus;
  /** The instance that holds (or last held) the lease: an opaque id the engine picks per runner. */
  readonly owner: string;
  /** Until when the owner's lease runs (ms); past it another instance may claim the step. */
  readonly leaseUntil: number;
  /** How many times the step was claimed by a new owner (1 for the first run; +1 per takeover). */
  readonly claims: number;
  /** The result or final error, sealed by the engine (opaque to the ledger); `null` while running. */
  readonly outcome: string | null;
  /** When the outcome was recorded (ms), or `null`. */
  readonly recordedAt: number | null;
  /** When the row may be pruned (ms). */
  readonly expiresAt: number;
}

/** What {@link LedgerSteps.claimStep} asks for. */
export interface ClaimStep {
  readonly id: string;
  readonly key: string;
  /** Who claims (the same owner renews its own lease). */
  readonly owner: string;
  /** The lease asked for: until this time (ms). */
  readonly leaseUntil: number;
  /** The current time (ms), from the engine's clock: a lease that ended before it can be taken over. */
  readonly now: number;
  /** When a new row may be pruned (ms). */
  readonly expiresAt: number;
}

/**
 * The answer to {@link LedgerSteps.claimStep}.
 * - `claimed`: the caller holds the lease and runs the step (first claim, its own lease renewed,
 *   or a lease that had ended taken over); `claims` as in {@link StepRecord.claims}.
 * - `held`: another owner's lease is still running: wait for its outcome, or for the lease to end.
 * - `recorded`: the step has an outcome: deliver it, never run the step again.
 */
export type ClaimStepResult =
  | { readonly status: 'claimed'; readonly claims: number }
  | { readonly status: 'held'; readonly owner: string; readonly leaseUntil: number }
  | { readonly status: 'recorded'; readonly record: StepRecord };

/** What {@link LedgerSteps.recordStep} records. */
export interface RecordStep {
  readonly id: string;
  readonly key: string;
  /** `succeeded` (a result) or `failed` (the error after the last attempt). */
  readonly status: Exclude<StepStatus, 'running'>;
  /** The sealed result or error. */
  readonly outcome: string;
  readonly now: number;
}

/**
 * The answer to {@link LedgerSteps.recordStep}: `recorded` for exactly one of any number of
 * concurrent calls for one (id, key), whoever holds the lease (a step that outlived its lease
 * and finishes first still wins); the others get the record that won. `unknown`: never claimed.
 */
export type RecordStepResult =
  | { readonly status: 'recorded' }
  | { readonly status: 'already_recorded'; readonly record: StepRecord }
  | { readonly status: 'unknown' };

/**
 * Which parked requests {@link LedgerRuns.listRuns} returns, for operators: every filter given must
 * hold. Ordered by `updatedAt` newest first, then by `id` (code point order).
 */
export interface RunFilter {
  /** Only this flow's requests. */
  readonly flow?: string;
  /** Only requests in this status. */
  readonly status?: RequestStatus;
  /** Only this requester's: its keyed hash, or its readable name where names are stored. */
  readonly requester?: string;
  /** Only requests written at or after this time (ms). */
  readonly updatedSince?: number;
  /** Only requests first parked at or after this time (ms). */
  readonly createdSince?: number;
  /** A page after this one: only requests that come after it in the order (keyset paging). */
  readonly after?: { readonly updatedAt: number; readonly id: string };
  /** At most this many. */
  readonly limit: number;
}

/** Redemption latency over a bounded window of the most recent redemptions, in ms. */
export interface LatencySummary {
  /** Redemptions timed since the ledger opened (cumulative). */
  readonly count: number;
  /** Their total time, in ms (cumulative). */
  readonly sumMs: number;
  /** Percentiles and maximum over the most recent redemptions (at most a fixed window); 0 when none. */
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** Writes a ledger sent together in one statement (PostgreSQL), cumulative. */
export interface BatchStats {
  /** Statements sent. */
  readonly sent: number;
  /** Writes they carried (`items / sent` is the mean batch size). */
  readonly items: number;
  /** The largest batch so far. */
  readonly largest: number;
}

/**
 * What a ledger has done since it was opened, for monitoring (`GET /healthz`, `GET /metrics`).
 * Counters are cumulative; nothing in it names a principal, a key or a connection string.
 *
 * @example `{ driver: 'sqlite', redemptions: { redeemed: 12, retried: 1, inProgress: 0, replayed: 2 }, outcomesRecorded: 12, unavailableErrors: 0, errors: 0, lastErrorAt: null, redeemLatency: { count: 15, sumMs: 4.2, p50Ms: 0.2, p90Ms: 0.5, p99Ms: 0.9, maxMs: 0.9 } }`
 */
export interface LedgerStats {
  /** Which driver: `memory`, `sqlite` or `postgres`. */
  readonly driver: string;
  /**
   * Redemptions by result: first uses, retries answered from a recorded outcome, refusals, and
   * `inProgress` answers (a duplicate of a round still running; every poll of a held duplicate counts).
   */
  readonly redemptions: {
    readonly redeemed: number;
    readonly retried: number;
    readonly inProgress: number;
    readonly replayed: number;
  };
  /** Outcomes recorded. */
  readonly outcomesRecorded: number;
  /** Calls that failed with `LedgerUnavailableError` (the database could not be reached). */
  readonly unavailableErrors: number;
  /** Calls that failed for any reason (unavailable included). */
  readonly errors: number;
  /** When a call last failed (ms since epoch), or `null`. */
  readonly lastErrorAt: number | null;
  readonly redeemLatency: LatencySummary;
  /** PostgreSQL: batches of redemptions and of outcomes. */
  readonly batches?: { readonly redeem: BatchStats; readonly outcome: BatchStats };
  /** PostgreSQL: the connection pool now (`total` open, `idle`, callers `waiting` for one). */
  readonly pool?: { readonly total: number; readonly idle: number; readonly waiting: number };
}

/**
 * The `redemptions` facet of a {@link Ledger}. Single use: each requestState is redeemed once, each token once. Every ledger has it.
 */
export interface LedgerRedemptions {
  /** Redeem an envelope's jti before any side effect of the round. */
  redeem(request: RedeemRequest): Promise<RedeemResult>;
  /** Record the sealed outcome of a redeemed round, for replay-safe retries. */
  recordOutcome(jti: string, sealedOutcome: string): Promise<void>;
  /**
   * Redeem a jti and record its sealed outcome in ONE write, for a round that had no side effect
   * of its own (the runner played it first: `round/purity.ts`). `redeemed`: the jti was new, and
   * it is now redeemed with `sealedOutcome` recorded. Otherwise nothing is written and the answer
   * is what {@link LedgerRedemptions.redeem} gives for a jti redeemed already: `retry` with the
   * outcome recorded first (same answers), `in_progress` (redeemed, no outcome yet) or `replayed`
   * (other answers, or an expired state). Atomic across processes, as `redeem` is.
   */
  redeemWithOutcome(request: RedeemRequest, sealedOutcome: string): Promise<RedeemResult>;
  /**
   * Undo a redemption whose round was cut short by a ledger outage (`LedgerUnavailableError`), so
   * the client's retry of the same requestState runs the round again instead of being refused
   * as `replayed`. Deletes the row only while it has no outcome and was redeemed with
   * `responsesDigest`; `true` when it did. A database that is restarting should be retried for
   * a while (as {@link LedgerRedemptions.recordOutcome} is).
   */
  releaseRedemption(jti: string, responsesDigest: string): Promise<boolean>;
  /** Mint a single-use token; returns the code to hand out (only a hash of it is stored). */
  mintToken(request: MintTokenRequest): Promise<string>;
  /** Redeem a single-use token exactly once. */
  redeemToken(code: string, purpose: string, now: number): Promise<RedeemTokenResult>;
}

/**
 * The `requests` facet of a {@link Ledger}. Flow instances parked between rounds, versioned by compare-and-set. Every ledger has it.
 */
export interface LedgerRequests {
  /**
   * Park a request: create it (`expectedVersion` `null`; `conflict` when the id exists) or
   * rewrite it when its stored version is `expectedVersion` (else `conflict`: someone moved
   * the flow on first; read it again). Atomic across processes.
   */
  parkRequest(request: ParkRequest, expectedVersion: number | null): Promise<ParkResult>;
  /** A parked request by id. */
  getRequest(id: string): Promise<ParkedRequest | undefined>;
  /** A requester's parked requests updated at or after `since` (ms), newest first. */
  listRequests(requester: string, since: number): Promise<ParkedRequest[]>;
}

/**
 * The `decisions` facet of a {@link Ledger}. Decisions owed by people other than the caller: requests, records, quorum votes, hand-overs and absence delegates.
 */
export interface LedgerDecisions {
  /** Insert pending decisions; one whose (id, key) exists already is left as it is. */
  requestDecisions(decisions: readonly NewDecision[]): Promise<void>;
  /** Decisions by request id, or the pending ones a caller may make (see {@link DecisionFilter}). */
  listDecisions(filter: DecisionFilter): Promise<DecisionRecord[]>;
  /**
   * Record a pending decision at most once, by compare-and-set on its request's version (see
   * {@link RecordDecision.expectedVersion} and {@link RecordDecisionResult}). Atomic across
   * processes, in one transaction with the version bump.
   */
  recordDecision(decision: RecordDecision): Promise<RecordDecisionResult>;
  /**
   * Record one vote on a quorum decision at most once per voter, by compare-and-set on its
   * request's version, with the decision itself when the vote completes it (see
   * {@link RecordVote} and {@link RecordVoteResult}). Atomic across processes. Schema 11.
   */
  recordVote(vote: RecordVote): Promise<RecordVoteResult>;
  /** A request's votes (every key), in the order they were written (by `version`). Schema 11. */
  listVotes(id: string): Promise<VoteRecord[]>;
  /** Close a request's pending decisions (it was withdrawn, expired or completed); returns how many. */
  closeDecisions(id: string, now: number): Promise<number>;
  /**
   * Hand a pending decision over (see {@link HandDecision}): sets its `assignee` and `handover`,
   * by the same compare-and-set on its request's version as {@link LedgerDecisions.recordDecision}, checked
   * in the same order. Schema 12.
   */
  handDecision(handOver: HandDecision): Promise<HandDecisionResult>;
  /** Insert an absence delegate (schema 12). */
  setDelegation(delegation: NewDelegation): Promise<void>;
  /** Absence delegates, newest first (see {@link DelegationFilter}). */
  listDelegations(filter: DelegationFilter): Promise<DelegationRecord[]>;
  /** Mark an absence delegate removed (kept as a record); `false` when unknown or removed already. */
  removeDelegation(removal: RemoveDelegation): Promise<boolean>;
  /**
   * Rewrite every decision recorded before schema version 6 (see {@link LegacyDecider}) with what
   * `rewrite` returns for it, so no readable decider stays behind unless names are stored; the
   * runner calls it once when it is created. Each row is rewritten only while it is still legacy
   * (two instances starting at once rewrite it once). Returns how many rows were rewritten.
   * A ledger that never held readable deciders returns 0.
   */
  rewriteLegacyDeciders(rewrite: (legacy: LegacyDecider) => DeciderRewrite): Promise<number>;
}

/**
 * The `steps` facet of a {@link Ledger}. Durable steps: claimed under a lease, recorded once, reopened by an operator.
 */
export interface LedgerSteps {
  /**
   * Claim a durable step under a lease (see {@link ClaimStepResult}). Atomic across processes:
   * of concurrent claims of an unclaimed step, or of one whose lease ended, exactly one wins.
   */
  claimStep(claim: ClaimStep): Promise<ClaimStepResult>;
  /** Record a claimed step's outcome at most once (see {@link RecordStepResult}). */
  recordStep(record: RecordStep): Promise<RecordStepResult>;
  /** A step by flow instance id and key. */
  getStep(id: string, key: string): Promise<StepRecord | undefined>;
  /**
   * Reopen a step whose record says `failed` for another execution (an operator's
   * `baton runs retry-step`): back to `running` with no outcome and a lease that has ended, so
   * the next claim takes it (and counts as a new owner in `claims`). Only while it is `failed`:
   * `true` when it was reopened, `false` otherwise (unknown, running, succeeded, or reopened by
   * another call first; of concurrent calls exactly one reopens it).
   */
  reopenStep(id: string, key: string, now: number): Promise<boolean>;
}

/**
 * The `runs` facet of a {@link Ledger}. What operators read: every requester's runs and one run's steps (`baton runs`, the inspector).
 */
export interface LedgerRuns {
  /**
   * Parked requests of every requester, for operators (`baton runs list`), filtered and paged as
   * {@link RunFilter} says.
   */
  listRuns(filter: RunFilter): Promise<ParkedRequest[]>;
  /** Every durable step of one flow instance, by key. */
  listSteps(id: string): Promise<StepRecord[]>;
}

/**
 * The `schedule` facet of a {@link Ledger}. Timers that fire with nobody calling: due requests claimed under a lease.
 */
export interface LedgerSchedule {
  /**
   * Claim up to `limit` waiting requests whose `dueAt` is at or before `now` and that no other
   * scheduler holds under a running lease, earliest first, and hold them until `leaseUntil`.
   * Atomic across processes (PostgreSQL: `FOR UPDATE SKIP LOCKED` on the due index; SQLite: one
   * claimant at a time), so of concurrent claims exactly one gets each request. The claim does
   * not change `version`: the fire itself is an ordinary compare-and-set write
   * ({@link LedgerRequests.parkRequest}), which also ends the claim. Schema 8.
   */
  claimDueRequests(claim: ClaimDue): Promise<DueRequest[]>;
  /** Counts for `/metrics` (one cheap query each). Schema 8. */
  schedulerStats(now: number): Promise<SchedulerStats>;
}

/**
 * The `outbox` facet of a {@link Ledger}. Notifications written with the state that caused them, delivered at least once.
 */
export interface LedgerOutbox {
  /** Insert notifications outside a parked write (an id that exists is left as it is). Schema 8. */
  enqueueOutbox(messages: readonly OutboxMessage[], now: number): Promise<void>;
  /**
   * Hand out up to `limit` undelivered notifications due for an attempt at `now`, oldest first,
   * each to one caller until `leaseUntil` (atomic across processes). Schema 8.
   */
  claimOutbox(claim: ClaimOutbox): Promise<OutboxRecord[]>;
  /** Record one delivery attempt's result (see {@link SettleOutbox}). Schema 8. */
  settleOutbox(settle: SettleOutbox): Promise<void>;
}

/**
 * The `events` facet of a {@link Ledger}. Received events, de-duplicated, with a lookback window.
 */
export interface LedgerEvents {
  /**
   * Record a received event once per (event, id), for de-duplication and the lookback window
   * (see {@link RecordEventResult}). Atomic across processes. Schema 9.
   */
  recordEvent(event: NewEvent): Promise<RecordEventResult>;
  /** A received event's delivery count (`null` while its first delivery runs), or `undefined`. */
  getEvent(
    event: string,
    id: string,
  ): Promise<{ readonly delivered: number | null; readonly receivedAt: number } | undefined>;
  /** Record how many waiting instances the first delivery of (event, id) reached. */
  settleEvent(event: string, id: string, delivered: number): Promise<void>;
  /**
   * The waiting requests whose event waits hold (event, match) (see {@link ParkRequest.events}),
   * by id in code point order, at most `limit`, after the id `after` when given (keyset paging).
   * Reads the (event, match) index only.
   */
  eventWaiters(query: {
    readonly event: string;
    readonly match: string;
    readonly limit: number;
    readonly after?: string;
  }): Promise<EventWaiter[]>;
  /**
   * The events of (event, match) whose lookback window is still open at `now`, oldest first
   * (then by id), at most `limit`.
   */
  recentEvents(query: {
    readonly event: string;
    readonly match: string;
    readonly now: number;
    readonly limit: number;
  }): Promise<EventRecord[]>;
}

/**
 * The `health` facet of a {@link Ledger}. Monitoring: counters (no I/O) and one round trip to the database.
 */
export interface LedgerHealth {
  /** Cumulative counters for monitoring (optional; `@baton/store`'s ledgers have it). Cheap: no I/O. */
  stats(): LedgerStats;
  /**
   * Check that the database answers (one trivial round trip); rejects (with
   * `LedgerUnavailableError` when it cannot be reached) otherwise.
   */
  ping(): Promise<void>;
}

/** The facets a ledger may leave out, by the key it holds each under. */
export type LedgerFacet = 'decisions' | 'steps' | 'runs' | 'schedule' | 'outbox' | 'events' | 'health';

/**
 * At-most-once memory shared by every server instance, as named facets.
 *
 * Every ledger has `redemptions` and `requests`; it declares each other facet by holding it.
 * `createRunner` checks once, against the flows it serves and the features it is given, that
 * every facet they need is there, and refuses to start otherwise, naming the facet: no feature
 * asks later whether a method exists. `@baton/store`'s ledgers have every facet
 * ({@link FullLedger}).
 *
 * Implementations must make {@link LedgerRedemptions.redeem} and {@link LedgerRedemptions.redeemToken}
 * atomic across processes: of any number of concurrent calls with one jti or
 * code, exactly one wins. A call that fails because the ledger's database cannot be
 * reached (restarting, refusing connections) should reject with `LedgerUnavailableError`,
 * which clients see as a retryable error rather than an internal one.
 *
 * ```ts
 * const ledger: Ledger = {
 *   redemptions: { redeem, recordOutcome, redeemWithOutcome, releaseRedemption, mintToken, redeemToken },
 *   requests: { parkRequest, getRequest, listRequests },
 *   steps: { claimStep, recordStep, getStep, reopenStep }, // it serves durable steps
 *   prune,
 *   close,
 * };
 * ```
 */
export interface Ledger {
  /** Single use of requestStates and tokens. */
  readonly redemptions: LedgerRedemptions;
  /** Parked flow instances. */
  readonly requests: LedgerRequests;
  /** Needed by flows with a decision state (four eyes, quorum, delegation). */
  readonly decisions?: LedgerDecisions;
  /** Needed by flows with durable steps. */
  readonly steps?: LedgerSteps;
  /** Needed by `baton runs` and the inspector's run list. */
  readonly runs?: LedgerRuns;
  /** Needed by a scheduler (timers that fire with nobody calling). */
  readonly schedule?: LedgerSchedule;
  /** Needed by signed notifications (webhooks) delivered through the outbox. */
  readonly outbox?: LedgerOutbox;
  /** Needed by flows that wait for an event, and by the `/events` endpoint. */
  readonly events?: LedgerEvents;
  /** Needed by `/metrics` and `/readyz`. */
  readonly health?: LedgerHealth;
  /** Delete rows that expired before `now`; returns how many were removed. */
  prune(now: number): Promise<number>;
  /** Release connections and timers. */
  close(): Promise<void>;
}

/** A ledger with every facet, as `@baton/store`'s memory, SQLite and PostgreSQL ledgers are. */
export type FullLedger = Required<Ledger>;
