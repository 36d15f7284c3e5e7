/**
 * The webhook notifier (`--notify-webhook`) against a real receiver on
 * 127.0.0.1: bodies with ISO times, retries with backoff on 5xx until
 * delivered, no retry on a 4xx, a bounded number of attempts against a
 * receiver that is down, a bounded queue that drops the oldest, and hooks
 * that return at once whatever the receiver does.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createWebhookNotifier } from '@baton/adapters';
import { afterEach, describe, expect, it } from 'vitest';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A receiver answering each POST with `status(n)` (n: 1-based count); returns its URL and what it got. */
async function receiver(status: (n: number) => number) {
  const got: Record<string, unknown>[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      got.push(JSON.parse(body));
      res.writeHead(status(got.length)).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/`, got };
}

const requested = {
  id: 'R1',
  key: 'manager_approval',
  flow: 'expense_approval',
  role: 'manager',
  message: 'Approve?',
  requestedAt: Date.UTC(2026, 6, 28, 9),
  deadline: Date.UTC(2026, 7, 4, 9),
  requester: 'h:abc',
};

describe('createWebhookNotifier', () => {
  it('POSTs each event as JSON with ISO times, retrying 5xx with backoff until delivered', async () => {
    const { url, got } = await receiver((n) => (n < 3 ? 503 : 204));
    const errors: string[] = [];
    const notifier = createWebhookNotifier({ url, backoffMs: 10, onError: (m) => errors.push(m) });
    // The hooks never wait for the receiver: they return nothing to await, and nothing has
    // arrived when they return (delivery happens on later turns of the event loop).
    expect(notifier.onDecisionRequested(requested)).toBeUndefined();
    expect(
      notifier.onDecided({ id: 'R1', key: 'manager_approval', flow: 'expense_approval', decider: 'bob', decidedAt: 0 }),
    ).toBeUndefined();
    expect(got).toHaveLength(0);
    await notifier.flush(5000);
    expect(got).toHaveLength(4);
    expect(got[2]).toEqual({
      type: 'decision_requested',
      ...requested,
      requestedAt: '2026-07-28T09:00:00.000Z',
      deadline: '2026-08-04T09:00:00.000Z',
    });
    expect(got[3]).toMatchObject({ type: 'decided', decider: 'bob', decidedAt: '1970-01-01T00:00:00.000Z' });
    expect(errors).toEqual([]);
  });

  it('does not retry a 4xx, and gives up after the bounded attempts against a receiver that is down', async () => {
    const { url, got } = await receiver(() => 400);
    const errors: string[] = [];
    const rejecting = createWebhookNotifier({ url, backoffMs: 10, onError: (m) => errors.push(m) });
    rejecting.onDecisionRequested(requested);
    await rejecting.flush(5000);
    expect(got).toHaveLength(1);
    expect(errors).toEqual([expect.stringMatching(/decision_requested for request R1 not delivered .*HTTP 400/)]);

    const down = createWebhookNotifier({
      url: 'http://127.0.0.1:9/',
      attempts: 3,
      backoffMs: 10,
      timeoutMs: 1000,
      onError: (m) => errors.push(m),
    });
    down.onDecisionRequested(requested);
    await down.flush(5000);
    expect(errors).toHaveLength(2);
    expect(errors[1]).toContain('not delivered');
  });

  it('keeps a bounded queue, dropping the oldest with a line', async () => {
    const { url, got } = await receiver(() => 204);
    const errors: string[] = [];
    const notifier = createWebhookNotifier({ url, maxQueue: 2, onError: (m) => errors.push(m) });
    for (let i = 0; i < 5; i++) notifier.onDecisionRequested({ ...requested, id: `R${i}` });
    await notifier.flush(5000);
    // The first is in flight at once; of the four queued behind it, two are dropped.
    expect(got.map((g) => g.id)).toEqual(['R0', 'R3', 'R4']);
    expect(errors).toEqual([expect.stringContaining('dropped decision_requested for request R1'), expect.any(String)]);
  });

  it('refuses a URL that is not http(s)', () => {
    expect(() => createWebhookNotifier({ url: 'file:///etc/passwd' })).toThrow(/http: or https:/);
  });
});
