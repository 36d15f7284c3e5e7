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
import type { StateBinding } from '../codec/types.js';
import type { CallContext } from '../contract/call.js';
import type { ParkedRequest, RequestStatus, WaitingFor } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';

/** Who calls a decision tool: the principal, its roles, and what the client can be asked. */
export type DecisionCaller = Pick<CallContext, 'principal' | 'roles' | 'capabilities'>;

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
}

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
   * The caller's own requests updated in the last 30 days, newest first:
   * `[{ id, flow, status: 'waiting' | 'completed' | 'expired' | 'withdrawn', waitingFor? }]`.
   */
  requests(context: DecisionCaller): Promise<RequestItem[]>;
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
