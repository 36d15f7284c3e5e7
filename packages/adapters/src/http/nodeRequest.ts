/**
 * Turns a node:http request into a Fetch `Request`, for the servers that run a
 * Fetch-style handler (`/mcp` and the inspect page) on node:http: the URL
 * resolved against the server's own origin, headers copied (repeated ones
 * joined), and an already-read body and abort signal when given. A
 * {@link RequestHead} is what the serving checks read (path, method, headers)
 * without building that `Request` first: building it costs more than the
 * checks, and the direct lane (`mcp/directToolCalls.ts`) answers most
 * requests without ever needing it.
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

/** What the serving checks read of a request, and the Fetch `Request` itself once something needs it. */
export interface RequestHead {
  /** The URL's path, e.g. `/mcp`. */
  readonly pathname: string;
  /** The HTTP method, e.g. `POST`. */
  readonly method: string;
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal;
  /** A header's value as `Headers.get` gives it (repeated ones joined), or `null`. */
  header(name: string): string | null;
  /** The request as a Fetch `Request` without a body, built once when first asked. */
  request(): Request;
}

/** The head of a Fetch `Request`. */
export function fetchRequestHead(request: Request): RequestHead {
  return {
    pathname: new URL(request.url).pathname,
    method: request.method,
    signal: request.signal,
    header: (name) => request.headers.get(name),
    request: () => request,
  };
}

/** The head of a node:http request, resolved against `base`; its `Request` carries `signal`. */
export function nodeRequestHead(req: IncomingMessage, base: string, signal: AbortSignal): RequestHead {
  let built: Request | undefined;
  return {
    pathname: new URL(req.url ?? '/', base).pathname,
    method: req.method ?? 'GET',
    signal,
    header: (name) => {
      const value = req.headers[name.toLowerCase()];
      return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
    },
    request: () => {
      built ??= toFetchRequest(req, base, { signal });
      return built;
    },
  };
}
