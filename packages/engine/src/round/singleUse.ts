/**
 * The single-use protocol, written once for every round that presents a
 * requestState: a flow's round (`runner/serve.ts`), `baton_resume` (which plays the
 * flow's round) and the retry of `baton_decide` (`decide.ts`). In order: open
 * the state (envelope, binding, and for a flow's body the definition, migrated
 * here and only here when a migration is registered); refuse an answer over a
 * declared size BEFORE redeeming (nothing used up, the same state takes a
 * smaller answer); redeem the jti in the ledger before any side effect; on
 * `retry` answer the outcome recorded for it (sealed to this jti, flow and
 * instance, so a row moved in the ledger's database is refused); on
 * `in_progress` (a duplicate while the first round runs) hold the duplicate,
 * polling the ledger, until the outcome lands, bounded well inside a client's
 * request timeout, then answer the retryable `RoundInProgressError`; a
 * redemption without an outcome older than any round can run was abandoned
 * (its process crashed) and stays `replayed`, as does a state presented with
 * other answers; run the round; release the redemption when a ledger outage
 * cut the round short (`releaseAfterOutage`, below); seal and record the outcome.
 * A round that can have no side effect of its own (`purity.ts`) is deferred
 * instead: played first, then redeemed with its outcome in one write, or at
 * its first call to the ledger (see `deferred`). Rejections are logged here,
 * with the same detail whoever calls.
 */

import type { Span } from '@opentelemetry/api';
import type { Flow } from '../authoring/flowTypes.js';
import { canonicalJson } from '../codec/canonicalJson.js';
import type { RequestStateClaims, RequestStateCodec, StateBinding } from '../codec/types.js';
import type { RunnerLogEvent } from '../contract/call.js';
import type { FullLedger, RedeemRequest, RedeemResult } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';
import {
  InvalidRequestStateError,
  type InvalidStateReason,
  isLedgerUnavailable,
  RoundInProgressError,
  unknownKeySentence,
} from '../errors.js';
import { ATTR, childSpan, SPAN, spanned } from '../telemetry/tracing.js';
import { type Answers, type RoundBody, readBody } from './body.js';
import { oversizedAnswer } from './play.js';
import { type CompactSnapshot, toPersistedState } from './snapshot.js';

/** What the protocol needs of its runner. */
export interface SingleUseSettings {
  readonly codec: RequestStateCodec;
  /** Without a ledger nothing is redeemed: the round just runs. */
  readonly ledger: FullLedger | undefined;
  readonly now: () => number;
  readonly log: (event: RunnerLogEvent) => void;
  /** How long a duplicate of a round still running is held for its outcome, ms. */
  readonly holdMs: number;
  /**
   * How old a redemption without an outcome must be to count as abandoned (its round's process
   * crashed): longer than any round can run, ms. A duplicate of it is `replayed`. `parked`: for
   * rounds that may play several times and hold for others (flows with decisions or durable
   * steps, decide rounds); `plain`: for the others, which play once within the budget.
   */
  readonly abandonedAfterMs: { readonly plain: number; readonly parked: number };
}

/** Longest a duplicate is held, whatever the round budget: well inside a client's request timeout (60 s in the SDKs). */
export const MAX_DUPLICATE_HOLD_MS = 7000;

/** What a client refused with `in_progress` is told to wait before retrying, ms. */
export const IN_PROGRESS_RETRY_AFTER_MS = 1000;

/** What a redemption must outlive beyond the longest round to count as abandoned: clock skew between instances, ms. */
const ABANDON_MARGIN_MS = 5000;

/** First and longest pause between two polls of a held duplicate, ms (doubling in between). */
const FIRST_POLL_MS = 20;
const LONGEST_POLL_MS = 250;

/**
 * The protocol's bounds for a runner whose rounds play for at most `budgetMs` each, at most
 * `playsPerRound` times in one round that parks (a requester's round replays after conflicts)
 * and hold for decisions and steps at most `decisionHoldMs`: a duplicate is held for the budget
 * and a second (at most {@link MAX_DUPLICATE_HOLD_MS}); a redemption is abandoned after every
 * play and the hold (a plain round: its one play), plus five seconds for clocks that differ
 * between instances.
 */
export function singleUseBounds(
  budgetMs: number,
  playsPerRound: number,
  decisionHoldMs: number,
): Pick<SingleUseSettings, 'holdMs' | 'abandonedAfterMs'> {
  return {
    holdMs: Math.min(budgetMs + 1000, MAX_DUPLICATE_HOLD_MS),
    abandonedAfterMs: {
      plain: budgetMs + ABANDON_MARGIN_MS,
      parked: playsPerRound * budgetMs + decisionHoldMs + ABANDON_MARGIN_MS,
    },
  };
}

/** The associated data a recorded outcome is sealed with: the state's jti, its flow and its instance. */
export function outcomeBinding(jti: string, flow: string, fid: string): string {
  return canonicalJson([jti, flow, fid]);
}

/** For the server log: which key a state sealed with a key this server lacks names (ids only). */
function keyDetail(error: InvalidRequestStateError): string | undefined {
  return error.keyId && `this state was ${unknownKeySentence(error.keyId)}`;
}

/** Log a refused state and throw the opaque error with its reason. */
export function rejectState(
  log: SingleUseSettings['log'],
  flow: string,
  reason: InvalidStateReason,
  detail?: string,
): never {
  log({ type: 'invalid_state', flow, reason, ...(detail ? { detail } : {}) });
  throw new InvalidRequestStateError(reason);
}

/** Open a state's envelope for `binding` (any body); a refusal is logged and thrown. */
export function openClaims(
  settings: SingleUseSettings,
  flow: string,
  requestState: string,
  binding: StateBinding,
): RequestStateClaims {
  try {
    return settings.codec.open(requestState, binding);
  } catch (error) {
    if (error instanceof InvalidRequestStateError) rejectState(settings.log, flow, error.reason, keyDetail(error));
    throw error;
  }
}

/**
 * A compact snapshot written by definition `hash`, as the current definition of `flow` runs it:
 * as it is, or through the migration registered under `hash`; `undefined` when there is none.
 * The one place states and parked instances are migrated.
 */
export function migratedSnapshot(flow: Flow, hash: string, snapshot: CompactSnapshot): CompactSnapshot | undefined {
  if (hash === flow.hash) return snapshot;
  const migrate = flow.migrations[hash];
  if (!migrate) return undefined;
  const migrated = migrate(toPersistedState(snapshot));
  return [migrated.value, migrated.context, snapshot[2]];
}

/** Open a flow's state: its envelope, its round body, and its definition (migrated when it has to be). */
export function openRoundState(
  settings: SingleUseSettings,
  flow: Flow,
  requestState: string,
  binding: StateBinding,
): { claims: RequestStateClaims; body: RoundBody } {
  const claims = openClaims(settings, flow.name, requestState, binding);
  let body: RoundBody;
  try {
    body = readBody(claims);
  } catch (error) {
    if (error instanceof InvalidRequestStateError) rejectState(settings.log, flow.name, error.reason, keyDetail(error));
    throw error;
  }
  if (claims.hash !== flow.hash) {
    const migrated = migratedSnapshot(flow, claims.hash, body.s);
    if (!migrated) {
      rejectState(
        settings.log,
        flow.name,
        'stale_definition',
        `state was minted by definition ${claims.hash}; the flow is now ${flow.hash}; register a migration keyed "${claims.hash}" to accept it`,
      );
    }
    body.s = migrated;
  }
  return { claims, body };
}

/** One round under the protocol: see {@link redeemOnce}. */
export interface SingleUseRound {
  readonly flow: Flow;
  readonly fid: string;
  readonly round: number;
  /** The presented state's claims; absent when the round presents none (nothing to redeem). */
  readonly claims: Pick<RequestStateClaims, 'jti' | 'exp'> | undefined;
  /** The answers the round delivers: the retry digest covers exactly these. */
  readonly answers: Answers;
  /**
   * The answers checked against the sizes their inputs declare, keyed by the flow's input keys
   * (default `answers`; `baton_decide` names its one answer `decision`).
   */
  readonly sized?: Readonly<Record<string, unknown>>;
  /** When the round started (the runner's clock), for the log. */
  readonly started: number;
  /** Whether the round may play several times and hold for others (see `abandonedAfterMs`). */
  readonly parks: boolean;
  /**
   * The round can have no side effect of its own (`purity.ts`): it plays first, on a ledger that
   * redeems the state before the round's first call to it, and a round that made none redeems
   * and records in one write (`redeemWithOutcome`).
   */
  readonly deferrable?: boolean;
}

/**
 * What a round plays on: the ledger it must use for everything it writes or reads (for a
 * deferred redemption, one that redeems the state first), `undefined` without one.
 */
export type PlayRound = (ledger: FullLedger | undefined) => Promise<RoundOutcome>;

/**
 * Run `play` at most once for the presented state (see the module comment): its outcome, the
 * outcome recorded for an identical earlier request, or a refusal.
 * @throws InvalidRequestStateError('replayed') for a state used with other answers, or abandoned.
 * @throws InvalidRequestStateError('bad_integrity') for a recorded outcome that does not open.
 * @throws RoundInProgressError for a duplicate whose round did not finish within the hold.
 */
export function redeemOnce(settings: SingleUseSettings, round: SingleUseRound, play: PlayRound): Promise<RoundOutcome> {
  // Not async itself: a round without a state or a ledger pays no extra promise (the hot path).
  const { flow, fid, claims } = round;
  if (claims === undefined) return play(settings.ledger);
  // An answer over a size its input declares is refused BEFORE redemption: nothing ran, nothing
  // was used up, and the same state takes a corrected answer (see `oversizedAnswer`).
  const oversized = oversizedAnswer(flow, (round.sized ?? round.answers) as Answers);
  if (oversized) {
    settings.log({
      type: 'round',
      flow: flow.name,
      fid,
      round: round.round,
      outcome: 'error',
      ms: settings.now() - round.started,
    });
    return Promise.resolve({ type: 'error', flow: flow.name, fid, round: round.round, message: oversized });
  }
  const { ledger } = settings;
  if (!ledger) return play(undefined);
  return round.deferrable
    ? deferred(settings, ledger, round, claims, play)
    : redeemed(settings, ledger, round, claims, play);
}

/** A redemption's span says how it went (`redeemed`, `retry`, `in_progress`, `replayed`). */
const redemptionOnSpan = (span: Span, redemption: RedeemResult) =>
  span.setAttribute(ATTR.redemption, redemption.status);

/** {@link redeemOnce} with a ledger and a presented state: redeem, answer or hold a duplicate, play, record. */
async function redeemed(
  settings: SingleUseSettings,
  ledger: FullLedger,
  round: SingleUseRound,
  claims: Pick<RequestStateClaims, 'jti' | 'exp'>,
  play: PlayRound,
): Promise<RoundOutcome> {
  const request = redeemRequest(settings, round, claims);
  const redemption = await redeemSpanned(ledger, request);
  const won = await settleRedemption(settings, round, request, redemption);
  if (won !== undefined) return won;
  return playAndRecord(settings, ledger, round, request, () => play(ledger));
}

/** Redeem `request`, in a span that says how it went (with an OpenTelemetry SDK only). */
const redeemSpanned = (ledger: FullLedger, request: RedeemRequest): Promise<RedeemResult> =>
  spanned(
    childSpan(SPAN.redeem, { [ATTR.dbOperation]: 'redeem' }),
    ledger.redemptions.redeem(request),
    redemptionOnSpan,
  );

/** The redemption `round` asks for (its jti, the digest of its answers, its expiry), now. */
function redeemRequest(
  settings: SingleUseSettings,
  round: SingleUseRound,
  claims: Pick<RequestStateClaims, 'jti' | 'exp'>,
): RedeemRequest {
  const responsesDigest = settings.codec.digest(round.answers, 'responses');
  return { jti: claims.jti, responsesDigest, expiresAt: claims.exp, now: settings.now() };
}

/**
 * What a redemption that did not simply win means: a held duplicate's outcome, the outcome
 * recorded for an identical request, or a refusal (thrown). `undefined`: the state is now
 * redeemed for this request (at first, or after a released redemption) and its round is to play.
 */
async function settleRedemption(
  settings: SingleUseSettings,
  round: SingleUseRound,
  request: RedeemRequest,
  first: RedeemResult,
): Promise<RoundOutcome | undefined> {
  const { flow } = round;
  let redemption = first;
  if (redemption.status === 'in_progress') {
    const abandonedAfterMs = round.parks ? settings.abandonedAfterMs.parked : settings.abandonedAfterMs.plain;
    redemption = await holdDuplicate(settings, flow, request, redemption, abandonedAfterMs);
  }
  if (redemption.status === 'replayed') rejectState(settings.log, flow.name, 'replayed');
  if (redemption.status === 'retry') {
    return recordedOutcome(settings, flow.name, redemption.outcome, request.jti, round.fid);
  }
  return undefined;
}

/** The sealed outcome of `round`'s state, bound to its jti, flow and instance. */
function sealOutcome(settings: SingleUseSettings, round: SingleUseRound, jti: string, outcome: RoundOutcome): string {
  return settings.codec.sealBlob(JSON.stringify(outcome), 'outcome', outcomeBinding(jti, round.flow.name, round.fid));
}

/** Play a round whose state is redeemed, then record its outcome (released instead after a ledger outage). */
async function playAndRecord(
  settings: SingleUseSettings,
  ledger: FullLedger,
  round: SingleUseRound,
  request: RedeemRequest,
  play: () => Promise<RoundOutcome>,
): Promise<RoundOutcome> {
  const { flow, fid } = round;
  let outcome: RoundOutcome;
  try {
    outcome = await play();
  } catch (error) {
    // Cut short by a ledger outage: let the same state be retried (`releaseAfterOutage`), then answer retryable.
    if (isLedgerUnavailable(error)) {
      await releaseAfterOutage(ledger, request, { flow: flow.name, fid }, settings.log);
    }
    throw error;
  }
  await recordOutcome(settings, ledger, round, request.jti, outcome);
  return outcome;
}

/** Record a played round's outcome: the round's effects have happened, so failing to record them must not lose the answer. */
async function recordOutcome(
  settings: SingleUseSettings,
  ledger: FullLedger,
  round: SingleUseRound,
  jti: string,
  outcome: RoundOutcome,
): Promise<void> {
  await ledger.redemptions
    .recordOutcome(jti, sealOutcome(settings, round, jti, outcome))
    .catch((error: unknown) => settings.log({ type: 'flow_error', flow: round.flow.name, fid: round.fid, error }));
}

/** Thrown at a deferred round's first ledger call when its state turned out redeemed already: the round stops there. */
class Superseded extends Error {}

/**
 * {@link redeemOnce} for a round without side effects of its own (`purity.ts`): play it first,
 * then redeem its state and record its outcome in one write. A round that reaches for the ledger
 * (an outbox row, a parked write, a read) redeems its state at that first call instead, through
 * the ledger it plays on, and goes on as {@link redeemed} does when that redemption wins; when
 * it does not, the call throws, nothing of the round happened, and the request is answered as a
 * duplicate is. A race lost at the one write discards the round played, which did nothing.
 */
async function deferred(
  settings: SingleUseSettings,
  ledger: FullLedger,
  round: SingleUseRound,
  claims: Pick<RequestStateClaims, 'jti' | 'exp'>,
  play: PlayRound,
): Promise<RoundOutcome> {
  const request = redeemRequest(settings, round, claims);
  let early: Promise<RedeemResult> | undefined;
  const redeemFirst = async (): Promise<void> => {
    early ??= redeemSpanned(ledger, { ...request, now: settings.now() });
    if ((await early).status !== 'redeemed') throw new Superseded();
  };
  let outcome: RoundOutcome | undefined;
  let failure: unknown;
  try {
    outcome = await play(gatedLedger(ledger, redeemFirst));
  } catch (error) {
    failure = error;
  }
  if (early !== undefined) {
    // The round redeemed at its first ledger call: from there on it was a round like any other.
    const redemption = await early;
    if (redemption.status === 'redeemed') {
      return playAndRecord(settings, ledger, round, request, () =>
        outcome === undefined ? Promise.reject(failure) : Promise.resolve(outcome),
      );
    }
    // Stopped at that call, having done nothing: answered as a duplicate, or played again when
    // the state turned out released (a ledger outage cut the first round short).
    const won = await settleRedemption(settings, round, request, redemption);
    if (won !== undefined) return won;
    return playAndRecord(settings, ledger, round, request, () => play(ledger));
  }
  if (outcome === undefined) throw failure;
  const result = await spanned(
    childSpan(SPAN.redeem, { [ATTR.dbOperation]: 'redeem_with_outcome' }),
    ledger.redemptions.redeemWithOutcome(
      { ...request, now: settings.now() },
      sealOutcome(settings, round, request.jti, outcome),
    ),
    redemptionOnSpan,
  );
  if (result.status === 'redeemed') return outcome;
  const won = await settleRedemption(settings, round, request, result);
  if (won !== undefined) return won;
  // Redeemed for this request after a held duplicate's redemption was released: the round played
  // on the same state and answers, without effects, so its outcome stands.
  await recordOutcome(settings, ledger, round, request.jti, outcome);
  return outcome;
}

/**
 * `ledger` as a deferred round plays on it: every call, of any facet, first awaits `before` (the
 * state's redemption, once). A proxy, so a facet or method added to the ledger later is gated too.
 */
function gatedLedger(ledger: FullLedger, before: () => Promise<void>): FullLedger {
  const facets = new Map<PropertyKey, unknown>();
  return new Proxy(ledger, {
    get(target, key) {
      const facet = Reflect.get(target, key) as unknown;
      if (facet === null || typeof facet !== 'object') return facet;
      let gated = facets.get(key);
      if (gated === undefined) {
        gated = new Proxy(facet, {
          get(inner, name) {
            const member = Reflect.get(inner, name) as unknown;
            if (typeof member !== 'function') return member;
            return async (...args: unknown[]) => {
              await before();
              return (member as (...a: unknown[]) => unknown).apply(inner, args);
            };
          },
        });
        facets.set(key, gated);
      }
      return gated;
    },
  });
}

/**
 * A duplicate of a round without an outcome: `replayed` when that round was abandoned, else
 * held, redeeming again (which is how the outcome is read) until it is no longer in progress:
 * `retry` once the outcome landed, `redeemed` when the first round's redemption was released
 * after a ledger outage (this request then runs the round).
 * @throws RoundInProgressError when the hold ends first.
 */
async function holdDuplicate(
  settings: SingleUseSettings,
  flow: Flow,
  request: RedeemRequest,
  first: Extract<RedeemResult, { status: 'in_progress' }>,
  abandonedAfterMs: number,
): Promise<Exclude<RedeemResult, { status: 'in_progress' }>> {
  const until = performance.now() + settings.holdMs;
  let pause = FIRST_POLL_MS;
  let redeemedAt = first.redeemedAt;
  for (;;) {
    const age = settings.now() - redeemedAt;
    if (age > abandonedAfterMs) {
      rejectState(
        settings.log,
        flow.name,
        'replayed',
        `redeemed ${Math.round(age / 1000)} s ago and no outcome was recorded: its round was abandoned`,
      );
    }
    const left = until - performance.now();
    if (left <= 0) throw new RoundInProgressError(IN_PROGRESS_RETRY_AFTER_MS);
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)));
    pause = Math.min(pause * 2, LONGEST_POLL_MS);
    const again = await settings.ledger!.redemptions.redeem({ ...request, now: settings.now() });
    if (again.status !== 'in_progress') return again;
    redeemedAt = again.redeemedAt;
  }
}

/**
 * A recorded outcome opens only for the state it was recorded for (its jti, flow and instance),
 * so one moved onto another row of the ledger's database is refused rather than answered.
 */
function recordedOutcome(
  settings: SingleUseSettings,
  flow: string,
  sealed: string,
  jti: string,
  fid: string,
): RoundOutcome {
  let plaintext: string;
  try {
    plaintext = settings.codec.openBlob(sealed, 'outcome', outcomeBinding(jti, flow, fid));
  } catch {
    rejectState(
      settings.log,
      flow,
      'bad_integrity',
      'the outcome the ledger recorded for this state does not open for it: the ledger was altered, or the key that sealed it left the ring',
    );
  }
  return JSON.parse(plaintext);
}

/**
 * Release the redemption of a round cut short by a ledger outage, so the same requestState may
 * be retried. Never throws: a release that fails is logged (the retry is then refused as
 * `replayed`).
 *
 * Why: when the ledger becomes unreachable part-way through a round
 * (a `LedgerUnavailableError` from a durable step's claim or record, a
 * single-use token, a parked request or decision): the round is abandoned,
 * never turned into the flow's error outcome, and the runner answers the
 * retryable JSON-RPC `-32000 ledger_unavailable`. Its state was redeemed at
 * the start of the round and no outcome was recorded for it, which the ledger
 * would otherwise treat as a round that crashed mid-way (`replayed`: the flow
 * instance lost). Since this round did not crash but was cut short by the
 * operator's database, the runner RELEASES the redemption (deletes the row,
 * only while it has no outcome and the same answers: `LedgerRedemptions.releaseRedemption`,
 * which the PostgreSQL ledger retries while the database restarts) before it
 * answers, so the client's retry of the same requestState runs the round
 * again. Re-running is safe for what the ledger keeps: a durable step recorded
 * before the outage is delivered from its record, never run again; one whose
 * claim failed never ran; one that ran but whose record failed keeps being
 * recorded in the background on this runner (a later round awaits it), and
 * runs again elsewhere only with its idempotency key after its lease ends; a
 * token call that failed did nothing; parked requests are compare-and-set, so
 * the re-run continues from whatever was parked. What the ledger does not
 * keep, a plain invoked promise that completed earlier in the same round, runs
 * again: put external effects in `step()`. The alternative, letting the ledger
 * re-run any redeemed jti without an outcome, would also re-run rounds whose
 * server crashed mid-way or that are still running elsewhere.
 */
export async function releaseAfterOutage(
  ledger: FullLedger,
  redemption: { readonly jti: string; readonly responsesDigest: string },
  where: { readonly flow: string; readonly fid: string },
  log: (event: RunnerLogEvent) => void,
): Promise<void> {
  try {
    await ledger.redemptions.releaseRedemption(redemption.jti, redemption.responsesDigest);
  } catch (error) {
    log({ type: 'flow_error', flow: where.flow, fid: where.fid, error });
  }
}
