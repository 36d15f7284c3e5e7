/**
 * Serving counters, collected in one place: every round the flow tools,
 * prompts, resources and decision tools play (`mcp/playRound.ts`) is counted here
 * by how it ended: its outcome (`complete`, `input_required`, `error`), a
 * rejected requestState by its -32602 reason (`bad_integrity`, `expired`,
 * `replayed`, ...), other -32602 params errors, `ledger_unavailable`, `in_progress`, and
 * internal errors; so are the scheduler's timers, the outbox's delivery attempts and the events
 * received and delivered (`POST /events/<name>`). Counting is plain integer increments, nothing allocated
 * per round; `GET /healthz` and `GET /metrics` (`observability.ts`) read a
 * snapshot. Nothing here names a principal, a flow instance or a state.
 */
import type { InvalidStateReason, RoundOutcome } from '@baton/engine';

/** How a round that did not produce an outcome ended. */
export type RoundFailure = 'invalid_params' | 'ledger_unavailable' | 'in_progress' | 'internal_error';

/** A copy of the counters at one moment. */
export interface ServingMetricsSnapshot {
  /** When counting started (ms since epoch). */
  readonly startedAt: number;
  /** Rounds that produced an outcome, by its type. */
  readonly rounds: Readonly<Record<RoundOutcome['type'], number>>;
  /** Rounds refused for their requestState (JSON-RPC -32602), by reason. Only reasons seen appear. */
  readonly invalidState: Readonly<Partial<Record<InvalidStateReason, number>>>;
  /** Rounds that ended in a JSON-RPC error other than a rejected state. */
  readonly failures: Readonly<Record<RoundFailure, number>>;
  /** The scheduler: timers claimed and fired, and the summed and largest firing lag (ms). */
  readonly timers: {
    readonly claimed: number;
    readonly fired: number;
    readonly lagSumMs: number;
    readonly lagMaxMs: number;
  };
  /** Outbox delivery attempts, by result. */
  readonly outbox: { readonly delivered: number; readonly failed: number };
  /**
   * Events received (`POST /events/<name>`): routed, or answered as a duplicate of an id seen
   * before; and the deliveries of the routed ones (waiting instances an event reached).
   */
  readonly events: { readonly routed: number; readonly duplicate: number; readonly delivered: number };
}

/** Counters of one serving process; see the module comment. */
export class ServingMetrics {
  readonly startedAt = Date.now();
  private readonly rounds = { complete: 0, input_required: 0, error: 0 };
  private readonly invalidStates = new Map<InvalidStateReason, number>();
  private readonly failures = { invalid_params: 0, ledger_unavailable: 0, in_progress: 0, internal_error: 0 };
  private readonly timers = { claimed: 0, fired: 0, lagSumMs: 0, lagMaxMs: 0 };
  private readonly deliveries = { delivered: 0, failed: 0 };
  private readonly events = { routed: 0, duplicate: 0, delivered: 0 };

  /** The scheduler fired timers (`createScheduler`'s `onFire`). */
  timersFired(report: { claimed: number; fired: number; lagMs: readonly number[] }): void {
    this.timers.claimed += report.claimed;
    this.timers.fired += report.fired;
    for (const lag of report.lagMs) {
      this.timers.lagSumMs += lag;
      if (lag > this.timers.lagMaxMs) this.timers.lagMaxMs = lag;
    }
  }

  /** One outbox delivery attempt ended. */
  outboxAttempt(attempt: { delivered: boolean }): void {
    if (attempt.delivered) this.deliveries.delivered++;
    else this.deliveries.failed++;
  }

  /** An event was routed to `delivered` waiting instances, or answered as a duplicate (nothing delivered again). */
  eventSent(sent: { delivered: number; duplicate: boolean }): void {
    if (sent.duplicate) {
      this.events.duplicate++;
      return;
    }
    this.events.routed++;
    this.events.delivered += sent.delivered;
  }

  /** A round produced an outcome. */
  outcome(type: RoundOutcome['type']): void {
    this.rounds[type]++;
  }

  /** A round was refused for its requestState (`reason` is the -32602 `data.reason`). */
  invalidState(reason: InvalidStateReason): void {
    this.invalidStates.set(reason, (this.invalidStates.get(reason) ?? 0) + 1);
  }

  /** A round ended in another JSON-RPC error. */
  failure(kind: RoundFailure): void {
    this.failures[kind]++;
  }

  snapshot(): ServingMetricsSnapshot {
    return {
      startedAt: this.startedAt,
      rounds: { ...this.rounds },
      invalidState: Object.fromEntries(this.invalidStates),
      failures: { ...this.failures },
      timers: { ...this.timers },
      outbox: { ...this.deliveries },
      events: { ...this.events },
    };
  }
}
