/**
 * The decision tools' transport-free API, offered by every runner: `inbox`
 * (the pending decisions a caller may make), `decide` (a two-round MRTR call:
 * one form elicitation under the key `decision`, then the answer recorded
 * once and the parked flow advanced at once), `requests` (the caller's own
 * requests), `resume` (the requester continues a parked flow as its own tool
 * would) and `withdraw`. The adapters map each to an MCP tool
 * (`baton_inbox`, `baton_decide`, `baton_requests`, `baton_resume`,
 * `baton_withdraw`); a refusal is an `error` outcome whose message is a
 * sentence (a tool error, never -32602, which stays for bad requestStates).
 * Four eyes is enforced here: the requester never decides their own request,
 * whatever their roles. This module holds the tools' types only (a leaf of
 * the decisions folder, which its parts import instead of the assembly in
 * `tools.ts`): deciding is `decide.ts`, the other tools are `requestTools.ts`,
 * both finding requests through `access.ts` and advancing parked flows
 * through `advance.ts`.
 */
import type { Flow } from '../authoring/flowTypes.js';
import type { AnswerIssue } from '../authoring/inputs/spec.js';
import type { StateBinding } from '../codec/types.js';
import type { AuditOutcome, AuditVia } from '../contract/audit.js';
import type { CallContext } from '../contract/call.js';
import type { ParkedRequest, RequestStatus, WaitingFor } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';
import type { ElicitationSchema } from '../contract/wire.js';

/**
 * Who calls a decision tool: the principal, its roles, what the client can be asked, and
 * optionally a display name (a token entry's `name`, an OAuth `name` claim) that the audit of a
 * decision keeps when names are stored.
 */
export type DecisionCaller = Pick<CallContext, 'principal' | 'roles' | 'capabilities'> & {
  readonly displayName?: string;
};

/** One vote already cast on a quorum decision, as a decider may be told (times in ms since epoch). */
export interface QuorumVote {
  /** The voter: its display name or readable principal when names are stored, else its keyed hash. */
  readonly decider: string;
  /** Whether the vote approves. */
  readonly approves: boolean;
  /** Whether the caller cast it. */
  readonly you: boolean;
  readonly decidedAt: number;
}

/** Where a pending quorum decision (`decision({ quorum })`) stands. */
export interface QuorumStatus {
  /** How many approvals it needs in all. */
  readonly required: number;
  /** How many it has. */
  readonly approvals: number;
  /** How many are still needed (`required - approvals`). */
  readonly needed: number;
  /** The votes cast so far, oldest first. */
  readonly votes: readonly QuorumVote[];
}

/** What `onDecisionRequested` receives. Times in ms since epoch. */
export interface DecisionRequestedEvent {
  /** The request id (the flow instance). */
  readonly id: string;
  readonly key: string;
  readonly flow: string;
  /** The role that may decide, when the flow names one. */
  readonly role?: string;
  readonly message: string;
  readonly requestedAt: number;
  readonly deadline?: number;
  /** The requester: a keyed hash, or the id with `hookPrincipals: 'id'`. */
  readonly requester: string;
}

/** What `onDecided` receives. */
export interface DecidedEvent {
  readonly id: string;
  readonly key: string;
  readonly flow: string;
  /** The decider: a keyed hash (the same as requesters'), or the id with `hookPrincipals: 'id'`. */
  readonly decider: string;
  /** Whom the decider decided for (a hand-over or an absence delegate), shown like `decider`; absent: in their own right. */
  readonly onBehalfOf?: string;
  readonly decidedAt: number;
}

/** A pending decision in an inbox (times in ms since epoch). */
export interface InboxItem {
  readonly id: string;
  readonly key: string;
  readonly flow: string;
  readonly message: string;
  readonly requestedAt: number;
  readonly deadline?: number;
  /**
   * Set when this server cannot open the request (it was sealed with a key id this server's
   * `BATON_KEYS` lack): the sentence saying so; `message` is then that refusal, not the decision's.
   */
  readonly unreadable?: string;
  /** Quorum decisions only: how many approvals are still needed and who voted. */
  readonly quorum?: QuorumStatus;
  /** Set when the caller may make it only for someone else (a hand-over or an absence delegate). */
  readonly delegated?: DelegatedFor;
}

/**
 * Whom a decision is made for when it came through a delegation: `handover` (a decider handed it
 * to the caller; `by`, `reason`) or `absence` (an operator made the caller the delegate of an
 * absent principal). Principals as the runner shows them: readable ids when names are stored,
 * else keyed hashes.
 */
export interface DelegatedFor {
  readonly kind: 'handover' | 'absence';
  readonly onBehalfOf: string;
  /** `handover`: who handed it. */
  readonly by?: string;
  readonly reason?: string;
}

/** A `delegate` call: the caller hands a pending decision it may make to `to`. */
export interface DelegateRequest {
  readonly id: string;
  /** Needed only when the caller may make more than one pending decision on the request. */
  readonly key?: string;
  /** The principal it is handed to (never the requester, never the caller). */
  readonly to: string;
  /** Why (kept in the audit trail and shown with the decision); at most 500 characters. */
  readonly reason?: string;
  readonly context: DecisionCaller;
}

/**
 * What `delegate` answers: `{ status: 'handed', id, key, flow, to, message }` (`to` as the runner
 * shows principals), or a refusal (not allowed, unknown, decided, expired, a race lost, or
 * `unavailable` on a ledger that cannot hand decisions over).
 */
export type DelegateResult =
  | {
      readonly status: 'handed';
      readonly id: string;
      readonly key: string;
      readonly flow: string;
      readonly to: string;
      readonly message: string;
    }
  | DecisionRefusal;

/** One of the caller's own requests. `waitingFor` is set while `waiting` (empty: it waits on the requester). */
export interface RequestItem {
  readonly id: string;
  readonly flow: string;
  readonly status: RequestStatus;
  readonly waitingFor?: readonly WaitingFor[];
}

/** A `decide` call: without `requestState` it asks; with it, it records. */
export interface DecideRequest {
  readonly id: string;
  /** Needed only when the caller may make more than one pending decision on the request. */
  readonly key?: string;
  readonly context: DecisionCaller;
  readonly requestState?: string;
  readonly inputResponses?: Readonly<Record<string, unknown>>;
}

/** A `runStatus` read (the requester's). */
export interface RunStatusRequest {
  readonly id: string;
  readonly context: DecisionCaller;
}

/** One thing a waiting run waits for (times in ms since epoch). */
export interface RunWait {
  readonly key: string;
  /** The role that decides it, when one does. */
  readonly role?: string;
  /** The event it waits for, when it is one. */
  readonly event?: string;
  /** The decision's question, as its deciders read it. */
  readonly message?: string;
  /** After it, the decision can no longer be made. */
  readonly deadline?: number;
  /** A quorum decision's approvals so far. */
  readonly quorum?: QuorumStatus;
}

/** One audited round of a run: who ran it (`via`), when, and the states it passed through. */
export interface RunStep {
  readonly round: number;
  readonly via: AuditVia;
  readonly at: number;
  readonly states: readonly string[];
  readonly outcome: AuditOutcome;
}

/** The requester's run as `runStatus` reads it (times in ms since epoch). */
export interface RunStatus {
  readonly id: string;
  readonly flow: string;
  readonly flowTitle?: string;
  /** The flow author's summary line of this run (`defineFlow({ summary })`). */
  readonly summary?: string;
  readonly status: RequestStatus;
  /** The state the run is in (`approval.manager` for a nested one). */
  readonly state: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** When its earliest durable timer is due, while waiting. */
  readonly dueAt?: number;
  /** What it waits for, while waiting; `[]` once it has ended. */
  readonly waitingFor: readonly RunWait[];
  /** Its audited rounds, in order (`[]` when the runner keeps no audit trail). */
  readonly steps: readonly RunStep[];
  /** How it ended, once it has: the flow's result text, and whether it is an error. */
  readonly outcome?: { readonly text: string; readonly isError: boolean };
  /**
   * While it waits in a state the flow's own app has data for (`defineFlow({ app })`): that
   * state and the data, from the run's context.
   */
  readonly app?: { readonly state: string; readonly data: unknown };
  /** How often a reader should read it again while it waits (ms): the task poll interval for a person. */
  readonly pollMs: number;
}

/** What `runStatus` answers: the run, or a refusal (unknown, someone else's, or unreadable here). */
export type RunStatusResult =
  | { readonly status: 'found'; readonly run: RunStatus }
  | { readonly status: 'refused'; readonly reason: 'unknown' | 'unavailable'; readonly message: string };

/** A `resume` call (the requester's). */
export interface ResumeRequest {
  readonly id: string;
  readonly context: DecisionCaller;
  readonly requestState?: string;
  readonly inputResponses?: Readonly<Record<string, unknown>>;
}

/** A `withdraw` call (the requester's). */
export interface WithdrawRequest {
  readonly id: string;
  readonly context: DecisionCaller;
}

/**
 * Why a decision cannot be described or answered (the HTTP decision API maps each to a status):
 * - `not_allowed`: the caller is the requester (four eyes) or lacks the role (or the flow's `may`);
 * - `unknown`: no such request, or no such decision on it, or it awaits no decision now;
 * - `already_decided`: someone (maybe the caller) made it already (`decidedBy` says who, to a caller who may make it);
 * - `expired`: past its deadline, or the request expired;
 * - `withdrawn`: the requester withdrew the request;
 * - `ended`: the request ended otherwise (completed, ended by an operator, the decision closed);
 * - `ambiguous_key`: the caller may make several decisions on the request (`keys`): say which;
 * - `lost_race`: another decision or write won while this one was being recorded;
 * - `already_voted`: a quorum decision the caller voted on already (a principal counts once);
 * - `unavailable`: this server cannot serve the request (no ledger, a flow it does not serve, a
 *   request sealed with a key it lacks);
 * - `in_progress`: an answer under the same idempotency key is still being recorded (retry after `retryAfterMs`);
 * - `key_reused`: the idempotency key was used before for another answer (or its first attempt was lost).
 */
export type DecisionRefusalReason =
  | 'not_allowed'
  | 'unknown'
  | 'already_decided'
  | 'expired'
  | 'withdrawn'
  | 'ended'
  | 'ambiguous_key'
  | 'lost_race'
  | 'already_voted'
  | 'unavailable'
  | 'in_progress'
  | 'key_reused';

/** Who made a recorded decision. Times in ms since epoch. */
export interface DecidedBy {
  /** The decision's key. */
  readonly key: string;
  /** The decider: the readable principal when the runner stores names, else its keyed hash. */
  readonly decider: string;
  /** Whether the caller made it. */
  readonly you: boolean;
  readonly decidedAt?: number;
  /** Whom the decider acted for (a delegation), shown as `decider` is. */
  readonly onBehalfOf?: string;
}

/**
 * A refusal: `{ status: 'refused', reason: 'already_decided', message: 'The decision "manager_approval"
 * on request R… has already been made.', decidedBy: { key, decider, you, decidedAt } }`.
 */
export interface DecisionRefusal {
  readonly status: 'refused';
  readonly reason: DecisionRefusalReason;
  /** A sentence for a person (what the decision tools say as a tool error). */
  readonly message: string;
  /** `already_decided` and `lost_race`, to a caller who may make the decision: who made it. */
  readonly decidedBy?: DecidedBy;
  /** `ambiguous_key`: the decisions the caller may make on the request. */
  readonly keys?: readonly string[];
  /** `in_progress`: when to try again, ms. */
  readonly retryAfterMs?: number;
  /** `not_allowed` because the caller asked for this request (four eyes), not for a missing role. */
  readonly ownRequest?: true;
}

/**
 * Where a one-shot decision came from, as the audit trail records it: `via: 'decide_api' | 'decide_page'`,
 * or `'app'` for a decision made in an MCP App (`baton_decide` with its `answer`, from a client that
 * declared the extension `io.modelcontextprotocol/ui`).
 */
export type DecisionChannel = 'api' | 'page' | 'app';

/** A `describeDecision` call. */
export interface DescribeDecisionRequest {
  readonly id: string;
  /** Needed only when the caller may make more than one pending decision on the request. */
  readonly key?: string;
  readonly context: DecisionCaller;
}

/** A pending decision as data, for a page or an API (times in ms since epoch). */
export interface DecisionView {
  /** The request id. */
  readonly id: string;
  readonly key: string;
  readonly flow: string;
  readonly message: string;
  /** The role that may decide, when the flow names one. */
  readonly role?: string;
  readonly requestedAt: number;
  readonly deadline?: number;
  /** Who asked: the readable principal when the runner stores names, else its keyed hash. */
  readonly requester: string;
  /**
   * The request's arguments, only for flows that allow values (`defineFlow({ auditValues: true })`),
   * sensitive context paths redacted.
   */
  readonly arguments?: unknown;
  /** The form the decider answers (the same as `baton_decide` asks). */
  readonly requestedSchema: ElicitationSchema;
  /** The decisions already made on this request (other keys), oldest first. */
  readonly decided: readonly DecidedBy[];
  /** Quorum decisions only: how many approvals are still needed and who voted. */
  readonly quorum?: QuorumStatus;
  /** Set when the caller may make it only for someone else (a hand-over or an absence delegate). */
  readonly delegated?: DelegatedFor;
  /** Set while the decision is handed over: to whom, by whom, for whom, why and when. */
  readonly handover?: {
    readonly to: string;
    readonly by: string;
    readonly onBehalfOf: string;
    readonly reason?: string;
    readonly at: number;
  };
}

/** What `describeDecision` answers: `{ status: 'pending', decision: DecisionView }`, or a refusal. */
export type DescribeDecisionResult = { readonly status: 'pending'; readonly decision: DecisionView } | DecisionRefusal;

/** An `answerDecision` call: the answer in hand, recorded in one step. */
export interface AnswerDecisionRequest {
  readonly id: string;
  /** Needed only when the caller may make more than one pending decision on the request. */
  readonly key?: string;
  readonly context: DecisionCaller;
  /**
   * The answer, as an elicitation result: `accept` with the form's `content`, or `decline`
   * (nothing recorded; the decision stays pending). Attacker-controlled: validated.
   */
  readonly answer: { readonly action: 'accept' | 'decline'; readonly content?: unknown };
  readonly channel: DecisionChannel;
  /**
   * A client's key for this attempt (1-255 printable ASCII characters): a repeat with the same
   * key, caller, request and answer answers what the first did, on any instance sharing the
   * ledger and `BATON_KEYS`, recorded once (kept 24 hours). A schema error is not kept (the same
   * key may carry the corrected answer); the same key with another answer is `key_reused`.
   */
  readonly idempotencyKey?: string;
}

/**
 * What `answerDecision` answers:
 * - `{ status: 'recorded', id, key, flow, message: 'Recorded manager_approval on request R… (expense_approval). The flow has ended: …', next }`;
 * - `{ status: 'declined', id, key, message }`: nothing recorded, the decision is still pending;
 * - `{ status: 'invalid', id, key, message, problem, issues: [{ field, hint }] }`: the content
 *   failed the schema (what `baton_decide` asks again with); nothing recorded;
 * - a {@link DecisionRefusal}.
 */
export type AnswerDecisionResult =
  | {
      readonly status: 'recorded';
      readonly id: string;
      readonly key: string;
      readonly flow: string;
      readonly message: string;
      /** What became of the flow, in a sentence. */
      readonly next: string;
    }
  | { readonly status: 'declined'; readonly id: string; readonly key: string; readonly message: string }
  | {
      readonly status: 'invalid';
      readonly id: string;
      readonly key: string;
      readonly message: string;
      /** The schema's complaint in one phrase (`approve: required`). */
      readonly problem: string;
      readonly issues: readonly AnswerIssue[];
    }
  | DecisionRefusal;

/** The decision tools of a runner. */
export interface DecisionTools {
  /**
   * The pending decisions `context` may make: its role matches (or the decision's `may`
   * accepts, on the parked context), not its own request, not past the deadline, not decided.
   * @returns `[{ id, key, flow, message, requestedAt, deadline? }]`, oldest first; `[]` without a ledger.
   */
  inbox(context: DecisionCaller): Promise<InboxItem[]>;
  /**
   * Make a decision: two MRTR rounds.
   * - First call `{ id, key? }`: `input_required` with `inputRequests: { decision: { method:
   *   'elicitation/create', params: { mode: 'form', message, requestedSchema } } }` and a
   *   requestState bound to the caller, `tools/call`, `baton_decide` and `{ id, key? }`.
   * - Retry with `inputResponses: { decision: { action: 'accept', content } }`: the content is
   *   validated (invalid: asked again saying why), recorded once, and the parked flow advanced
   *   at once; `complete` with text starting "Recorded". Decline or cancel: `complete`, "Not recorded: …".
   * - Refusals are `error` outcomes with a sentence: not allowed (own request: four eyes; wrong
   *   role), unknown id, already decided, expired, withdrawn, the flow has ended, or several
   *   decisions possible and no `key` (naming the keys); losing a race is refused on the retry.
   * @throws InvalidRequestStateError for a bad, expired, foreign or replayed requestState.
   */
  decide(request: DecideRequest): Promise<RoundOutcome>;
  /**
   * A pending decision the caller may make, as data (for a page or an API), with the same
   * checks as `decide`; nothing is written.
   * @returns `{ status: 'pending', decision: { id, key, flow, message, role?, requestedAt, deadline?,
   *   requester, arguments?, requestedSchema, decided: [{ key, decider, you, decidedAt }] } }`, or
   *   `{ status: 'refused', reason, message, decidedBy?, keys? }`.
   */
  describeDecision(request: DescribeDecisionRequest): Promise<DescribeDecisionResult>;
  /**
   * Make a decision in one step, for callers that already hold the answer (the HTTP decision API,
   * the decision page): the same checks, validation and recording as `decide` (one compare-and-set,
   * `onDecided`, the flow advanced at once, audited `via: 'decide_api' | 'decide_page' | 'app'` as
   * `channel` says).
   * @returns `{ status: 'recorded', … }`, `{ status: 'declined', … }`, `{ status: 'invalid', problem,
   *   issues, … }` or `{ status: 'refused', reason, message, … }` (see {@link AnswerDecisionResult}).
   * @throws InvalidParamsError for an answer nested too deeply or holding a non-finite number.
   */
  answerDecision(request: AnswerDecisionRequest): Promise<AnswerDecisionResult>;
  /**
   * Hand a pending decision the caller may make to another principal (`baton_delegate`), who may
   * then make it on the caller's authority (the caller's roles as they were at the hand-over);
   * others allowed in their own right still may, the hander no longer may while it is handed on,
   * and the assignee may hand it on. Never to the requester (four eyes) nor to the caller. One
   * compare-and-set on the request's version, audited `via: 'delegate'`.
   * @returns `{ status: 'handed', id, key, flow, to, message }` or `{ status: 'refused', reason, message }`.
   */
  delegate(request: DelegateRequest): Promise<DelegateResult>;
  /**
   * The caller's own requests updated in the last 30 days, newest first:
   * `[{ id, flow, status: 'waiting' | 'completed' | 'expired' | 'withdrawn', waitingFor? }]`.
   */
  requests(context: DecisionCaller): Promise<RequestItem[]>;
  /**
   * The caller's own run, read without playing a round or writing anything: its state, what it
   * waits for (decisions with their questions, deadlines and votes), its audited rounds, the
   * author's summary line and, once it has ended, its outcome. Another principal's request is
   * refused as an unknown one.
   * @returns `{ status: 'found', run }` or `{ status: 'refused', reason, message }`.
   */
  runStatus(request: RunStatusRequest): Promise<RunStatusResult>;
  /**
   * The requester continues a parked flow exactly as the flow's own tool would
   * (`input_required` with requests, "retry later", the complete "waiting" result, or the
   * flow's final result), with a fresh in-call wait. Its states are bound to `baton_resume` and
   * `{ id }`. Anyone else is refused.
   * @throws InvalidRequestStateError for a bad requestState (as the flow's own tool).
   */
  resume(request: ResumeRequest): Promise<RoundOutcome>;
  /**
   * The requester withdraws a waiting request: the flow receives {@link WithdrawEvent}, runs
   * to its end and is parked `withdrawn`; pending decisions are closed. `complete` with text
   * starting "Withdrawn"; refused for anyone else, after the end, or when the flow's state
   * has no withdrawal path.
   */
  withdraw(request: WithdrawRequest): Promise<RoundOutcome>;
}

/** What the runner lends the decision tools to serve a resume round. */
export interface ResumeServer {
  resume(
    flow: Flow,
    binding: StateBinding,
    context: DecisionCaller & Pick<CallContext, 'tasks'>,
    requestState: string | undefined,
    inputResponses: Readonly<Record<string, unknown>> | undefined,
    row: ParkedRequest | undefined,
  ): Promise<RoundOutcome>;
}
