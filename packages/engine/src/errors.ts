/**
 * Errors the engine raises. `InvalidRequestStateError` is the single opaque
 * error for every requestState failure: its message never varies and never
 * echoes anything decoded, while `reason` is a code the client also sees in
 * `data.reason` (the root README says what it reveals). `InvalidParamsError`
 * refuses a request's arguments or answers before a round runs (nested too
 * deeply, a number that is not finite): its message is a sentence for the
 * client. `FlowDefinitionError` is thrown when a flow is defined (never at run
 * time) for shapes Baton cannot serve. `StateTooLargeError` is what the codec
 * throws when a state would pass its size cap. Each class answers `instanceof`
 * for instances made by any copy of the engine in the process (`copies.ts`):
 * a flows module loaded as CommonJS throws the `FlowError` of its own copy.
 */

import type { LedgerFacet } from './contract/ledger.js';
import { brandAcrossCopies } from './copies.js';

/** The fixed, client-visible message of every requestState rejection. */
export const INVALID_REQUEST_STATE_MESSAGE = 'Invalid or expired requestState';

/**
 * Why a requestState was rejected. Log it on the server; never send it to the
 * client beyond this code. `replayed` is final: the state's round finished (or was abandoned by
 * a crashed process) and the state came again with other answers, or after it. A duplicate of a
 * round still running is not rejected: it is {@link RoundInProgressError}, the retryable
 * `-32000` with `data.reason: 'in_progress'`.
 */
export type InvalidStateReason =
  | 'too_large'
  | 'malformed'
  | 'unsupported_version'
  | 'unknown_key'
  | 'bad_integrity'
  | 'payload_too_large'
  | 'expired'
  | 'not_yet_valid'
  | 'unknown_flow'
  | 'stale_definition'
  | 'replayed'
  | 'bad_snapshot';

/**
 * An invalid, expired, tampered, replayed or foreign requestState.
 *
 * The message is always {@link INVALID_REQUEST_STATE_MESSAGE}; adapters map
 * this error to JSON-RPC `-32602` with `data: { reason }`.
 */
export class InvalidRequestStateError extends Error {
  override readonly name = 'InvalidRequestStateError';
  /** Machine-readable reason code, for the server log. */
  readonly reason: InvalidStateReason;
  /**
   * With `unknown_key`: the key id the envelope names (base64url; a prefix of the key's 11-character
   * id for states, the whole id for ledger blobs). Not secret: every state carries it in clear.
   */
  readonly keyId?: string;
  constructor(reason: InvalidStateReason, keyId?: string) {
    super(INVALID_REQUEST_STATE_MESSAGE);
    this.reason = reason;
    if (keyId !== undefined) this.keyId = keyId;
  }
}

/**
 * The sentence for a state or ledger row sealed with a key this server does not hold, e.g.
 * `sealed with key id Xy3…, which this server does not have: start every instance with the same BATON_KEYS`.
 */
export function unknownKeySentence(keyId: string): string {
  return `sealed with key id ${keyId}, which this server does not have: start every instance with the same BATON_KEYS`;
}

/**
 * A parked request (a ledger row) sealed with a key this server's ring does not hold: the row is
 * another instance's, started with other `BATON_KEYS`. Not a failure of the flow: the row cannot
 * be read here. The runner's log carries it as a `flow_error`; its message is
 * `cannot be read here: it was sealed with key id …, which this server does not have: …`, and
 * `baton serve` prints it as `request <id> of <flow> cannot be read here: …`.
 */
export class UnknownKeyError extends Error {
  override readonly name = 'UnknownKeyError';
  /** The key id the row names (base64url, 11 characters). Not secret. */
  readonly keyId: string;
  constructor(keyId: string) {
    super(`cannot be read here: it was ${unknownKeySentence(keyId)}`);
    this.keyId = keyId;
  }
}

/**
 * A state too large to mint: its payload or wire string would pass the codec's cap. A
 * `RangeError` (what it always was), with the numbers a message to the user needs. The runner
 * never lets it reach a client: the round says which answer or argument to shorten.
 */
export class StateTooLargeError extends RangeError {
  override readonly name = 'StateTooLargeError';
  constructor(
    /** What passed its cap: the wire string (characters) or the payload (bytes). */
    readonly part: 'token' | 'payload',
    readonly size: number,
    readonly limit: number,
  ) {
    super(
      part === 'token'
        ? `requestState: token is ${size} characters; maxTokenBytes is ${limit}`
        : `requestState: payload is ${size} bytes; maxPayloadBytes is ${limit}`,
    );
  }
}

/**
 * Arguments or `inputResponses` refused before the round runs (see `jsonInput.ts`): nested too
 * deeply, or holding a number that is not finite. Nothing was redeemed or run, so the same state
 * can be retried with corrected input. The message is meant for the client (it names where the
 * problem is, never a value); adapters map this error to JSON-RPC `-32602` with that message.
 */
export class InvalidParamsError extends Error {
  override readonly name = 'InvalidParamsError';
}

/** A flow definition Baton cannot serve (thrown by `defineFlow` and the request helpers). */
export class FlowDefinitionError extends Error {
  override readonly name = 'FlowDefinitionError';
}

/** Whether a value is an {@link InvalidRequestStateError}. */
export function isInvalidRequestStateError(error: unknown): error is InvalidRequestStateError {
  return error instanceof InvalidRequestStateError;
}

/**
 * A failure whose message is meant for the user. Throw it from an invoked
 * promise (or let the machine end in error with it) and the round returns a
 * tool error with exactly this message; any other error becomes a generic
 * message and its details go to the server log only.
 */
export class FlowError extends Error {
  override readonly name = 'FlowError';
}

/** How long a client should wait before retrying a round refused with {@link LedgerUnavailableError}, in ms. */
export const LEDGER_RETRY_AFTER_MS = 1000;

/**
 * The ledger could not be reached during a round (its database restarted, refused the
 * connection, or no connection came free in time). Nothing of the round was acknowledged:
 * the client may retry the same requestState, which then either runs once or gets the
 * outcome already recorded for it. Thrown anywhere inside a round (a durable step, a token, a
 * decision), it abandons the round rather than ending the flow, and the runner releases the
 * round's redemption first (`releaseAfterOutage`, `round/singleUse.ts`). Ledger drivers throw it for connection failures only
 * (never for a constraint or a bug); adapters map it to JSON-RPC `-32000` "Ledger
 * unavailable" with `data: { reason: 'ledger_unavailable', retryAfterMs }`. The message is
 * for the server log and never names a password.
 */
export class LedgerUnavailableError extends Error {
  override readonly name = 'LedgerUnavailableError';
}

/** Whether `error` is the ledger being unreachable (never a bug or a refusal). */
export function isLedgerUnavailable(error: unknown): error is LedgerUnavailableError {
  return error instanceof LedgerUnavailableError;
}

/**
 * The runner's ledger lacks a facet that one of its flows or features needs (see `Ledger`):
 * `createRunner` throws it once, before serving anything, naming the facet and what needs it
 * (`neededBy`: `flow "refund" (a decision state)`, `option outbox`, ...). Never thrown by a round
 * of a runner that started.
 *
 * ```ts
 * { name: 'LedgerFacetMissingError', facet: 'decisions', neededBy: 'flow "refund" (a decision state)' }
 * ```
 */
export class LedgerFacetMissingError extends Error {
  override readonly name = 'LedgerFacetMissingError';
  /** The facet the ledger does not have. */
  readonly facet: LedgerFacet;
  /** The flow or option that needs it. */
  readonly neededBy: string;
  constructor(facet: LedgerFacet, neededBy: string) {
    super(`runner: ${neededBy} needs a ledger with the "${facet}" facet, and this ledger has none`);
    this.facet = facet;
    this.neededBy = neededBy;
  }
}

/**
 * A duplicate of a round still running: the same requestState with the same answers arrived
 * while the round it redeemed had not recorded its outcome yet, and it did not land within the
 * hold (`round/singleUse.ts`). Nothing ran for this request and nothing was used up by it: retry
 * the same request after `retryAfterMs`, which then answers with the recorded outcome. Never
 * final (unlike `InvalidRequestStateError('replayed')`, which is only for a state whose round
 * finished, or was abandoned, and is presented with other answers or after it). Adapters map it
 * to JSON-RPC `-32000` with `data: { reason: 'in_progress', retryAfterMs }`.
 */
export class RoundInProgressError extends Error {
  override readonly name = 'RoundInProgressError';
  /** The reason code the client sees in `data.reason`. */
  readonly reason = 'in_progress';
  constructor(
    /** How long the client should wait before retrying, ms. */
    readonly retryAfterMs: number,
  ) {
    super('The round for this requestState is still in progress: retry the same request later');
  }
}

brandAcrossCopies(InvalidRequestStateError, 'InvalidRequestStateError');
brandAcrossCopies(StateTooLargeError, 'StateTooLargeError');
brandAcrossCopies(InvalidParamsError, 'InvalidParamsError');
brandAcrossCopies(FlowDefinitionError, 'FlowDefinitionError');
brandAcrossCopies(FlowError, 'FlowError');
brandAcrossCopies(LedgerUnavailableError, 'LedgerUnavailableError');
brandAcrossCopies(RoundInProgressError, 'RoundInProgressError');
brandAcrossCopies(LedgerFacetMissingError, 'LedgerFacetMissingError');
