/**
 * The audit trail contract: one entry per round of every flow instance, what
 * the round found, what it asked, what it received and how it ended. The
 * runner writes entries when given an `AuditLog`; `@baton/store` keeps them
 * next to the ledger (SQLite or PostgreSQL) and prunes them with it. Response
 * values are recorded only for flows that opt in (`defineFlow({ auditValues: true })`);
 * otherwise only keys and actions are kept, and so for the arguments of a run's first round
 * (recorded only with `auditValues`, sensitive context paths redacted). Principals appear as
 * keyed hashes: the round's caller, and the decider of each decision the round delivered; the
 * caller's readable id only when the runner stores principal names (`storePrincipalNames`).
 * Every round that moves an instance is recorded, whoever's call runs it (`via`): a parked
 * flow advanced by a decider's `baton_decide` or its requester's `baton_withdraw` has its
 * round here as much as the requester's own calls and `baton_resume`.
 */
import type { StateValue } from 'xstate';

/** How a round ended, as the audit trail records it. */
export type AuditOutcome = 'complete' | 'input_required' | 'error';

/**
 * Whose call ran a round:
 * - `call`: the requester's own call of the flow's tool (every round before schema 6 reads so);
 * - `decide`: a decider's `baton_decide`, which recorded a decision and advanced the parked flow;
 * - `decide_api`, `decide_page`: the same, through the HTTP decision API (`POST /api/decisions/<id>`)
 *   or the signed-in decision page (`/decide/<id>`);
 * - `app`: the same, from the decision app of an MCP App host (`baton_decide` with its `answer`,
 *   from a client that declared `io.modelcontextprotocol/ui`: a channel the client states, see
 *   `docs/mcp-apps.md`);
 * - `resume`: the requester's `baton_resume` of a parked flow;
 * - `withdraw`: the requester's `baton_withdraw`, which delivered the withdrawal event;
 * - `operator`: an operator's `baton runs cancel` (the withdrawal event delivered) or
 *   `baton runs terminate` (the run ended whatever its flow says); `principal` is the operator and
 *   `message` the reason they gave;
 * - `delegate`: a decider handed a pending decision to another principal (`baton_delegate`,
 *   `POST /api/decisions/<id>/delegate`, the page's "hand to…" form); `principal` is the hander,
 *   `message` says to whom and why, and the state stays where it was;
 * - `event`: an event sent to the flow (`POST /events/<name>`, `runner.sendEvent`), delivered to
 *   the instance that waited for it; `principal` is the sender (a signing source or a bearer).
 *
 * An open list: later versions add values (the scheduler firing a due timer, task updates,
 * events, operators), so a reader must accept a value it does not know (shown as is).
 */
export type AuditVia =
  | 'call'
  | 'decide'
  | 'decide_api'
  | 'decide_page'
  | 'app'
  | 'resume'
  | 'withdraw'
  | 'timer'
  | 'operator'
  | 'event'
  | 'delegate';

/** One answer a round received. */
export interface AuditAnswer {
  readonly key: string;
  /** `accept`, `decline`, `cancel` or `unsupported`; `invalid` when it failed validation. */
  readonly action: string;
  /** The raw answer, only when the flow opted in with `auditValues`. */
  readonly value?: unknown;
  /**
   * A decision's decider, as a keyed hash (the same hash as the `principal` of the rounds that
   * decider serves). Set only on decisions (`decision()` inputs), in the round that delivered it.
   */
  readonly decider?: string;
  /** Decisions: when the decision was recorded (ms since epoch). */
  readonly decidedAt?: number;
  /** Decisions recorded from schema 11 on: the channel it came through (`decide`, `decide_page`, `decide_api`). */
  readonly via?: string;
  /**
   * Quorum decisions (`decision({ quorum })`): every vote, oldest first, each with its voter's keyed
   * hash (as `decider`), the time, the channel, whether it approves, and its answer (`value`) only
   * when the flow opted in with `auditValues`. Names (readable ids, display names) are never here:
   * the ledger holds them, in its name columns, when names are stored.
   */
  readonly votes?: readonly {
    readonly decider: string;
    readonly decidedAt: number;
    readonly via?: string;
    readonly approves: boolean;
    readonly value?: unknown;
  }[];
  /**
   * When the decider acted for someone else (a hand-over or an absence delegate): that
   * principal, as a keyed hash like `decider`.
   */
  readonly onBehalfOf?: string;
  /**
   * `true`: the answer was received in an earlier round, held while other answers were missing
   * or refused, and delivered to the machine in this round (its value, with `auditValues`, is
   * the validated answer).
   */
  readonly held?: true;
}

/** One round of one flow instance. */
export interface AuditEntry {
  /** Flow-instance id (the same for every round of a run). */
  readonly fid: string;
  readonly flow: string;
  /** The flow's definition hash when the round ran. */
  readonly hash: string;
  /**
   * 1 for the first request of the run; unique within the instance and increasing in the order
   * the rounds were recorded. A round run by another call (`via`) while the requester's call held
   * the same number is numbered after the instance's last entry (see {@link AuditLog.append}).
   */
  readonly round: number;
  /** Whose call ran the round. */
  readonly via: AuditVia;
  /** When the round started (ms since epoch). */
  readonly at: number;
  /** How long it took (ms). */
  readonly ms: number;
  /** Keyed hash of the principal (base64url), never the raw id. */
  readonly principal: string;
  /**
   * State value restored at the start of the round (`null` on the first round, and on a
   * `baton_resume` of a request that had already ended).
   */
  readonly before: StateValue | null;
  /**
   * State value at the end of the round; `null` when the round found the instance ended by
   * another call's round (a decider's while the requester's call held): that entry has the state
   * it ended in.
   */
  readonly after: StateValue | null;
  /** Every state value the machine passed through in this round, in order. */
  readonly path: readonly StateValue[];
  /** Keys asked by this round's result. */
  readonly asked: readonly string[];
  /** Answers received, in the order they were considered. */
  readonly received: readonly AuditAnswer[];
  readonly outcome: AuditOutcome;
  /** The error message of an `error` outcome (what the user saw); for `via: 'operator'`, the reason given. */
  readonly message?: string;
  /**
   * The run's arguments as the machine got them: on the first round only, and only for flows
   * with `auditValues`; values at the flow's `sensitive` paths are `'[redacted]'`.
   */
  readonly args?: unknown;
  /** The caller's readable principal id, only when the runner has `storePrincipalNames`. */
  readonly principalName?: string;
  /** When the requestState this round handed out expires (ms since epoch; `input_required` only). */
  readonly expiresAt?: number;
}

/** A flow instance as listed by an audit log. */
export interface AuditInstance {
  readonly fid: string;
  readonly flow: string;
  readonly rounds: number;
  readonly firstAt: number;
  readonly lastAt: number;
  readonly lastOutcome: AuditOutcome;
}

/** Where audit entries go. Writes must not throw into the round: implementations log their failures. */
export interface AuditLog {
  /**
   * Append one round's entry. An entry equal to one already kept (same `fid`, `at`, `principal`
   * and `via`: a retried append) is ignored; an entry whose `round` another entry of the instance
   * already holds is kept too, numbered after the instance's last entry, so no round is lost.
   */
  append(entry: AuditEntry): Promise<void>;
  /** Recent instances, newest first. */
  instances(options?: { flow?: string; limit?: number }): Promise<AuditInstance[]>;
  /** Every round of one instance, in order. */
  rounds(fid: string): Promise<AuditEntry[]>;
}
