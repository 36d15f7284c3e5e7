/**
 * `baton serve --notify-webhook URL`: tells deciders (a chat bot, a mail
 * relay, a ticketing system) that a decision was requested or made, by
 * POSTing one JSON document per runner hook event. Delivery never blocks or
 * fails a round: events go to a bounded in-memory queue (the oldest is
 * dropped, with a log line, when it is full) and one sender POSTs them in
 * order, each with a bounded number of attempts, a timeout per attempt and
 * exponential backoff; a 2xx answer is delivered, a 4xx other than 408 and
 * 429 is not retried. Principals are whatever the runner's hooks give
 * (`hookPrincipals`: keyed hashes by default, ids when the operator opts in
 * with `--notify-principals id`). The bodies:
 *
 * ```json
 * { "type": "decision_requested", "id": "kq3…", "key": "manager_approval", "flow": "expense_approval",
 *   "role": "manager", "message": "Approve 250 for conference?", "requestedAt": "2026-07-28T09:00:00.000Z",
 *   "deadline": "2026-08-04T09:00:00.000Z", "requester": "h:3f…" }
 * { "type": "decided", "id": "kq3…", "key": "manager_approval", "flow": "expense_approval",
 *   "decider": "h:9a…", "decidedAt": "2026-07-28T09:05:00.000Z" }
 * ```
 */
import type { DecidedEvent, DecisionRequestedEvent } from '@baton/engine';

/** A webhook body: one hook event with ISO times. */
export type WebhookEvent =
  | ({ type: 'decision_requested' } & Omit<DecisionRequestedEvent, 'requestedAt' | 'deadline'> & {
        requestedAt: string;
        deadline?: string;
      })
  | ({ type: 'decided' } & Omit<DecidedEvent, 'decidedAt'> & { decidedAt: string });

/** Options of {@link createWebhookNotifier}. */
export interface WebhookOptions {
  /** Where to POST (http: or https:). */
  readonly url: string | URL;
  /** Attempts per event, at least 1 (default 5). */
  readonly attempts?: number;
  /** Delay before the first retry, doubled each time, ms (default 500). */
  readonly backoffMs?: number;
  /** Longest delay between attempts, ms (default 30,000). */
  readonly maxBackoffMs?: number;
  /** Timeout of one attempt, ms (default 10,000). */
  readonly timeoutMs?: number;
  /** Events held while the receiver is slow or down (default 1,000): beyond, the oldest is dropped. */
  readonly maxQueue?: number;
  /** Where delivery failures are reported (one line each); default: ignored. */
  readonly onError?: (message: string) => void;
}

/** A webhook sender: plug its two methods into the runner's hooks. */
export interface WebhookNotifier {
  readonly onDecisionRequested: (event: DecisionRequestedEvent) => void;
  readonly onDecided: (event: DecidedEvent) => void;
  /** Resolves once the queue is empty (or after `timeoutMs`), e.g. before exiting. */
  flush(timeoutMs?: number): Promise<void>;
  /** Stop sending; queued events are dropped. */
  close(): void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref?.());

/**
 * Create a webhook notifier.
 * @throws Error when `url` is not an http: or https: URL.
 */
export function createWebhookNotifier(options: WebhookOptions): WebhookNotifier {
  const url = new URL(options.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`the webhook URL must be http: or https:, got ${url.protocol}`);
  }
  const attempts = Math.max(1, options.attempts ?? 5);
  const backoffMs = options.backoffMs ?? 500;
  const maxBackoffMs = options.maxBackoffMs ?? 30_000;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const maxQueue = Math.max(1, options.maxQueue ?? 1000);
  const report = options.onError ?? (() => {});
  const queue: WebhookEvent[] = [];
  let sending: Promise<void> | undefined;
  let closed = false;

  async function post(event: WebhookEvent): Promise<void> {
    const body = JSON.stringify(event);
    let last = '';
    for (let attempt = 1; attempt <= attempts && !closed; attempt++) {
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'baton-webhook' },
          body,
          signal: AbortSignal.timeout(timeoutMs),
        });
        await response.body?.cancel().catch(() => {});
        if (response.ok) return;
        last = `HTTP ${response.status}`;
        if (response.status < 500 && response.status !== 408 && response.status !== 429) break;
      } catch (error) {
        last = error instanceof Error ? error.message : String(error);
      }
      if (attempt < attempts) await sleep(Math.min(maxBackoffMs, backoffMs * 2 ** (attempt - 1)));
    }
    if (!closed) report(`webhook: ${event.type} for request ${event.id} not delivered to ${url.origin}: ${last}`);
  }

  function drain(): void {
    if (sending || closed) return;
    sending = (async () => {
      while (queue.length > 0 && !closed) await post(queue.shift()!);
    })().finally(() => {
      sending = undefined;
      if (queue.length > 0) drain();
    });
  }

  function enqueue(event: WebhookEvent): void {
    if (closed) return;
    if (queue.length >= maxQueue) {
      const dropped = queue.shift()!;
      report(`webhook: queue full (${maxQueue}); dropped ${dropped.type} for request ${dropped.id}`);
    }
    queue.push(event);
    drain();
  }

  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    onDecisionRequested(event) {
      const { requestedAt, deadline, ...rest } = event;
      enqueue({
        type: 'decision_requested',
        ...rest,
        requestedAt: iso(requestedAt),
        ...(deadline === undefined ? {} : { deadline: iso(deadline) }),
      });
    },
    onDecided(event) {
      const { decidedAt, ...rest } = event;
      enqueue({ type: 'decided', ...rest, decidedAt: iso(decidedAt) });
    },
    async flush(limitMs = timeoutMs) {
      const deadline = Date.now() + limitMs;
      while ((sending || queue.length > 0) && Date.now() < deadline) await sleep(20);
    },
    close() {
      closed = true;
      queue.length = 0;
    },
  };
}
