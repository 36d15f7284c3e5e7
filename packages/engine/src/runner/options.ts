/**
 * The runner's options, as an embedder writes them: the flows, the codec, the
 * ledger, lifetimes, budgets, the inspector, the audit log, the decision
 * settings and hooks. Types only, beside the one check of the lifetimes
 * (`lifetimeOptions`); `state.ts` turns them into the runner's defaulted,
 * checked state. Changes when an option is added.
 */
import type { Flow } from '../authoring/flowTypes.js';
import type { RequestStateCodec } from '../codec/types.js';
import type { AuditLog } from '../contract/audit.js';
import type { RunnerLogEvent } from '../contract/call.js';
import type { Ledger, LedgerFacet } from '../contract/ledger.js';
import type { DecidedEvent, DecisionRequestedEvent } from '../decisions/types.js';
import type { Inspector } from '../inspection/inspector.js';
import { DEFAULT_MAX_TTL_SECONDS, DEFAULT_TTL_SECONDS, type LifetimeSettings } from '../round/lifetimes.js';

/** Options of `createRunner`. */
export interface RunnerOptions {
  readonly flows: readonly Flow<any, any>[];
  readonly codec: RequestStateCodec;
  /** When set, every state is single-use: redeemed before the round's side effects. */
  readonly ledger?: Ledger;
  /**
   * Lifetime of minted states in seconds (default 1,800). A state waiting on a deadline lives until
   * the deadline plus `DEADLINE_GRACE_SECONDS` (5 minutes), so the flow's `after` branch is reached.
   */
  readonly ttlSeconds?: number;
  /**
   * Longest lifetime of any state, seconds (default `DEFAULT_MAX_TTL_SECONDS`, 30 days; at least
   * `ttlSeconds`). Checked when the runner is created: a flow with a constant `after` delay whose
   * deadline plus the grace exceeds it is a `FlowDefinitionError`; a delay computed from context
   * is checked when a state is minted (the round fails with a `FlowError`).
   */
  readonly maxTtlSeconds?: number;
  /**
   * Time budget for a round's invoked promises, ms (default 10,000). With a ledger, durable steps
   * (`step()`) still running when it ends keep running; the round answers "retry later".
   */
  readonly roundBudgetMs?: number;
  /**
   * Serve flows whose only need of a ledger is their durable steps without one: their steps then
   * run inside the round (keyed per flow instance all the same), and a replayed or retried round
   * runs them AGAIN (`baton serve --allow-replays`). Default `false`: such flows are refused
   * without a ledger.
   */
  readonly allowReplays?: boolean;
  /** Clock, ms since epoch (default `Date.now`). Use the same clock for the codec. */
  readonly now?: () => number;
  /** Server-side log sink. */
  readonly log?: (event: RunnerLogEvent) => void;
  /**
   * An XState inspector: an observer, a function, or an object with `inspect` (what
   * `@statelyai/inspect`'s `createWebSocketInspector`, `createBrowserInspector` and
   * `createSkyInspector` return). Every round of one flow instance reports under the stable
   * session id `baton:<fid>`, so the inspector shows one run, its root actor named after the
   * machine. Sensitive inputs and context paths are redacted before it sees them. After each
   * round the runner waits (at most 100 ms) for an inspector that may defer (an object with
   * `inspect` or `flush()`) to hand the round's events on before answering.
   */
  readonly inspect?: Inspector;
  /** Where to append one audit entry per round (see `@baton/store`'s `openAuditLog`). */
  readonly audit?: AuditLog;
  /**
   * Flows with decisions: how long a round that waits on a decision is held open, polling the
   * ledger for the flow to move on, ms (default 7,000: well inside a client's request timeout).
   */
  readonly holdMs?: number;
  /** How often a held round reads the ledger, ms (default 300). */
  readonly pollMs?: number;
  /**
   * How long one call waits for decisions before its round completes with a "waiting" result
   * (`{ status: 'waiting', id, waitingFor }`), seconds (default 20). A call also never answers
   * more than 3 requestState-only rounds.
   */
  readonly waitInCallSeconds?: number;
  /**
   * Store readable principal ids beside their keyed hashes (default: only keyed hashes): the
   * requester of a parked request (`requester_name`), the decider of a decision (`decider_name`)
   * and the caller of each audited round (`principal_name`). Without it no table holds a readable
   * principal.
   */
  readonly storePrincipalNames?: boolean;
  /** @deprecated The former name of {@link RunnerOptions.storePrincipalNames}, which it also sets. */
  readonly storeRequesterNames?: boolean;
  /** How hooks see principals: keyed hashes (default) or the ids themselves. */
  readonly hookPrincipals?: 'hash' | 'id';
  /**
   * Write notifications (`decision.requested`, `decision.made`, `request.ended`,
   * `flow.notification`) into the ledger's outbox with each parked write, for delivery
   * from it (`baton serve --notify-webhook`), and the `notify()`s of rounds that park nothing on
   * their own. Default `false`. Needs a ledger with the `outbox` facet: `createRunner` throws
   * `LedgerFacetMissingError` otherwise.
   */
  readonly outbox?: boolean;
  /**
   * Facets of the ledger that features outside the flows will use, checked by `createRunner`
   * with those the flows need (see `Ledger`): `['schedule']` for a scheduler
   * (`runner.fireDueTimers`), `['runs']` for `baton runs` and the inspector's run list,
   * `['health']` for `/metrics` and `/readyz`. A facet the flows need (a decision state:
   * `decisions`; an event wait: `events`; durable steps: `steps`) need not be named.
   * `createRunner` throws `LedgerFacetMissingError` for one the ledger lacks.
   */
  readonly ledgerFacets?: readonly LedgerFacet[];
  /**
   * The page where a decision is made, for the `decision.requested` notifications of the outbox
   * (their `data.url`): given the request id and the decision's key (so that a link names its
   * decision even after another decision of the request was made). The engine knows no HTTP:
   * `baton serve --public-url URL` builds `<URL>/decide/<id>?key=<key>`. The link must carry
   * no secret: whoever opens it signs in.
   */
  readonly decisionUrl?: (id: string, key: string) => string;
  /**
   * Called (not awaited; errors logged) for each decision newly requested: tell the deciders.
   * `requester` is a keyed hash unless `hookPrincipals: 'id'`.
   */
  readonly onDecisionRequested?: (event: DecisionRequestedEvent) => unknown;
  /** Called (not awaited; errors logged) for each decision recorded. */
  readonly onDecided?: (event: DecidedEvent) => unknown;
  /**
   * The poll interval a task waiting on a person suggests, ms (default 5,000); a task whose steps
   * run, or that waits for its requester, suggests a fifth of it (at least 200 ms, at most 1,000).
   */
  readonly taskPollMs?: number;
}

/** The runner's `ttlSeconds` and `maxTtlSeconds`, defaulted and checked (positive seconds, ttl within the cap). */
export function lifetimeOptions(options: RunnerOptions): LifetimeSettings {
  const ttlSeconds = options.ttlSeconds ?? DEFAULT_TTL_SECONDS;
  const maxTtlSeconds = options.maxTtlSeconds ?? Math.max(DEFAULT_MAX_TTL_SECONDS, ttlSeconds);
  for (const [name, value] of [
    ['ttlSeconds', ttlSeconds],
    ['maxTtlSeconds', maxTtlSeconds],
  ] as const) {
    if (!Number.isFinite(value) || value <= 0)
      throw new TypeError(`runner: ${name} must be a positive number, got ${value}`);
  }
  if (ttlSeconds > maxTtlSeconds) {
    throw new TypeError(
      `runner: ttlSeconds ${ttlSeconds} is longer than maxTtlSeconds ${maxTtlSeconds}, the longest a state may live`,
    );
  }
  return { ttlSeconds, maxTtlSeconds };
}
