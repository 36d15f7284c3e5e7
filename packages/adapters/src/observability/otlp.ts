/**
 * `baton serve --otlp URL` (`BATON_OTLP`): the OpenTelemetry Node tracing and metrics SDKs, wired
 * once at start-up and loaded only then (`cli/serve/wiring.ts` imports this module dynamically, so a
 * server without `--otlp` loads none of the SDK and exports nothing). Spans of the engine
 * (`@baton/engine`'s tracer) go through a batch processor to the OTLP/HTTP exporter (JSON) at
 * `URL/v1/traces` (a URL that already ends in `/v1/traces` or `/v1/metrics` is the base without
 * it). The context manager is AsyncLocalStorage's, the propagator W3C trace context (`traceparent`/`tracestate`) with
 * baggage. The resource: `service.name` `baton` (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
 * override it), `service.version`, a `service.instance.id` per process, and the host; never the
 * process's command line, which may hold secrets. OTEL_BSP_SCHEDULE_DELAY sets the delay between
 * two exports of spans. Metrics: a MeterProvider with a periodic reader whose OTLP/HTTP exporter
 * (JSON, cumulative) posts to `URL/v1/metrics` every OTEL_METRIC_EXPORT_INTERVAL ms (60,000 by
 * default); what it collects is `otelMetrics.ts`'s instruments, registered by the caller once the
 * figures can be read. `flushMetrics` collects and exports now (before the ledger closes);
 * `shutdown` flushes what is left of both and unregisters.
 */
import { randomUUID } from 'node:crypto';
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import {
  detectResources,
  envDetector,
  hostDetector,
  resourceFromAttributes,
  serviceNameEnvDetector,
} from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { ADAPTERS_VERSION } from '../version.js';

/** Telemetry as `baton serve` runs it. */
export interface Telemetry {
  /** The URL spans are posted to. */
  readonly url: string;
  /** The URL metrics are posted to. */
  readonly metricsUrl: string;
  /** Collect the metrics and export them now. */
  flushMetrics(): Promise<void>;
  /** Export what is buffered, then stop (on the way out). */
  shutdown(): Promise<void>;
}

/** Where the OTLP/HTTP exporter posts `signal` (`traces`, `metrics`) for a `--otlp` URL. */
function signalUrl(base: string, signal: 'traces' | 'metrics'): string {
  const url = new URL(base);
  const path = url.pathname.replace(/\/v1\/(traces|metrics)$/, '').replace(/\/+$/, '');
  url.pathname = `${path}/v1/${signal}`;
  return url.href;
}

/** Where the OTLP/HTTP exporter posts traces for a `--otlp` URL (one that ends in `/v1/traces` is taken as it is). */
export function tracesUrl(base: string): string {
  return signalUrl(base, 'traces');
}

/** Where metrics go: beside the traces (`URL/v1/metrics`). */
export function metricsUrl(base: string): string {
  return signalUrl(base, 'metrics');
}

/** OTEL_METRIC_EXPORT_INTERVAL (ms between two exports of metrics; the SDK's 60000 without it). */
function metricInterval(): number {
  const value = Number(process.env.OTEL_METRIC_EXPORT_INTERVAL);
  return Number.isSafeInteger(value) && value > 0 ? value : 60_000;
}

/** OTEL_BSP_SCHEDULE_DELAY (ms between two exports; the SDK's 5000 without it), as the specification names it. */
function scheduleDelay(): number {
  const value = Number(process.env.OTEL_BSP_SCHEDULE_DELAY);
  return Number.isSafeInteger(value) && value >= 0 ? value : 5000;
}

/** Register the SDKs globally, exporting to `base` (`--otlp`). */
export function startTelemetry(base: string): Telemetry {
  const url = tracesUrl(base);
  const version = ADAPTERS_VERSION;
  const resource = resourceFromAttributes({
    [ATTR_SERVICE_NAME]: 'baton',
    ...(version ? { [ATTR_SERVICE_VERSION]: version } : {}),
    // service.instance.id (incubating in the semantic conventions): one per process.
    'service.instance.id': randomUUID(),
  }).merge(detectResources({ detectors: [hostDetector, envDetector, serviceNameEnvDetector] }));
  const provider = new TracerProvider({
    resource,
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }), scheduledDelayMillis: scheduleDelay() }),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  trace.setGlobalTracerProvider(provider);
  const interval = metricInterval();
  const meters = new MeterProvider({
    resource,
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: metricsUrl(base) }),
        exportIntervalMillis: interval,
        exportTimeoutMillis: Math.min(30_000, interval),
      }),
    ],
  });
  metrics.setGlobalMeterProvider(meters);
  return {
    url,
    metricsUrl: metricsUrl(base),
    flushMetrics: () => meters.forceFlush(),
    async shutdown() {
      await Promise.all([provider.shutdown(), meters.shutdown()]);
      trace.disable();
      metrics.disable();
      propagation.disable();
      context.disable();
    },
  };
}
