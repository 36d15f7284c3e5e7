/**
 * Live updates of the inspect page: a Server-Sent Events stream per open
 * page. While at least one page listens, the audit log's newest instances
 * are read every `pollMs` (one indexed query, whoever listens); when a round
 * was recorded since the last read, every stream gets a `change` event naming
 * the instances that moved. A stream first says `ready` (once the baseline is
 * read: the page reloads its data then, so nothing recorded in between is
 * missed), sends a comment every 15 s to keep idle connections open, and ends
 * with `bye` when the server closes, so the page stops instead of retrying.
 */
import type { AuditInstance, AuditLog } from '@baton/engine';

/** The streams of one inspect server. */
export interface LiveEvents {
  /** A new `text/event-stream` response. */
  open(): Response;
  /** Say `bye` to every stream, end them and stop polling. */
  close(): void;
}

/** What {@link liveEvents} reads and how often. */
export interface LiveEventsOptions {
  readonly audit: Pick<AuditLog, 'instances'> | undefined;
  /** Poll interval, ms (default 1000). */
  readonly pollMs?: number;
  /** Headers every response carries (security headers). */
  readonly headers: Readonly<Record<string, string>>;
  readonly onError?: (error: Error) => void;
}

/** How many of the newest instances a poll compares. */
const WATCHED = 200;
const KEEPALIVE_MS = 15_000;

/** Create the live-event streams of an inspect server. */
export function liveEvents(options: LiveEventsOptions): LiveEvents {
  const encoder = new TextEncoder();
  const clients = new Set<ReadableStreamDefaultController<Uint8Array>>();
  const pollMs = options.pollMs ?? 1000;
  let seen: Map<string, string> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let keepalive: NodeJS.Timeout | undefined;
  let reading: Promise<void> | undefined;
  let closed = false;

  const send = (client: ReadableStreamDefaultController<Uint8Array>, text: string) => {
    try {
      client.enqueue(encoder.encode(text));
    } catch {
      clients.delete(client); // already closed by the other side
    }
  };
  const broadcast = (text: string) => {
    for (const client of clients) send(client, text);
  };
  const signature = (i: AuditInstance) => `${i.rounds}:${i.lastAt}:${i.lastOutcome}`;

  /** Read the newest instances; broadcast the ones that changed since the last read. */
  const poll = () => {
    reading ??= (async () => {
      try {
        const now = await options.audit!.instances({ limit: WATCHED });
        const next = new Map(now.map((i) => [i.fid, signature(i)]));
        if (seen) {
          const moved = now.filter((i) => seen!.get(i.fid) !== next.get(i.fid)).map((i) => i.fid);
          if (moved.length > 0) broadcast(`event: change\ndata: ${JSON.stringify({ instances: moved })}\n\n`);
        }
        seen = next;
      } catch (error) {
        options.onError?.(error as Error);
      } finally {
        reading = undefined;
      }
    })();
    return reading;
  };
  const stop = () => {
    clearInterval(timer);
    clearInterval(keepalive);
    timer = keepalive = undefined;
    seen = undefined;
  };

  return {
    open() {
      if (closed || !options.audit) {
        return new Response(JSON.stringify({ error: 'closed' }), { status: 503, headers: { ...options.headers } });
      }
      let self: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          self = controller;
          clients.add(controller);
          send(controller, 'retry: 3000\n\n');
          if (!timer) {
            timer = setInterval(() => void poll(), pollMs);
            timer.unref();
            keepalive = setInterval(() => broadcast(': keepalive\n\n'), KEEPALIVE_MS);
            keepalive.unref();
          }
          await (seen ? undefined : poll());
          if (clients.has(controller)) send(controller, 'event: ready\ndata: {}\n\n');
        },
        cancel() {
          clients.delete(self);
          if (clients.size === 0) stop();
        },
      });
      return new Response(body, {
        status: 200,
        headers: { ...options.headers, 'content-type': 'text/event-stream; charset=utf-8' },
      });
    },
    close() {
      closed = true;
      broadcast('event: bye\ndata: {}\n\n');
      for (const client of clients) {
        try {
          client.close();
        } catch {
          // closed already
        }
      }
      clients.clear();
      stop();
    },
  };
}
