/**
 * Stateless Streamable HTTP for flows. `createFlowHttpHandler` is the
 * web-standard face: one path (default `/mcp`), Host and Origin checks
 * against an allowlist (DNS-rebinding protection, on by default for loopback
 * binds), an optional bearer-token gate (401 with a challenge), a request
 * body limit (413), then the SDK's `createMcpHandler`, which builds a fresh
 * server per request, so any instance can serve any round. `serveHttp` mounts
 * it on `node:http`, enforcing the body limit while reading the socket, parsing
 * the JSON body once, and writing plain JSON answers in one piece.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AuthInfo,
  createMcpHandler,
  hostHeaderValidationResponse,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  type McpServerFactory,
  type OAuthTokenVerifier,
  originValidationResponse,
  requireBearerAuth,
} from '@modelcontextprotocol/server';
import { toFetchRequest } from './nodeRequest.js';

/** Default request body limit: 1 MiB (a requestState is capped at 16 KiB by default). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** Options of {@link createFlowHttpHandler}. */
export interface FlowHttpHandlerOptions {
  /** Builds one server per request, e.g. `createFlowServerFactory({ runner })`. */
  readonly factory: McpServerFactory;
  /** The endpoint path (default `/mcp`); any other path answers 404. */
  readonly path?: string;
  /** Largest request body accepted, in bytes (default {@link DEFAULT_MAX_BODY_BYTES}); larger: 413. */
  readonly maxBodyBytes?: number;
  /** Verifies bearer tokens; without it every caller is anonymous. */
  readonly verifier?: OAuthTokenVerifier;
  /**
   * Hostnames accepted in `Host` and `Origin` (DNS-rebinding protection), e.g.
   * `localhostAllowedHostnames()`. `undefined` disables the checks.
   */
  readonly allowedHostnames?: readonly string[];
  /** Out-of-band errors (reporting only). */
  readonly onError?: (error: Error) => void;
}

/** The web-standard face: `fetch(request)` and `close()`. */
export interface FlowHttpHandler {
  /**
   * Serve one request. `parsedBody` is the request's JSON body when the caller already read and
   * parsed it (the request then carries no body); it is handed to the SDK as is.
   */
  fetch(request: Request, options?: { readonly parsedBody?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

const jsonError = (status: number, message: string) =>
  Response.json({ jsonrpc: '2.0', id: null, error: { code: -32600, message } }, { status });

/**
 * Create the HTTP handler.
 *
 * Answers: 404 outside `path`; 403 for a disallowed `Host` or `Origin`; 401 (with
 * `WWW-Authenticate: Bearer ...`) for a missing or unknown token; 413 for a body over
 * the limit; otherwise the SDK's stateless Streamable HTTP answer.
 */
export function createFlowHttpHandler(options: FlowHttpHandlerOptions): FlowHttpHandler {
  const path = options.path ?? '/mcp';
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const allowed = options.allowedHostnames ? [...options.allowedHostnames] : undefined;
  const gate = options.verifier ? requireBearerAuth({ verifier: options.verifier }) : undefined;
  const mcp = createMcpHandler(options.factory, {
    maxRequestBodySize: maxBodyBytes,
    ...(options.onError ? { onerror: options.onError } : {}),
  });

  return {
    async fetch(request, options) {
      if (new URL(request.url).pathname !== path) return jsonError(404, 'Not found');
      if (allowed) {
        const rejected = hostHeaderValidationResponse(request, allowed) ?? originValidationResponse(request, allowed);
        if (rejected) return rejected;
      }
      let authInfo: AuthInfo | undefined;
      if (gate) {
        const verified = await gate(request);
        if (verified instanceof Response) return verified;
        authInfo = verified;
      }
      const declared = Number(request.headers.get('content-length') ?? 0);
      if (declared > maxBodyBytes) return jsonError(413, `Request body exceeds ${maxBodyBytes} bytes`);
      const parsed = options && 'parsedBody' in options ? { parsedBody: options.parsedBody } : {};
      return mcp.fetch(request, { ...parsed, ...(authInfo ? { authInfo } : {}) });
    },
    close: () => mcp.close(),
  };
}

/** Whether a bind address is loopback-only. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** The hostnames `Host` and `Origin` may name for a server bound to `host`. */
export function loopbackHostnames(host: string): string[] {
  const bare = host.replace(/^\[|\]$/g, '');
  const extra = bare.includes(':') ? `[${bare}]` : bare;
  return [...new Set([...localhostAllowedHostnames(), ...localhostAllowedOrigins(), extra])];
}

/** Options of {@link serveHttp}. */
export interface ServeHttpOptions extends Omit<FlowHttpHandlerOptions, 'allowedHostnames'> {
  /** Address to bind, e.g. `127.0.0.1`. */
  readonly host: string;
  /** Port to bind; `0` picks a free one. */
  readonly port: number;
  /**
   * Hostnames accepted in `Host` and `Origin`. Default: the loopback names when `host`
   * is loopback; no check otherwise (put a reverse proxy and `--auth-tokens` in front).
   */
  readonly allowedHostnames?: readonly string[];
}

/** A listening HTTP server. */
export interface HttpServing {
  /** The endpoint, e.g. `http://127.0.0.1:8080/mcp`. */
  readonly url: URL;
  /** Stop accepting, end open connections, close the handler. */
  close(): Promise<void>;
}

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BodyTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers = Object.fromEntries(response.headers);
  if (!response.body) {
    res.writeHead(response.status, headers);
    res.end();
    return;
  }
  if (!response.headers.get('content-type')?.startsWith('text/event-stream')) {
    // A plain (JSON) answer is complete already: one write, with its length.
    const body = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, { ...headers, 'content-length': String(body.length) });
    res.end(body);
    return;
  }
  res.writeHead(response.status, headers);
  res.flushHeaders();
  const reader = response.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => {}));
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    res.write(value);
  }
  res.end();
}

/** The body as JSON, or `undefined` when it is not JSON (the SDK then answers the parse error itself). */
function parseJson(body: Buffer): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(body.toString('utf8')) };
  } catch {
    return undefined;
  }
}

/**
 * Serve flows over stateless Streamable HTTP on `node:http`.
 *
 * @example
 * ```ts
 * const serving = await serveHttp({ factory: createFlowServerFactory({ runner }), host: '127.0.0.1', port: 8080 });
 * console.error(`listening on ${serving.url}`);
 * ```
 */
export async function serveHttp(options: ServeHttpOptions): Promise<HttpServing> {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const allowedHostnames =
    options.allowedHostnames ?? (isLoopbackHost(options.host) ? loopbackHostnames(options.host) : undefined);
  const handler = createFlowHttpHandler({ ...options, maxBodyBytes, allowedHostnames });
  const origin = `http://${options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host}`;

  const server = createServer(async (req, res) => {
    const aborted = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) aborted.abort();
    });
    try {
      const declared = Number(req.headers['content-length'] ?? 0);
      if (declared > maxBodyBytes) throw new BodyTooLarge();
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      const body = hasBody ? await readBody(req, maxBodyBytes) : undefined;
      // The body is read (and bounded) already: parse it once and hand the SDK the value, rather
      // than a body stream for it to read and parse again.
      const json = body && body.length > 0 ? parseJson(body) : undefined;
      const request = toFetchRequest(req, `${origin}:${port()}`, {
        ...(body && !json ? { body: new Uint8Array(body) } : {}),
        signal: aborted.signal,
      });
      await writeResponse(res, await handler.fetch(request, json ? { parsedBody: json.value } : undefined));
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const response =
        error instanceof BodyTooLarge
          ? jsonError(413, `Request body exceeds ${maxBodyBytes} bytes`)
          : jsonError(500, 'Internal error');
      if (!(error instanceof BodyTooLarge)) options.onError?.(error as Error);
      res.setHeader('connection', 'close');
      await writeResponse(res, response).catch(() => res.destroy());
    }
  });

  const port = () => (server.address() as AddressInfo).port;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host.replace(/^\[|\]$/g, ''), () => {
      server.off('error', reject);
      resolve();
    });
  });

  return {
    url: new URL(`${origin}:${port()}${options.path ?? '/mcp'}`),
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await handler.close();
    },
  };
}
