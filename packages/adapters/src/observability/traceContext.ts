/**
 * Incoming W3C trace context: a request that carries `traceparent` (an HTTP header, or the
 * `_meta` of an MCP request, as the MCP conventions of OpenTelemetry put it) is handled in the
 * context it names, so the round it plays is a child of the caller's span. Extraction is the
 * registered propagator's (`@opentelemetry/api`; W3C under `baton serve --otlp`, a no-op without
 * an SDK): nothing is parsed here. A request without `traceparent` costs one property read.
 */
import { context, propagation } from '@opentelemetry/api';

/** Run `fn` in the trace context `carrier` names (`traceparent`, `tracestate`), or as it is without one. */
export function withIncomingTrace<T>(carrier: Readonly<Record<string, unknown>> | undefined, fn: () => T): T {
  if (typeof carrier?.traceparent !== 'string') return fn();
  return context.with(propagation.extract(context.active(), carrier), fn);
}
