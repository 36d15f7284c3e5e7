/**
 * A loopback webhook receiver for the end-to-end tests that serve with
 * `--notify-webhook`: it keeps every delivery (headers, the exact body for
 * signature checks, the parsed JSON) in arrival order and answers 204.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One notification as delivered. */
export interface Delivery {
  readonly headers: IncomingHttpHeaders;
  /** The body as sent (what the signature covers). */
  readonly body: string;
  readonly json: { type: string; timestamp: string; data: Record<string, any> };
}

/** A running receiver. */
export interface WebhookReceiver {
  /** Where to point `--notify-webhook` (`http://127.0.0.1:PORT/hook`). */
  readonly url: string;
  /** What arrived, in order. */
  readonly deliveries: Delivery[];
  close(): Promise<void>;
}

/** Start a receiver on a free loopback port. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      deliveries.push({ headers: req.headers, body, json: JSON.parse(body) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    deliveries,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
