/**
 * Delivery of the ledger's notification outbox as Standard Webhooks
 * (`baton serve --notify-webhook URL --notify-secret whsec_…`). Every
 * `pollMs` the deliverer claims a batch of undelivered notifications (a lease
 * in the ledger: of several instances, one sends each at a time) and POSTs
 * each body as it was written (`{ type, timestamp, data }`) with the
 * `webhook-id` (the notification's stable id, the same on every attempt),
 * `webhook-timestamp` and `webhook-signature` headers, signed by the
 * `standardwebhooks` package with each configured secret (several during a
 * rotation: one `v1,…` signature per secret, space-separated). A 2xx answer is
 * delivered; anything else, or no answer within the timeout, is tried again
 * with exponential backoff (capped) until the row expires (7 days). So a
 * notification is delivered at least once, and a receiver deduplicates by
 * `webhook-id`. Delivery never blocks or fails a round. With an OpenTelemetry SDK
 * registered, each attempt is a span (`webhookSpan.ts`) whose `traceparent` goes
 * with the POST.
 */
import type { FullLedger, OutboxRecord } from '@baton/engine';
import { Webhook } from 'standardwebhooks';
import { webhookSpan } from './webhookSpan.js';

/** Options of {@link createOutboxDeliverer}. */
export interface OutboxDeliveryOptions {
  /** A ledger with the `outbox` facet (`@baton/store`'s ledgers have it). */
  readonly ledger: Pick<FullLedger, 'outbox'>;
  /** Where to POST (http: or https:). */
  readonly url: string | URL;
  /**
   * Signing secrets (`whsec_` + base64), newest first; each signs every delivery (rotation).
   * Empty: unsigned (the receiver cannot tell Baton's posts from anyone else's).
   */
  readonly secrets: readonly string[];
  /** How often to look for notifications to send, ms (default 1,000). */
  readonly pollMs?: number;
  /** Timeout of one attempt, ms (default 10,000). */
  readonly timeoutMs?: number;
  /** Delay before the first retry, doubled per attempt, ms (default 1,000); at most `maxBackoffMs` (default 300,000). */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
  /** Notifications claimed per poll (default 50). */
  readonly batch?: number;
  /** Where delivery failures are reported (one line each, no body); default: ignored. */
  readonly onError?: (message: string) => void;
  /** Told after each attempt (metrics). */
  readonly onAttempt?: (attempt: { readonly delivered: boolean; readonly ageMs: number }) => void;
  readonly now?: () => number;
}

/** A running deliverer. */
export interface OutboxDeliverer {
  /** Send what is due now (between polls), e.g. in tests; resolves when done. */
  tick(): Promise<number>;
  /** Stop polling; resolves once the deliveries in progress finished. */
  stop(): Promise<void>;
}

/**
 * Check a `--notify-secret` value: `whsec_` and a base64 key the `standardwebhooks` package accepts.
 * @throws Error with a sentence (never the secret) when it is not one.
 */
export function checkWebhookSecret(secret: string): string {
  if (!secret.startsWith('whsec_')) throw new Error('a webhook secret starts with "whsec_"');
  try {
    new Webhook(secret);
  } catch {
    throw new Error('a webhook secret is "whsec_" followed by base64');
  }
  if (Buffer.from(secret.slice('whsec_'.length), 'base64').length < 24) {
    throw new Error('a webhook secret holds at least 24 random bytes');
  }
  return secret;
}

/** The Standard Webhooks headers of one delivery, signed with every secret. */
export function signedHeaders(secrets: readonly string[], id: string, at: Date, body: string): Record<string, string> {
  const headers: Record<string, string> = {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
  };
  if (secrets.length > 0) {
    headers['webhook-signature'] = secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' ');
  }
  return headers;
}

/** Start delivering the outbox (timers are `unref`ed). */
export function createOutboxDeliverer(options: OutboxDeliveryOptions): OutboxDeliverer {
  const { ledger } = options;
  const url = new URL(options.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`the webhook URL must be http: or https:, got ${url.protocol}`);
  }
  const now = options.now ?? Date.now;
  const pollMs = Math.max(10, options.pollMs ?? 1000);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const backoffMs = options.backoffMs ?? 1000;
  const maxBackoffMs = options.maxBackoffMs ?? 300_000;
  const batch = options.batch ?? 50;
  const report = options.onError ?? (() => {});
  let stopped = false;
  let running: Promise<number> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;

  async function send(message: OutboxRecord): Promise<void> {
    const at = new Date(now());
    let delivered = false;
    let why = '';
    const span = webhookSpan(url, message);
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'baton-webhook',
          ...span?.headers,
          ...signedHeaders(options.secrets, message.id, at, message.body),
        },
        body: message.body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel().catch(() => {});
      span?.answered(response.status);
      delivered = response.ok;
      if (!delivered) why = `HTTP ${response.status}`;
    } catch (error) {
      span?.failed(error);
      why = error instanceof Error ? error.message : String(error);
    }
    options.onAttempt?.({ delivered, ageMs: Math.max(0, at.getTime() - message.createdAt) });
    if (delivered) {
      await ledger.outbox.settleOutbox({ id: message.id, now: now(), delivered: true });
      return;
    }
    const wait = Math.min(maxBackoffMs, backoffMs * 2 ** Math.min(message.attempts, 20));
    report(`webhook: ${message.type} ${message.id} not delivered to ${url.origin} (${why}); retried in ${wait} ms`);
    await ledger.outbox.settleOutbox({ id: message.id, now: now(), delivered: false, nextAttemptAt: now() + wait });
  }

  async function deliverDue(): Promise<number> {
    const at = now();
    // The lease: a claimed notification is not handed out again before this attempt could end.
    const claimed = await ledger.outbox.claimOutbox({ now: at, leaseUntil: at + timeoutMs + 5000, limit: batch });
    for (const message of claimed) {
      if (stopped) break;
      await send(message);
    }
    return claimed.length;
  }

  const tick = (): Promise<number> => {
    running ??= deliverDue().finally(() => {
      running = undefined;
    });
    return running;
  };
  const loop = async () => {
    timer = undefined;
    if (stopped) return;
    let sent = 0;
    try {
      sent = await tick();
    } catch (error) {
      report(`webhook: the outbox could not be read: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!stopped) {
      timer = setTimeout(loop, sent >= batch ? 0 : pollMs);
      timer.unref?.();
    }
  };
  timer = setTimeout(loop, 0);
  timer.unref?.();
  return {
    tick,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running?.catch(() => {});
    },
  };
}
