/**
 * The figures of `GET /metrics` as OpenTelemetry metrics, on `@opentelemetry/api` only: one
 * observable instrument per Prometheus family (`INSTRUMENTS`: its OpenTelemetry name, kind and
 * unit), on the meter `@baton/adapters`, and one batch callback that reads the same families
 * `/metrics` renders (`Observability.collect`) each time the SDK's reader collects. So there is
 * one source of the figures, nothing counted twice and nothing on the hot path: without a
 * registered MeterProvider `baton serve` never calls `observeMetrics` (only `--otlp` does), and
 * the API's no-op meter would never call back anyway. Names follow OpenTelemetry's style for the
 * same families (`baton_rounds_total` is the counter `baton.rounds`, unit `{round}`, which a
 * Prometheus exporter names `baton_rounds_total` again); labels are attributes of the same names
 * and values; the help text is the description. Counters are `ObservableCounter`s (cumulative
 * sums, as the Prometheus counters are), counts of things present now (the outbox, the timers due,
 * the decisions waiting, pool connections) `ObservableUpDownCounter`s, the rest
 * `ObservableGauge`s. The summary `baton_ledger_redeem_duration_seconds` is a gauge of its
 * quantiles (attribute `quantile`) and two counters, its `_sum` and `_count`.
 */
import { type BatchObservableResult, type Meter, metrics, type Observable, ValueType } from '@opentelemetry/api';
import { ADAPTERS_VERSION } from '../version.js';
import { METRIC_HELP, type MetricName } from './observability.js';
import type { Family } from './prometheus.js';

/** The meter's (instrumentation scope's) name. */
export const METER_NAME = '@baton/adapters';

/** An OpenTelemetry instrument for a Prometheus family (or a summary's `_sum` / `_count`). */
export interface InstrumentSpec {
  readonly name: string;
  readonly kind: 'counter' | 'updown' | 'gauge';
  /** UCUM (`s`), or an annotation in braces (`{round}`), which a Prometheus exporter leaves out of the name. */
  readonly unit: string;
}

const counter = (name: string, unit: string): InstrumentSpec => ({ name, kind: 'counter', unit });
const updown = (name: string, unit: string): InstrumentSpec => ({ name, kind: 'updown', unit });
const gauge = (name: string, unit: string): InstrumentSpec => ({ name, kind: 'gauge', unit });

/** The instrument of each family of `/metrics` (the key: the family's name, plus a summary's suffix). */
export const INSTRUMENTS: Readonly<Record<string, InstrumentSpec>> = {
  baton_uptime_seconds: gauge('baton.uptime', 's'),
  baton_rounds_total: counter('baton.rounds', '{round}'),
  baton_invalid_state_total: counter('baton.invalid_state', '{round}'),
  baton_round_errors_total: counter('baton.round.errors', '{round}'),
  baton_ledger_up: gauge('baton.ledger.up', '{up}'),
  baton_timers_fired_total: counter('baton.timers.fired', '{timer}'),
  baton_timer_lag_seconds_total: counter('baton.timer.lag', 's'),
  baton_timer_lag_max_seconds: gauge('baton.timer.lag.max', 's'),
  baton_outbox_attempts_total: counter('baton.outbox.attempts', '{attempt}'),
  baton_events_received_total: counter('baton.events.received', '{event}'),
  baton_events_delivered_total: counter('baton.events.delivered', '{delivery}'),
  baton_ledger_redemptions_total: counter('baton.ledger.redemptions', '{redemption}'),
  baton_ledger_outcomes_recorded_total: counter('baton.ledger.outcomes_recorded', '{outcome}'),
  baton_ledger_errors_total: counter('baton.ledger.errors', '{error}'),
  baton_ledger_last_error_timestamp_seconds: gauge('baton.ledger.last_error_timestamp', 's'),
  baton_ledger_redeem_duration_seconds: gauge('baton.ledger.redeem.duration', 's'),
  baton_ledger_redeem_duration_seconds_sum: counter('baton.ledger.redeem.duration.sum', 's'),
  baton_ledger_redeem_duration_seconds_count: counter('baton.ledger.redeem.duration.count', '{redemption}'),
  baton_ledger_batches_total: counter('baton.ledger.batches', '{batch}'),
  baton_ledger_batch_items_total: counter('baton.ledger.batch_items', '{write}'),
  baton_ledger_batch_largest: gauge('baton.ledger.batch_largest', '{write}'),
  baton_ledger_pool_connections: updown('baton.ledger.pool.connections', '{connection}'),
  baton_ledger_pool_waiting: updown('baton.ledger.pool.waiting', '{caller}'),
  baton_timers_due: updown('baton.timers.due', '{request}'),
  baton_outbox_depth: updown('baton.outbox.depth', '{notification}'),
  baton_outbox_oldest_age_seconds: gauge('baton.outbox.oldest_age', 's'),
  baton_decisions_waiting: updown('baton.decisions.waiting', '{decision}'),
} satisfies Record<
  MetricName | 'baton_ledger_redeem_duration_seconds_sum' | 'baton_ledger_redeem_duration_seconds_count',
  InstrumentSpec
>;

/**
 * Observe `collect`'s families through `meter` (the global MeterProvider's `@baton/adapters`
 * meter by default) at each collection; returns what unregisters the callback.
 */
export function observeMetrics(
  collect: () => Promise<readonly Family[]>,
  meter: Meter = metrics.getMeter(METER_NAME, ADAPTERS_VERSION),
): () => void {
  const instruments = new Map<string, Observable>();
  for (const [key, spec] of Object.entries(INSTRUMENTS)) {
    const base = key.replace(/_(sum|count)$/, '') as MetricName;
    const options = {
      description: METRIC_HELP[key as MetricName] ?? METRIC_HELP[base],
      unit: spec.unit,
      valueType: spec.unit === 's' ? ValueType.DOUBLE : ValueType.INT,
    };
    instruments.set(
      key,
      spec.kind === 'counter'
        ? meter.createObservableCounter(spec.name, options)
        : spec.kind === 'updown'
          ? meter.createObservableUpDownCounter(spec.name, options)
          : meter.createObservableGauge(spec.name, options),
    );
  }
  const observables = [...instruments.values()];
  const callback = async (result: BatchObservableResult) => {
    for (const family of await collect()) {
      for (const sample of family.samples) {
        const instrument = instruments.get(family.name + (sample.suffix ?? ''));
        if (instrument) result.observe(instrument, sample.value, sample.labels ?? {});
      }
    }
  };
  meter.addBatchObservableCallback(callback, observables);
  return () => meter.removeBatchObservableCallback(callback, observables);
}
