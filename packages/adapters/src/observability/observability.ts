/**
 * `GET /healthz` and `GET /metrics` for `baton serve --http`: what an
 * operator monitors. Both answer without a bearer token (probes and scrapers
 * run inside the operator's network; put them behind the reverse proxy's
 * rules when the port is exposed) but keep the Host/Origin check of the
 * server (DNS rebinding). Neither says anything about principals, states,
 * key material or connection strings: counters, gauges, the ledger's driver
 * name and, on `/healthz`, the ids of the keys the server holds (`keyIds`:
 * 8 bytes of HKDF output per key, what every requestState carries in clear),
 * so an operator can see which instances hold the same `BATON_KEYS`.
 *
 * `/healthz` pings the ledger (one trivial round trip, bounded by
 * `pingTimeoutMs`; concurrent probes share one ping and its answer is reused
 * for `pingCacheMs`, so probes cannot flood the database): 200 with counters
 * when it answers, 503 `ledger_unavailable` when not. `/metrics` is the same
 * figures in the Prometheus text format, plus `baton_ledger_up`. `collect` is
 * what `/metrics` reads, for the OpenTelemetry meter of `baton serve --otlp`
 * (`otelMetrics.ts`): one source of the figures, and `METRIC_HELP` the one
 * list of the families' names and meanings.
 */
import type { FullLedger, LedgerStats, SchedulerStats } from '@baton/engine';
import type { ServingMetrics, ServingMetricsSnapshot } from './metrics.js';
import { type Family, PROMETHEUS_CONTENT_TYPE, renderPrometheus, type Sample } from './prometheus.js';

/** How long `/healthz` waits for the ledger's ping by default, in ms. */
export const DEFAULT_PING_TIMEOUT_MS = 2000;
/** How long a ping's answer is reused by default, in ms. */
export const DEFAULT_PING_CACHE_MS = 1000;

/** Where the ledger stands: not opened yet (start-up), or ready (none configured: `ledger` absent). */
export type LedgerSource =
  | { readonly ready: false }
  | { readonly ready: true; readonly ledger?: Pick<FullLedger, 'health' | 'schedule'> };

/** Options of {@link createObservabilityRoutes}. */
export interface ObservabilityOptions {
  readonly metrics: ServingMetrics;
  /** The ledger, read at each request (it opens after the port is bound). */
  readonly ledger: () => LedgerSource;
  readonly pingTimeoutMs?: number;
  readonly pingCacheMs?: number;
  /** The ids of the server's keys, minting key first (`RingKey.kid`), listed by `/healthz` as `keyIds`. */
  readonly keyIds?: readonly string[];
}

/** A route: answers one path. */
export type Route = (request: Request) => Promise<Response>;

type Health = { readonly ok: true } | { readonly ok: false; readonly reason: 'ledger_unavailable' | 'starting' };

/**
 * The two routes, by path, for `serveHttp`'s `routes`.
 *
 * Wire: `GET /healthz` -> 200 `{"status":"ok","uptimeSeconds":12,"ledger":{"driver":"sqlite",...},"keyIds":["Xy3…"],"serving":{...}}`
 * or 503 `{"status":"unavailable","reason":"ledger_unavailable"}`; `GET /metrics` -> 200 Prometheus text.
 * Other methods: 405.
 */
export function createObservabilityRoutes(options: ObservabilityOptions): ReadonlyMap<string, Route> {
  return createObservability(options).routes;
}

/** The routes, and the figures `/metrics` renders for another reader of them (the OpenTelemetry meter). */
export interface Observability {
  readonly routes: ReadonlyMap<string, Route>;
  /** The metric families of `/metrics`, read now (the ledger pinged at most once per `pingCacheMs`). */
  collect(): Promise<Family[]>;
}

/** {@link createObservabilityRoutes}, with the figures' reader: one source for `/metrics` and the OpenTelemetry meter. */
export function createObservability(options: ObservabilityOptions): Observability {
  const timeoutMs = options.pingTimeoutMs ?? DEFAULT_PING_TIMEOUT_MS;
  const cacheMs = options.pingCacheMs ?? DEFAULT_PING_CACHE_MS;
  let inflight: Promise<Health> | undefined;
  let cached: { readonly health: Health; readonly at: number } | undefined;

  const pingOnce = async (ledger: Pick<FullLedger, 'health'>): Promise<Health> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('ping timed out')), timeoutMs);
    });
    try {
      await Promise.race([ledger.health.ping(), timeout]);
      return { ok: true };
    } catch {
      return { ok: false, reason: 'ledger_unavailable' };
    } finally {
      clearTimeout(timer);
    }
  };

  const health = async (): Promise<Health> => {
    const source = options.ledger();
    if (!source.ready) return { ok: false, reason: 'starting' };
    if (!source.ledger) return { ok: true };
    if (cached && Date.now() - cached.at < cacheMs) return cached.health;
    inflight ??= pingOnce(source.ledger).then((result) => {
      cached = { health: result, at: Date.now() };
      inflight = undefined;
      return result;
    });
    return inflight;
  };

  const stats = (): LedgerStats | null => {
    const source = options.ledger();
    return source.ready && source.ledger ? source.ledger.health.stats() : null;
  };

  const healthz: Route = async () => {
    const result = await health();
    if (!result.ok) return json(503, { status: 'unavailable', reason: result.reason });
    const serving = options.metrics.snapshot();
    return json(200, {
      status: 'ok',
      uptimeSeconds: Math.floor((Date.now() - serving.startedAt) / 1000),
      ledger: stats(),
      ...(options.keyIds ? { keyIds: options.keyIds } : {}),
      serving: { rounds: serving.rounds, invalidState: serving.invalidState, failures: serving.failures },
    });
  };

  const collect = async (): Promise<Family[]> => {
    const up = (await health()).ok;
    const out = families(options.metrics.snapshot(), stats(), up);
    const source = options.ledger();
    const scheduling =
      source.ready && up ? await source.ledger?.schedule.schedulerStats(Date.now()).catch(() => undefined) : undefined;
    if (scheduling) out.push(...schedulerFamilies(scheduling));
    return out;
  };

  const metrics: Route = async () => {
    const body = renderPrometheus(await collect());
    return new Response(body, { status: 200, headers: { 'content-type': PROMETHEUS_CONTENT_TYPE, ...NO_STORE } });
  };

  return {
    routes: new Map([
      ['/healthz', onlyGet(healthz)],
      ['/metrics', onlyGet(metrics)],
    ]),
    collect,
  };
}

const NO_STORE = { 'cache-control': 'no-store' };

function json(status: number, body: unknown): Response {
  return Response.json(body, { status, headers: NO_STORE });
}

function onlyGet(route: Route): Route {
  return async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return new Response(null, { status: 405, headers: { allow: 'GET, HEAD' } });
    }
    const response = await route(request);
    return request.method === 'HEAD'
      ? new Response(null, { status: response.status, headers: response.headers })
      : response;
  };
}

/**
 * The families of `/metrics` and what each means (its `# HELP`): the one list of names and
 * meanings, which the OpenTelemetry meter (`otelMetrics.ts`) maps to its instruments.
 */
export const METRIC_HELP = {
  baton_uptime_seconds: 'Seconds since the server started.',
  baton_rounds_total: 'Rounds that produced an outcome, by outcome.',
  baton_invalid_state_total: 'Rounds refused for their requestState (JSON-RPC -32602), by reason.',
  baton_round_errors_total: 'Rounds that ended in another JSON-RPC error, by kind.',
  baton_ledger_up: 'Whether the ledger answered its last ping (1) or not (0); 1 without a ledger.',
  baton_timers_fired_total: 'Due timers this instance claimed, and of those fired (the flow moved on).',
  baton_timer_lag_seconds_total: 'Summed lag of claimed timers (fired minus due).',
  baton_timer_lag_max_seconds: 'Largest lag of a claimed timer since start.',
  baton_outbox_attempts_total: 'Notification delivery attempts, by result.',
  baton_events_received_total:
    'Events received (POST /events/<name>), by result: routed, or a duplicate of an id seen before.',
  baton_events_delivered_total: 'Deliveries of routed events: the waiting instances an event reached.',
  baton_ledger_redemptions_total: 'Redemptions by result.',
  baton_ledger_outcomes_recorded_total: 'Round outcomes recorded.',
  baton_ledger_errors_total: 'Ledger calls that failed, by kind.',
  baton_ledger_last_error_timestamp_seconds: 'When a ledger call last failed (0: never).',
  baton_ledger_redeem_duration_seconds: 'Redemption time; quantiles over the most recent redemptions.',
  baton_ledger_batches_total: 'Batched statements sent, by kind.',
  baton_ledger_batch_items_total:
    'Writes carried by batched statements, by kind (divide by baton_ledger_batches_total for the mean size).',
  baton_ledger_batch_largest: 'The largest batch so far, by kind.',
  baton_ledger_pool_connections: 'Connections of the ledger pool, by state.',
  baton_ledger_pool_waiting: 'Callers waiting for a pool connection.',
  baton_timers_due: 'Waiting requests whose timer is due now (not fired yet).',
  baton_outbox_depth: 'Notifications not delivered yet.',
  baton_outbox_oldest_age_seconds: 'Age of the oldest undelivered notification (0: none).',
  baton_decisions_waiting: 'Decisions requested and not made yet.',
} as const;

/** The name of a family of `/metrics`. */
export type MetricName = keyof typeof METRIC_HELP;

const counter = (name: MetricName, samples: Sample[]): Family => ({
  name,
  type: 'counter',
  help: METRIC_HELP[name],
  samples,
});
const gauge = (name: MetricName, samples: Sample[]): Family => ({
  name,
  type: 'gauge',
  help: METRIC_HELP[name],
  samples,
});

/** The ledger's scheduler and outbox gauges (schema 8), and the decisions waiting when the ledger counts them. */
function schedulerFamilies(stats: SchedulerStats): Family[] {
  const out = [
    gauge('baton_timers_due', [{ value: stats.due }]),
    gauge('baton_outbox_depth', [{ value: stats.outboxDepth }]),
    gauge('baton_outbox_oldest_age_seconds', [
      { value: stats.outboxOldestAt === null ? 0 : Math.max(0, (Date.now() - stats.outboxOldestAt) / 1000) },
    ]),
  ];
  if (stats.decisionsWaiting !== undefined)
    out.push(gauge('baton_decisions_waiting', [{ value: stats.decisionsWaiting }]));
  return out;
}

/** The metric families of `/metrics`. */
function families(serving: ServingMetricsSnapshot, ledger: LedgerStats | null, up: boolean): Family[] {
  const out: Family[] = [
    gauge('baton_uptime_seconds', [{ value: Math.floor((Date.now() - serving.startedAt) / 1000) }]),
    counter(
      'baton_rounds_total',
      Object.entries(serving.rounds).map(([outcome, value]) => ({ labels: { outcome }, value })),
    ),
    counter(
      'baton_invalid_state_total',
      Object.entries(serving.invalidState).map(([reason, value]) => ({ labels: { reason }, value: value ?? 0 })),
    ),
    counter(
      'baton_round_errors_total',
      Object.entries(serving.failures).map(([kind, value]) => ({ labels: { kind }, value })),
    ),
    gauge('baton_ledger_up', [{ value: up ? 1 : 0 }]),
    counter('baton_timers_fired_total', [
      { labels: { result: 'claimed' }, value: serving.timers.claimed },
      { labels: { result: 'fired' }, value: serving.timers.fired },
    ]),
    counter('baton_timer_lag_seconds_total', [{ value: serving.timers.lagSumMs / 1000 }]),
    gauge('baton_timer_lag_max_seconds', [{ value: serving.timers.lagMaxMs / 1000 }]),
    counter('baton_outbox_attempts_total', [
      { labels: { result: 'delivered' }, value: serving.outbox.delivered },
      { labels: { result: 'failed' }, value: serving.outbox.failed },
    ]),
    counter('baton_events_received_total', [
      { labels: { result: 'routed' }, value: serving.events.routed },
      { labels: { result: 'duplicate' }, value: serving.events.duplicate },
    ]),
    counter('baton_events_delivered_total', [{ value: serving.events.delivered }]),
  ];
  if (!ledger) return out;
  const { redemptions, redeemLatency: latency } = ledger;
  out.push(
    counter('baton_ledger_redemptions_total', [
      { labels: { result: 'redeemed' }, value: redemptions.redeemed },
      { labels: { result: 'retried' }, value: redemptions.retried },
      { labels: { result: 'in_progress' }, value: redemptions.inProgress },
      { labels: { result: 'replayed' }, value: redemptions.replayed },
    ]),
    counter('baton_ledger_outcomes_recorded_total', [{ value: ledger.outcomesRecorded }]),
    counter('baton_ledger_errors_total', [
      { labels: { kind: 'unavailable' }, value: ledger.unavailableErrors },
      { labels: { kind: 'other' }, value: ledger.errors - ledger.unavailableErrors },
    ]),
    gauge('baton_ledger_last_error_timestamp_seconds', [
      { value: ledger.lastErrorAt === null ? 0 : ledger.lastErrorAt / 1000 },
    ]),
    {
      name: 'baton_ledger_redeem_duration_seconds',
      type: 'summary',
      help: METRIC_HELP.baton_ledger_redeem_duration_seconds,
      samples: [
        { labels: { quantile: '0.5' }, value: latency.p50Ms / 1000 },
        { labels: { quantile: '0.9' }, value: latency.p90Ms / 1000 },
        { labels: { quantile: '0.99' }, value: latency.p99Ms / 1000 },
        { suffix: '_sum', value: latency.sumMs / 1000 },
        { suffix: '_count', value: latency.count },
      ],
    },
  );
  if (ledger.batches) {
    const kinds = Object.entries(ledger.batches);
    out.push(
      counter(
        'baton_ledger_batches_total',
        kinds.map(([kind, b]) => ({ labels: { kind }, value: b.sent })),
      ),
      counter(
        'baton_ledger_batch_items_total',
        kinds.map(([kind, b]) => ({ labels: { kind }, value: b.items })),
      ),
      gauge(
        'baton_ledger_batch_largest',
        kinds.map(([kind, b]) => ({ labels: { kind }, value: b.largest })),
      ),
    );
  }
  if (ledger.pool) {
    out.push(
      gauge('baton_ledger_pool_connections', [
        { labels: { state: 'total' }, value: ledger.pool.total },
        { labels: { state: 'idle' }, value: ledger.pool.idle },
      ]),
      gauge('baton_ledger_pool_waiting', [{ value: ledger.pool.waiting }]),
    );
  }
  return out;
}
