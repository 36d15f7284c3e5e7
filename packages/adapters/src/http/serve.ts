/**
 * Stateless Streamable HTTP for flows. `createFlowHttpHandler` is the
 * web-standard face: one path (default `/mcp`), Host and Origin checks
 * against an allowlist (DNS-rebinding protection, on by default for loopback
 * binds), an optional bearer-token gate (401 with a challenge), a request
 * body limit (413), then the SDK's `createMcpHandler`, which builds a fresh
 * server per request, so any instance can serve any round. `serveHttp` mounts
 * it on `node:http`: it decides "loopback" from the address actually bound,
 * checks path, Host, Origin, bearer token and declared length from the headers
 * before reading any body, enforces the body limit while reading the socket,
 * parses the JSON body once, writes plain JSON answers in one piece, and closes
 * lingeringly when it answers before the body is in (answer, half-close,
 * discard what still arrives for a bounded time and size, then destroy), so a
 * client still uploading gets its 401 or 413 rather than a TCP reset.
 * Authenticated routes (`authenticatedRoutes`, e.g. the decision API under
 * `/api/decisions`) pass the same checks as `/mcp`, get the bounded body, and
 * answer its refusals in their own format; so do other routes that carry
 * `refused` ({@link ServedRoute}: the events endpoint, the decision pages).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo, BlockList, isIP } from 'node:net';
import {
  type AuthInfo,
  createMcpHandler,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  type McpServerFactory,
  type OAuthTokenVerifier,
  requireBearerAuth,
  validateHostHeader,
  validateOriginHeader,
} from '@modelcontextprotocol/server';
import { IssuerUnavailableError } from '../auth/introspection.js';
import { noteAppsRequest } from '../mcp/apps/negotiation.js';
import { ANONYMOUS_PRINCIPAL } from '../mcp/callContext.js';
import { noteCalledTool } from '../mcp/calledTool.js';
import type { DirectAnswer, DirectToolCalls } from '../mcp/directToolCalls.js';
import {
  type ProtectedResourceOptions,
  protectedResourceRoutes,
  resourceMetadataUrl,
} from '../mcp/protectedResource.js';
import type { TaskListenRoute } from '../mcp/subscriptions/taskListen.js';
import { withIncomingTrace } from '../observability/traceContext.js';
import { fetchRequestHead, nodeRequestHead, type RequestHead, toFetchRequest } from './nodeRequest.js';

/** Seconds a client is told to wait (`Retry-After`) when the issuer's keys cannot be fetched. */
export const ISSUER_RETRY_AFTER_SECONDS = 10;

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
  /**
   * Other paths answered by the server itself (e.g. `/healthz`, `/metrics`: see
   * `createObservabilityRoutes`): after the Host/Origin check, without bearer authentication.
   * A key ending in `/*` answers every path under it (`/decide/*`: `/decide/R7x…`). A route
   * asked with a body (POST) gets it, bounded by `maxBodyBytes`, and authenticates the request
   * itself (a page's session cookie, a Standard Webhooks signature over the exact bytes).
   */
  readonly routes?: ReadonlyMap<string, ServedRoute>;
  /**
   * This server as an OAuth protected resource (with a verifier from `createOAuthVerifier`): serves
   * the Protected Resource Metadata at `/.well-known/oauth-protected-resource` and its path-suffixed
   * form, and points the 401 challenge there (`WWW-Authenticate: Bearer resource_metadata="…"`).
   */
  readonly oauth?: ProtectedResourceOptions;
  /**
   * Routes under a path prefix (a key `/api/decisions` answers `/api/decisions` and
   * `/api/decisions/…`) that act as the caller: after the Host/Origin check and the bearer gate of
   * `/mcp`, with the body read (bounded by `maxBodyBytes`). A refusal of those checks (403, 401,
   * 503, 413) is handed to the route to answer in its own format (see {@link RouteAdmission}).
   */
  readonly authenticatedRoutes?: ReadonlyMap<string, AuthenticatedRoute>;
  /**
   * `tools/call` requests of flows answered without the SDK's per-request server, e.g.
   * `createDirectToolCalls(options)` with the options of the `factory`; a request it declines
   * goes to the SDK (see `mcp/directToolCalls.ts`).
   */
  readonly direct?: DirectToolCalls;
  /**
   * `subscriptions/listen` requests that name `taskIds` (see `subscriptions/taskListen.ts`),
   * answered after the same checks as every `/mcp` request; any other request goes to the SDK.
   */
  readonly listen?: TaskListenRoute;
}

/**
 * What an authenticated route is told about its request: admitted, with the verified token when
 * the server has a verifier; or refused by the server's checks, with the answer `/mcp` would give
 * (status and headers such as `WWW-Authenticate` and `Retry-After` to keep).
 */
export type RouteAdmission =
  | { readonly status: 'admitted'; readonly authInfo?: AuthInfo }
  | { readonly status: 'refused'; readonly response: Response };

/**
 * A route of {@link FlowHttpHandlerOptions.routes}. With `refused`, a refusal of the server's own
 * checks (403 for a foreign Host or Origin, 413 for a body over the limit; handed over in `/mcp`'s
 * JSON-RPC shape, with its status and headers) is answered in the route's format
 * (`routeRefusals.ts`: problem details for an API, a page for a person); without it, as `/mcp` would.
 */
export interface ServedRoute {
  (request: Request): Promise<Response>;
  readonly refused?: (refusal: Response, request: Request) => Promise<Response>;
}

/** A route answering as the caller (see {@link FlowHttpHandlerOptions.authenticatedRoutes}). */
export type AuthenticatedRoute = (request: Request, admission: RouteAdmission) => Promise<Response>;

/** The authenticated route whose prefix `pathname` is under, if any. */
function routeUnder(
  routes: ReadonlyMap<string, AuthenticatedRoute> | undefined,
  pathname: string,
): AuthenticatedRoute | undefined {
  if (!routes) return undefined;
  for (const [prefix, route] of routes) {
    if (pathname === prefix || pathname.startsWith(`${prefix}/`)) return route;
  }
  return undefined;
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
 * The refusal of a foreign `Host` or `Origin`, as the SDK's `hostHeaderValidationResponse` and
 * `originValidationResponse` answer it (403, JSON-RPC -32000), or `undefined` when both pass.
 */
function hostOrOriginRefusal(head: RequestHead, allowed: string[], checkOrigin: boolean): Response | undefined {
  const host = validateHostHeader(head.header('host'), allowed);
  const checked = host.ok && checkOrigin ? validateOriginHeader(head.header('origin'), allowed) : host;
  if (checked.ok) return undefined;
  return Response.json(
    { jsonrpc: '2.0', error: { code: -32000, message: checked.message }, id: null },
    { status: 403, headers: { 'Content-Type': 'application/json' } },
  );
}

/** A request that passed the header checks, with the verified token when there is a verifier. */
interface Admitted {
  readonly authInfo?: AuthInfo;
  /** Set for a request to an authenticated route or a route asked with a body: it answers instead of the SDK. */
  readonly route?: AuthenticatedRoute;
}

/** The route answering `pathname`: an exact key, else the longest `/*` key it falls under. */
function routeFor(routes: FlowHttpHandlerOptions['routes'], pathname: string) {
  const exact = routes?.get(pathname);
  if (exact || !routes) return exact;
  let best: string | undefined;
  for (const key of routes.keys()) {
    if (key.endsWith('/*') && pathname.startsWith(key.slice(0, -1)) && key.length > (best?.length ?? 0)) best = key;
  }
  return best === undefined ? undefined : routes.get(best);
}

/** The handler in two steps, so that `serveHttp` can check the headers before it reads a body. */
interface Gate extends FlowHttpHandler {
  /** Path, Host, Origin, bearer token and declared length, from the headers alone: a refusal or the admission. */
  admit(head: RequestHead): Promise<Response | Admitted>;
  /** The direct lane's answer to an admitted request with a parsed body, or `undefined` for the SDK's. */
  direct(head: RequestHead, admitted: Admitted, parsedBody: unknown): Promise<DirectAnswer> | undefined;
  /** Hand an admitted request to the SDK (`parsedBody`: its already parsed JSON body). */
  serve(request: Request, admitted: Admitted, parsed?: { readonly parsedBody?: unknown }): Promise<Response>;
}

function createGate(options: FlowHttpHandlerOptions): Gate {
  const path = options.path ?? '/mcp';
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const allowed = options.allowedHostnames ? [...options.allowedHostnames] : undefined;
  const metadataUrl = options.oauth ? resourceMetadataUrl(options.oauth.resource) : undefined;
  const bearer = options.verifier ? bearerGate(options.verifier, metadataUrl) : undefined;
  const routes = options.oauth
    ? new Map([...(options.routes ?? []), ...protectedResourceRoutes(options.oauth)])
    : options.routes;
  const mcp = createMcpHandler(options.factory, {
    maxRequestBodySize: maxBodyBytes,
    ...(options.onError ? { onerror: options.onError } : {}),
  });

  const gate: Gate = {
    async admit(head) {
      const { pathname } = head;
      const route = pathname === path ? undefined : routeFor(routes, pathname);
      const acting = pathname === path || route ? undefined : routeUnder(options.authenticatedRoutes, pathname);
      if (pathname !== path && !route && !acting) return jsonError(404, 'Not found');
      const refused = (response: Response) =>
        acting
          ? acting(head.request(), { status: 'refused', response })
          : route?.refused
            ? route.refused(response, head.request())
            : Promise.resolve(response);
      if (allowed) {
        // `Origin: null` (a same-origin form post under `Referrer-Policy: no-referrer`) is left to the
        // route, which checks more than a hostname (the decision pages: Sec-Fetch-Site and a CSRF token).
        const opaque = route !== undefined && head.header('origin') === 'null';
        const rejected = hostOrOriginRefusal(head, allowed, !opaque);
        if (rejected) return refused(rejected);
      }
      if (route && (head.method === 'GET' || head.method === 'HEAD')) return route(head.request());
      if (route) {
        const declared = Number(head.header('content-length') ?? 0);
        if (declared > maxBodyBytes) return refused(jsonError(413, `Request body exceeds ${maxBodyBytes} bytes`));
        // Answered once its body is read; a refusal of the server's own (too large) in the route's format.
        return {
          route: (withBody, admission) =>
            admission.status === 'refused' ? refused(admission.response) : route(withBody),
        };
      }
      let authInfo: AuthInfo | undefined;
      if (bearer) {
        const verified = await bearer(head.request());
        if (verified instanceof Response) return refused(verified);
        authInfo = verified;
      }
      const declared = Number(head.header('content-length') ?? 0);
      if (declared > maxBodyBytes) return refused(jsonError(413, `Request body exceeds ${maxBodyBytes} bytes`));
      return { ...(authInfo ? { authInfo } : {}), ...(acting ? { route: acting } : {}) };
    },
    direct(head, admitted, parsedBody) {
      if (admitted.route || !options.direct) return undefined;
      return options.direct({
        head,
        body: parsedBody,
        ...(admitted.authInfo ? { authInfo: admitted.authInfo } : {}),
      });
    },
    serve(request, admitted, parsed) {
      if (admitted.route) {
        return admitted.route(request, {
          status: 'admitted',
          ...(admitted.authInfo ? { authInfo: admitted.authInfo } : {}),
        });
      }
      const body = parsed && 'parsedBody' in parsed ? { parsedBody: parsed.parsedBody } : {};
      if ('parsedBody' in body) {
        noteCalledTool(request, body.parsedBody);
        noteAppsRequest(request, body.parsedBody);
      }
      const listened = 'parsedBody' in body ? options.listen?.(request, body.parsedBody, admitted.authInfo) : undefined;
      if (listened) return listened;
      return mcp.fetch(request, { ...body, ...(admitted.authInfo ? { authInfo: admitted.authInfo } : {}) });
    },
    async fetch(request, parsed) {
      const head = fetchRequestHead(request);
      const admitted = await gate.admit(head);
      if (admitted instanceof Response) return admitted;
      const direct = parsed && 'parsedBody' in parsed ? gate.direct(head, admitted, parsed.parsedBody) : undefined;
      if (!direct) return gate.serve(request, admitted, parsed);
      const { status, body } = await direct;
      return new Response(body, { status, headers: { 'content-type': 'application/json' } });
    },
    close: () => mcp.close(),
  };
  return gate;
}

/**
 * The SDK's bearer gate, except that a token the issuer could not be asked about (its JWKS or
 * introspection endpoint unreachable: {@link IssuerUnavailableError}) is a 503 with `Retry-After`,
 * not a 500 (or a 401 for everyone).
 */
function bearerGate(verifier: OAuthTokenVerifier, metadataUrl: string | undefined) {
  return async (request: Request): Promise<AuthInfo | Response> => {
    let unavailable = false;
    const watched: OAuthTokenVerifier = {
      verifyAccessToken: (token) =>
        verifier.verifyAccessToken(token).catch((error: unknown) => {
          if (error instanceof IssuerUnavailableError) unavailable = true;
          throw error;
        }),
    };
    const verified = await requireBearerAuth({
      verifier: watched,
      ...(metadataUrl ? { resourceMetadataUrl: metadataUrl } : {}),
    })(request);
    if (!unavailable) return verified;
    return Response.json(
      { error: 'temporarily_unavailable', error_description: 'The token cannot be checked now: try again later' },
      { status: 503, headers: { 'retry-after': String(ISSUER_RETRY_AFTER_SECONDS) } },
    );
  };
}

/**
 * Create the HTTP handler.
 *
 * Answers: 404 outside `path`; 403 for a disallowed `Host` or `Origin`; 401 (with
 * `WWW-Authenticate: Bearer ...`) for a missing or unknown token; 503 (with `Retry-After`) when
 * the token's issuer cannot be asked; 413 for a declared
 * body over the limit; otherwise the SDK's stateless Streamable HTTP answer. All of
 * these checks read the headers only: the body is left to the SDK.
 */
export function createFlowHttpHandler(options: FlowHttpHandlerOptions): FlowHttpHandler {
  const { fetch, close } = createGate(options);
  return { fetch, close };
}

/**
 * Whether a bind address, as spelled, is loopback-only (`localhost`, `127.x.y.z`, `::1`).
 * A spelling test: `127.1` and `2130706433` are loopback too but say no here;
 * `serveHttp` decides from the address it bound ({@link isLoopbackAddress}).
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

const loopbackRanges = new BlockList();
loopbackRanges.addSubnet('127.0.0.0', 8, 'ipv4');
loopbackRanges.addAddress('::1', 'ipv6');

/**
 * Whether a bound IP address (as `server.address().address` reports it) is loopback:
 * 127.0.0.0/8, `::1`, or an IPv4-mapped `::ffff:127.x.y.z`.
 *
 * @example `isLoopbackAddress('127.0.0.1')` -> true; `isLoopbackAddress('0.0.0.0')` -> false
 */
export function isLoopbackAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && loopbackRanges.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

/** The hostnames `Host` and `Origin` may name for a server bound to `host`. */
export function loopbackHostnames(host: string): string[] {
  const bare = host.replace(/^\[|\]$/g, '');
  const extra = bare.includes(':') ? `[${bare}]` : bare;
  return [...new Set([...localhostAllowedHostnames(), ...localhostAllowedOrigins(), extra])];
}

/** Options of {@link serveHttp}. */
export interface ServeHttpOptions extends Omit<FlowHttpHandlerOptions, 'allowedHostnames' | 'oauth'> {
  /** Address to bind, e.g. `127.0.0.1`. */
  readonly host: string;
  /** Port to bind; `0` picks a free one. */
  readonly port: number;
  /**
   * Hostnames accepted in `Host` and `Origin`. Default: the loopback names when the bound
   * address is loopback (however `host` was spelled: `127.1` too); no check otherwise (put
   * a reverse proxy and `--auth-tokens` in front).
   */
  readonly allowedHostnames?: readonly string[];
  /**
   * As {@link FlowHttpHandlerOptions.oauth}; `resource` defaults to the served URL (right on
   * loopback; behind a proxy, give the public URL).
   */
  readonly oauth?: Omit<ProtectedResourceOptions, 'resource'> & { readonly resource?: URL | string };
}

/** A listening HTTP server. */
export interface HttpServing {
  /** The endpoint, e.g. `http://127.0.0.1:8080/mcp`. */
  readonly url: URL;
  /** Whether the bound address is loopback (127.0.0.0/8 or `::1`), whatever `host` looked like. */
  readonly loopback: boolean;
  /**
   * The checks in force: `hostAndOrigin`, the Host/Origin allowlist against DNS rebinding
   * (on for loopback binds by default, or with `allowedHostnames`); `bearer`, bearer-token
   * authentication (on with a `verifier`).
   */
  readonly checks: { readonly hostAndOrigin: boolean; readonly bearer: boolean };
  /** Stop accepting, end open connections, close the handler. */
  close(): Promise<void>;
}

/**
 * One line naming every check that is off on a server reachable beyond loopback, or
 * `undefined` when it is bound to loopback or has every check on.
 *
 * @example `"0.0.0.0:3000 is not a loopback address and these checks are off: Host/Origin (DNS-rebinding protection); bearer authentication (every caller shares the principal \"anonymous\")"`
 */
export function servingWarning(serving: HttpServing): string | undefined {
  if (serving.loopback) return undefined;
  const off = [
    ...(serving.checks.hostAndOrigin ? [] : ['Host/Origin (DNS-rebinding protection)']),
    ...(serving.checks.bearer
      ? []
      : [`bearer authentication (every caller shares the principal "${ANONYMOUS_PRINCIPAL}")`]),
  ];
  return off.length > 0
    ? `${serving.url.host} is not a loopback address and these checks are off: ${off.join('; ')}`
    : undefined;
}

/** How long a connection answered before its body was read keeps discarding what still arrives. */
const LINGER_MS = 5_000;
/** How much it discards at most, in bytes, before it is destroyed anyway. */
const LINGER_BYTES = 16 * 1024 * 1024;

/**
 * Answer a request whose body will not be read (or not to its end) without losing the answer.
 *
 * Closing a socket while the client is still sending makes the kernel send a reset, which can
 * discard the answer before the client reads it (curl exit 55, Node `EPIPE`). So, as Apache
 * and Go's net/http do: send the answer with `connection: close`, half-close (FIN after the
 * answer), keep reading and discarding for at most {@link LINGER_MS} and {@link LINGER_BYTES},
 * and destroy the socket once the body ends, the client closes, or a bound is reached.
 * A request whose body is already complete is answered normally (keep-alive).
 */
function closeLingeringAfter(req: IncomingMessage, res: ServerResponse): void {
  if (req.complete) return;
  res.setHeader('connection', 'close');
  const socket = req.socket;
  let started = false;
  const linger = () => {
    if (started) return;
    started = true;
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
    };
    const timer = setTimeout(done, LINGER_MS);
    socket.once('close', () => clearTimeout(timer));
    if (!socket.writableEnded) socket.end();
    if (req.complete) return done();
    let discarded = 0;
    req.on('data', (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > LINGER_BYTES) done();
    });
    req.once('end', done);
    req.once('error', done);
    socket.once('end', done);
    req.resume();
  };
  // node:http ends a `connection: close` answer with socket.destroySoon(): end, then destroy as
  // soon as the answer is written. Linger instead; 'finish' covers a Node that calls end() alone.
  socket.destroySoon = linger;
  res.once('finish', linger);
}

const TOO_LARGE = Symbol('too large');
class ClientGone extends Error {}

/**
 * The request body, or {@link TOO_LARGE} as soon as it passes `limit` bytes. It never destroys
 * the request (that would reset the connection under the 413): the rest is left to
 * {@link closeLingeringAfter}. Rejects with {@link ClientGone} when the client goes away first.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | typeof TOO_LARGE> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      resolve(TOO_LARGE);
    };
    let ended = false;
    // 'close' follows every request, also after its 'end': only an early one means the client
    // went away (and only then is an error worth building).
    const gone = () => {
      if (!ended) reject(new ClientGone());
    };
    req.on('data', onData);
    req.once('end', () => {
      ended = true;
      resolve(Buffer.concat(chunks));
    });
    req.once('error', gone);
    req.once('close', gone);
  });
}

async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string | string[]> = Object.fromEntries(response.headers);
  // Several cookies are several headers (a joined `set-cookie` is not one a browser reads).
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 1) headers['set-cookie'] = cookies;
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
 * Per request: path, Host, Origin, bearer token and declared length are checked from the
 * headers (404, 403, 401, 413) before any body is read; then the body is read up to
 * `maxBodyBytes` (413 past it), parsed once and handed to the SDK. An answer sent before the
 * body is in closes the connection lingeringly, so the client reads it even mid-upload.
 *
 * @example
 * ```ts
 * import { createFlowServerFactory, serveHttp } from '@baton/adapters';
 *
 * const serving = await serveHttp({ factory: createFlowServerFactory({ runner }), host: '127.0.0.1', port: 8080 });
 * console.error(`listening on ${serving.url}`);
 * ```
 */
export async function serveHttp(options: ServeHttpOptions): Promise<HttpServing> {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const origin = `http://${options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host}`;
  let gate: Gate | undefined;
  /** `origin:port`, known once listening (not asked of the socket per request: a syscall). */
  let base = '';

  /** An answer given before the body was read to its end: lingering close (see above). */
  const answerEarly = (req: IncomingMessage, res: ServerResponse, response: Response) => {
    closeLingeringAfter(req, res);
    return writeResponse(res, response);
  };

  // A `traceparent` header is the parent of what the request plays (`observability/traceContext.ts`).
  const server = createServer((req, res) => withIncomingTrace(req.headers, () => handle(req, res)));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const aborted = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) aborted.abort();
    });
    try {
      // The headers first: nobody gets a body read (up to maxBodyBytes) before they are admitted.
      const head = nodeRequestHead(req, base, aborted.signal);
      const admitted = await gate!.admit(head);
      if (admitted instanceof Response) return await answerEarly(req, res, admitted);
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
      const body = hasBody ? await readBody(req, maxBodyBytes) : undefined;
      if (body === TOO_LARGE) {
        const tooLarge = jsonError(413, `Request body exceeds ${maxBodyBytes} bytes`);
        const route = admitted.route;
        return await answerEarly(
          req,
          res,
          route ? await route(head.request(), { status: 'refused', response: tooLarge }) : tooLarge,
        );
      }
      if (admitted.route) {
        // An authenticated route (or a route asked with a body) reads its own body (raw bytes, already bounded).
        const request =
          body && body.length > 0
            ? toFetchRequest(req, base, { body: new Uint8Array(body), signal: aborted.signal })
            : head.request();
        return await writeResponse(res, await gate!.serve(request, admitted));
      }
      // The body is read (and bounded) already: parse it once and hand the SDK the value, rather
      // than a body stream for it to read and parse again.
      const json = body && body.length > 0 ? parseJson(body) : undefined;
      const direct = json ? gate!.direct(head, admitted, json.value) : undefined;
      if (direct) {
        const { status, body } = await direct;
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
        return;
      }
      const request =
        body && body.length > 0 && !json
          ? toFetchRequest(req, base, { body: new Uint8Array(body), signal: aborted.signal })
          : head.request();
      await writeResponse(res, await gate!.serve(request, admitted, json ? { parsedBody: json.value } : undefined));
    } catch (error) {
      if (error instanceof ClientGone || res.headersSent) {
        res.destroy();
        return;
      }
      options.onError?.(error as Error);
      await answerEarly(req, res, jsonError(500, 'Internal error')).catch(() => res.destroy());
    }
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host.replace(/^\[|\]$/g, ''), () => {
      server.off('error', reject);
      resolve();
    });
  });

  const port = (server.address() as AddressInfo).port;
  base = `${origin}:${port}`;

  // "Loopback" is a property of the address bound, not of how it was spelled (`127.1`, `2130706433`).
  const bound = (server.address() as AddressInfo).address;
  const loopback = isLoopbackAddress(bound);
  const allowedHostnames =
    options.allowedHostnames ??
    (loopback ? [...new Set([...loopbackHostnames(options.host), ...loopbackHostnames(bound)])] : undefined);
  const url = new URL(`${base}${options.path ?? '/mcp'}`);
  const { oauth, ...rest } = options;
  gate = createGate({
    ...rest,
    maxBodyBytes,
    allowedHostnames,
    ...(oauth ? { oauth: { ...oauth, resource: oauth.resource ?? url } } : {}),
  });

  return {
    url,
    loopback,
    checks: { hostAndOrigin: allowedHostnames !== undefined, bearer: options.verifier !== undefined },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await gate?.close();
    },
  };
}
