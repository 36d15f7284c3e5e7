/**
 * The vocabulary of one call into the engine, as types only: who calls and
 * how (`CallContext`, its MCP method and the input kinds the client declared),
 * one request to a flow (`RunRequest`), and the structured events every part
 * of the engine writes to the server log (`RunnerLogEvent`). The runner
 * (`runner/`) takes these; the round, durable steps and the decision tools
 * read them without importing the runner. A leaf: it imports only other
 * contract types and `errors.ts`.
 */
import type { InvalidStateReason } from '../errors.js';
import type { RoundOutcome } from './outcome.js';
import type { InputKind } from './wire.js';

/** The MCP methods that may answer `input_required`. */
export type FlowMethod = 'tools/call' | 'prompts/get' | 'resources/read';

/** Which input kinds the client declared; omitted means all. */
export type ClientInputCapabilities = Partial<Record<InputKind, boolean>>;

/**
 * How far a running flow is (`progress()` in the machine), for the request that runs the round.
 *
 * Wire (MCP): `{ method: 'notifications/progress', params: { progressToken, progress: 50, total: 100, message? } }`
 */
export interface FlowProgress {
  /** Increases with every report of a round (the flow's own scale, or out of `total`). */
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

/** Who is calling, and how. Every field but `capabilities`, `roles` and `onProgress` is bound into the state. */
export interface CallContext {
  /** Authenticated principal id (bearer token's principal, or the local user on stdio). */
  readonly principal: string;
  readonly method: FlowMethod;
  /** Tool or prompt name, or resource URI. */
  readonly target: string;
  readonly capabilities?: ClientInputCapabilities;
  /** The principal's roles (from the auth tokens file, or `--roles` on stdio): who may make which decisions. */
  readonly roles?: readonly string[];
  /**
   * The client declared the tasks extension (`io.modelcontextprotocol/tasks`) on this request: a
   * flow parked waiting on someone else or on its running steps answers at once with a task
   * (`taskOf` on the outcome) instead of holding the call and answering "retry later".
   */
  readonly tasks?: boolean;
  /**
   * Called, while the round runs, with each `progress()` the machine reports (the adapters send
   * it as `notifications/progress` when the request carried a `progressToken`). Never bound.
   */
  readonly onProgress?: (progress: FlowProgress) => void;
}

/** One request to a flow. Without `requestState` it starts a new run. */
export interface RunRequest {
  readonly flow: string;
  readonly args: unknown;
  readonly context: CallContext;
  readonly requestState?: string;
  readonly inputResponses?: Readonly<Record<string, unknown>>;
}

/** Structured events for the server log; never sent to clients. */
export type RunnerLogEvent =
  | { type: 'invalid_state'; flow: string; reason: InvalidStateReason; detail?: string }
  | { type: 'flow_error'; flow: string; fid: string; error: unknown }
  | { type: 'round'; flow: string; fid: string; round: number; outcome: RoundOutcome['type']; ms: number }
  | { type: 'hook_error'; hook: 'onDecisionRequested' | 'onDecided'; error: unknown }
  /** Decisions recorded before ledger schema 6 were rewritten: deciders as keyed hashes (once, at creation). */
  | { type: 'ledger_upgrade'; rewritten: number }
  /** That rewrite failed (the next runner created tries again); rounds are not affected. */
  | { type: 'ledger_upgrade_error'; error: unknown };
