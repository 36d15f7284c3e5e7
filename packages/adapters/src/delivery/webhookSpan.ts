/**
 * The OpenTelemetry span of one outbox delivery attempt (`delivery/outboxDelivery.ts`), on
 * `@opentelemetry/api` only: `baton.outbox.deliver`, a `CLIENT` span with the HTTP client
 * conventions' attributes (`http.request.method`, `server.address`, `server.port`,
 * `http.response.status_code`, `http.request.resend_count` for a retry, `error.type`: the status
 * code, or the error's class), never the URL's path, query or credentials, the body or the
 * signature. Its W3C trace context goes out with the POST (`traceparent`), so a receiver can
 * join it. Its parent is the W3C `traceparent` the outbox row keeps of the round that raised it
 * (`baton_outbox.trace_context`, read through the registered propagator), so each attempt sits in
 * the flow instance's trace; a row without one (written without tracing, or before schema 13)
 * starts a trace of its own. Either way the span names the instance and its flow
 * (`baton.instance.id`, `baton.flow`, read from the body's `data`). Without a registered SDK:
 * `undefined`, nothing done.
 */
import {
  type Attributes,
  ProxyTracerProvider,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { ADAPTERS_VERSION } from '../version.js';

const TRACER_NAME = '@baton/adapters';

const VERSION = ADAPTERS_VERSION;

const tracer = trace.getTracer(TRACER_NAME, VERSION);

/** The span's name. */
export const WEBHOOK_SPAN = 'baton.outbox.deliver';

/** Whether an OpenTelemetry SDK is registered (as the engine's `tracing()`). */
function tracing(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer(TRACER_NAME, VERSION) !== undefined;
}

/** What the span knows of the notification. */
export interface WebhookMessage {
  readonly id: string;
  readonly type: string;
  readonly body: string;
  /** Attempts before this one. */
  readonly attempts: number;
  /** The W3C `traceparent` of the round that raised it: the attempt's parent (absent: a trace of its own). */
  readonly traceparent?: string;
}

/** One attempt's span: its trace context for the POST's headers, then how it ended. */
export interface WebhookSpan {
  /** `traceparent` (and `tracestate`) to send. */
  readonly headers: Readonly<Record<string, string>>;
  /** The receiver answered `status`. */
  answered(status: number): void;
  /** No answer: the error (a timeout, a refused connection). */
  failed(error: unknown): void;
}

/** The instance and flow a notification is about (its body's `data.requestId`, `data.flow`). */
function about(body: string): Attributes {
  try {
    const data = (JSON.parse(body) as { data?: { requestId?: unknown; flow?: unknown } }).data;
    return {
      ...(typeof data?.requestId === 'string' ? { 'baton.instance.id': data.requestId } : {}),
      ...(typeof data?.flow === 'string' ? { 'baton.flow': data.flow } : {}),
    };
  } catch {
    return {};
  }
}

/** The span of one attempt to POST `message` to `url`, or `undefined` without an SDK. */
export function webhookSpan(url: URL, message: WebhookMessage): WebhookSpan | undefined {
  if (!tracing()) return undefined;
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const span: Span = tracer.startSpan(
    WEBHOOK_SPAN,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': 'POST',
        'server.address': url.hostname,
        'server.port': port,
        ...(message.attempts > 0 ? { 'http.request.resend_count': message.attempts } : {}),
        'baton.outbox.type': message.type,
        'baton.outbox.id': message.id,
        ...about(message.body),
      },
    },
    message.traceparent === undefined
      ? ROOT_CONTEXT
      : propagation.extract(ROOT_CONTEXT, { traceparent: message.traceparent }),
  );
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), headers);
  return {
    headers,
    answered(status) {
      span.setAttribute('http.response.status_code', status);
      if (status >= 300) {
        span.setAttribute('error.type', String(status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    },
    failed(error) {
      span.setAttribute('error.type', error instanceof Error ? error.name : typeof error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}
