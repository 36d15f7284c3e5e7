/**
 * `baton serve --otlp URL` (`BATON_OTLP`): the OpenTelemetry Node tracing SDK, wired once at
 * start-up and loaded only then (`cli/serve/wiring.ts` imports this module dynamically, so a
 * server without `--otlp` loads none of the SDK and exports nothing). Spans of the engine
 * (`@baton/engine`'s tracer) go through a batch processor to the OTLP/HTTP exporter (JSON) at
 * `URL/v1/traces` (a URL that already ends in `/v1/traces` is taken as it is). The context manager
 * is AsyncLocalStorage's, the propagator W3C trace context (`traceparent`/`tracestate`) with
 * baggage. The resource: `service.name` `baton` (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
 * override it), `service.version`, a `service.instance.id` per process, and the host; never the
 * process's command line, which may hold secrets. OTEL_BSP_SCHEDULE_DELAY sets the delay between
 * two exports. `shutdown` flushes what is left and unregisters.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import {
  detectResources,
  envDetector,
  hostDetector,
  resourceFromAttributes,
  serviceNameEnvDetector,
} from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';

/** Tracing as `baton serve` runs it. */
export interface Tracing {
  /** The URL spans are posted to. */
  readonly url: string;
  /** Export what is buffered, then stop (on the way out). */
  shutdown(): Promise<void>;
}

/** Where the OTLP/HTTP exporter posts traces for a `--otlp` URL. */
export function tracesUrl(base: string): string {
  const url = new URL(base);
  if (!url.pathname.endsWith('/v1/traces')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.href;
}

/** OTEL_BSP_SCHEDULE_DELAY (ms between two exports; the SDK's 5000 without it), as the specification names it. */
function scheduleDelay(): number {
  const value = Number(process.env.OTEL_BSP_SCHEDULE_DELAY);
  return Number.isSafeInteger(value) && value >= 0 ? value : 5000;
}

/** The version of `@baton/adapters` (its package.json is two folders up in `src/` and `dist/`). */
function batonVersion(): string | undefined {
  try {
    return (createRequire(import.meta.url)('../../package.json') as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/** Register the SDK globally, exporting to `base` (`--otlp`). */
export function startTracing(base: string): Tracing {
  const url = tracesUrl(base);
  const version = batonVersion();
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
  return {
    url,
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
