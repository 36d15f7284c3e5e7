/**
 * Turns a node:http request into a Fetch `Request`, for the servers that run a
 * Fetch-style handler (`/mcp` and the inspect page) on node:http: the URL
 * resolved against the server's own origin, headers copied (repeated ones
 * joined), and an already-read body and abort signal when given.
 */
import type { IncomingMessage } from 'node:http';

/** The Fetch `Request` for `req`, resolved against `base` (e.g. `http://127.0.0.1:3000`). */
export function toFetchRequest(
  req: IncomingMessage,
  base: string,
  init: { body?: Uint8Array; signal?: AbortSignal } = {},
): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(new URL(req.url ?? '/', base), {
    method: req.method ?? 'GET',
    headers,
    ...(init.body ? { body: init.body } : {}),
    ...(init.signal ? { signal: init.signal } : {}),
  });
}
