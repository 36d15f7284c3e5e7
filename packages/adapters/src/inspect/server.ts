/**
 * The `baton inspect` server: the page and its JSON endpoints, on loopback
 * only. `createInspectHandler` is the web-standard face (`fetch(request)`):
 * a Host check against the loopback names (DNS-rebinding protection: any
 * other Host gets 403), GET and HEAD only, then
 *
 * - `/` the page, `/inspect.js` and `/inspect.css` its script and styles;
 * - `/api/flows` the flows (name, title, description, states, asks) and whether an audit log is attached;
 * - `/api/flows/:name/graph` a flow's {@link FlowGraph}, with its ELK `layout` ({@link GraphLayout});
 * - `/api/instances?flow=NAME&limit=N` recorded instances, newest first;
 * - `/api/instances/:fid` one instance's rounds mapped onto its graph ({@link RecordedInstance}),
 *   with what it waits for and from whom (from the ledger's parked request when a ledger is
 *   given, else from its last recorded round) and its `details` ({@link InstanceDetails}: who
 *   started it, its arguments when the flow records values, its status, times and decisions);
 * - `/api/session` who looks (`operator`: the principal's display name), whether they may act
 *   (`canAct`, and `why` not), and the CSRF token the page's POSTs carry;
 * - `POST /api/instances/:fid/cancel|terminate|retry-step` the operator actions
 *   (`operatorActions.ts`: same origin, the page's token, the `operator` role, a reason);
 * - `/api/events` Server-Sent Events: `change` (data `{"instances":[fid,...]}`) whenever a round
 *   is recorded, read by polling the audit log's newest instances while someone listens; `bye`
 *   when the server closes.
 *
 * Every error is `application/problem+json` (with `detail`), 413 and 405 included.
 * `serveInspect` mounts it on `node:http` and refuses non-loopback binds
 * without sign-in.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  AuditEntry,
  AuditLog,
  DecisionRecord,
  Flow,
  FullLedger,
  OperatorTools,
  ParkedRequest,
} from '@baton/engine';
import { hostHeaderValidationResponse, originValidationResponse } from '@modelcontextprotocol/server';
import { toFetchRequest } from '../http/nodeRequest.js';
import { problemResponse } from '../http/problem.js';
import { isLoopbackHost, loopbackHostnames } from '../http/serve.js';
import { type FlowGraph, flowGraph } from './flowGraph.js';
import { describeInstance } from './instanceView.js';
import { type GraphLayout, layoutGraph } from './layout.js';
import { liveEvents } from './liveEvents.js';
import { ACTION_PATH, type InspectAction, OPERATOR_ROLE, performAction, sameToken } from './operatorActions.js';
import { loadPageAssets, type PageAssets } from './page.js';
import {
  type InstanceWaiting,
  type RecordedInstance,
  recordedInstance,
  type WaitingDecision,
  waitingText,
} from './recordedPath.js';
import { type InspectSessions, type InspectSignIn, inspectSessions, type Viewer } from './signIn.js';

export type { InspectSignIn } from './signIn.js';

/** Options of {@link createInspectHandler}. */
export interface InspectHandlerOptions {
  readonly flows: readonly Flow[];
  /** Where recorded rounds are read from; without it the page shows the flows only. */
  readonly audit?: Pick<AuditLog, 'instances' | 'rounds'>;
  /** The ledger the audited servers park requests in: says what each waits for, and from whom. */
  readonly requests?: Pick<FullLedger, 'requests' | 'decisions'>;
  /** Hostnames accepted in `Host` and `Origin` (default: the loopback names). */
  readonly allowedHostnames?: readonly string[];
  /** Failures of the audit log (reporting only; the request answers 500). */
  readonly onError?: (error: Error) => void;
  /** How often `/api/events` reads the audit log for new rounds while someone listens, ms (default 1000). */
  readonly pollMs?: number;
  /** The clock (ms since epoch) that decides whether a state or deadline has passed. Default `Date.now`. */
  readonly now?: () => number;
  /**
   * The operator actions (cancel, terminate, retry-step): a runner's `operators` on the servers'
   * ledger, audit trail and keys. Without them the page only shows, and the actions answer 503.
   */
  readonly operators?: Pick<OperatorTools, 'cancel' | 'terminate' | 'retryStep'>;
  /**
   * Without sign-in: the local operator, who acts without signing in (as `baton runs` names the
   * operator: the login name). Default `operator`.
   */
  readonly localOperator?: string;
  /**
   * Sign-in through the identity provider: every page and API needs a session, the actions the
   * `operator` role. Required beyond loopback; `Host` and `Origin` must then be the public URL's.
   */
  readonly signIn?: InspectSignIn;
}

/** The web-standard face. */
export interface InspectHandler {
  fetch(request: Request): Promise<Response>;
  /** End every `/api/events` stream (each gets a `bye` event) and stop polling. */
  close(): void;
}

const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8' },
  });
/** A problem (RFC 9457) with the page's security headers. */
const problem = (status: number, reason: string, title: string, detail: string) => {
  const response = problemResponse({ status, reason, title, detail });
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) {
    if (!response.headers.has(name)) response.headers.set(name, value);
  }
  return response;
};
/** An error of the JSON endpoints (400, 404), as problem details. */
const failure = (status: 400 | 404, message: string) =>
  status === 404
    ? problem(404, 'not_found', 'Not found', message)
    : problem(400, 'bad_request', 'Bad request', message);
const asset = (body: string, type: string) =>
  new Response(body, { status: 200, headers: { ...SECURITY_HEADERS, 'content-type': `${type}; charset=utf-8` } });

/**
 * Create the inspect handler.
 *
 * @example
 * ```ts
 * import { createInspectHandler } from '@baton/adapters';
 *
 * const handler = createInspectHandler({ flows, audit });
 * const res = await handler.fetch(new Request('http://127.0.0.1/api/flows'));
 * ```
 */
export function createInspectHandler(options: InspectHandlerOptions): InspectHandler {
  const signIn = options.signIn;
  const allowed = [
    ...(options.allowedHostnames ?? (signIn ? [signIn.publicUrl.hostname] : loopbackHostnames('127.0.0.1'))),
  ];
  const sessions: InspectSessions | undefined = signIn
    ? inspectSessions(signIn, SECURITY_HEADERS, options.onError)
    : undefined;
  // Without sign-in (loopback), the local operator acts; the page reads this token from /api/session.
  const local: Viewer = {
    principal: options.localOperator ?? 'operator',
    roles: [OPERATOR_ROLE],
    name: options.localOperator ?? 'operator',
    csrf: randomBytes(24).toString('base64url'),
  };
  const byName = new Map(options.flows.map((flow) => [flow.name, flow]));
  const graphs = new Map<string, FlowGraph>();
  const layouts = new Map<string, Promise<GraphLayout>>();
  const layoutOf = (flow: Flow) => {
    let layout = layouts.get(flow.name);
    if (!layout) {
      layout = layoutGraph(graphOf(flow));
      layouts.set(flow.name, layout);
    }
    return layout;
  };
  const now = options.now ?? Date.now;
  const events = liveEvents({
    audit: options.audit,
    headers: SECURITY_HEADERS,
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const graphOf = (flow: Flow) => {
    let graph = graphs.get(flow.name);
    if (!graph) {
      graph = flowGraph(flow);
      graphs.set(flow.name, graph);
    }
    return graph;
  };
  let loading: Promise<PageAssets> | undefined;
  const assets = () => {
    loading ??= loadPageAssets();
    return loading;
  };
  const audit = options.audit;

  async function route(url: URL, viewer: Viewer): Promise<Response> {
    const path = url.pathname;
    if (path === '/api/session') {
      const operator = viewer.roles.includes(OPERATOR_ROLE);
      const why = !operator
        ? `acting on runs needs the ${OPERATOR_ROLE} role`
        : !options.operators
          ? 'actions are off: start baton inspect with --audit on the servers’ database and their BATON_KEYS'
          : null;
      return json(200, {
        viewer: viewer.name,
        signedIn: sessions !== undefined,
        canAct: why === null,
        ...(why ? { why } : {}),
        csrf: viewer.csrf,
      });
    }
    if (path === '/' || path === '/index.html') return asset((await assets()).html, 'text/html');
    if (path === '/inspect.js') return asset((await assets()).script, 'text/javascript');
    if (path === '/inspect.css') return asset((await assets()).style, 'text/css');
    if (path === '/api/flows') {
      return json(200, {
        audit: audit !== undefined,
        flows: options.flows.map((flow) => {
          const graph = graphOf(flow);
          return {
            name: flow.name,
            title: flow.title ?? null,
            description: flow.description,
            hash: flow.hash,
            states: graph.nodes.length,
            asks: [...new Set(graph.nodes.flatMap((node) => node.asks.map((ask) => ask.key)))],
          };
        }),
      });
    }
    const graphMatch = /^\/api\/flows\/([^/]+)\/graph$/.exec(path);
    if (graphMatch) {
      const flow = byName.get(decodeURIComponent(graphMatch[1]!));
      if (!flow) return failure(404, `no flow "${decodeURIComponent(graphMatch[1]!)}"`);
      return json(200, { ...graphOf(flow), layout: await layoutOf(flow) });
    }
    if (path === '/api/instances') {
      if (!audit) return json(200, { audit: false, instances: [] });
      const flow = url.searchParams.get('flow') ?? undefined;
      const limitParam = url.searchParams.get('limit');
      const limit = limitParam === null ? 100 : Number(limitParam);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) return failure(400, 'limit must be 1-1000');
      const instances = await audit.instances({ ...(flow ? { flow } : {}), limit });
      return json(200, { audit: true, instances: instances.map((i) => ({ ...i, known: byName.has(i.flow) })) });
    }
    const instanceMatch = /^\/api\/instances\/([^/]+)$/.exec(path);
    if (instanceMatch) {
      const fid = decodeURIComponent(instanceMatch[1]!);
      if (!audit) return failure(404, 'no audit log attached (start with --audit URL)');
      const rounds = await audit.rounds(fid);
      if (rounds.length === 0) return failure(404, `no recorded rounds for instance "${fid}"`);
      const mapped = mapInstance(rounds);
      const ledger = options.requests;
      const request = await ledger?.requests.getRequest(fid);
      const decisions = request && ledger ? await ledger.decisions.listDecisions({ id: fid }) : [];
      const votes = request && ledger ? await ledger.decisions.listVotes(fid) : [];
      const parked = request ? waitingFromLedger(request, decisions) : undefined;
      const details = describeInstance({
        flow: byName.get(rounds[0]!.flow),
        rounds,
        ...(request ? { request } : {}),
        decisions,
        votes,
        now: now(),
      });
      return json(200, { ...(parked ? { ...mapped, waiting: parked } : mapped), details });
    }
    if (path === '/api/events') {
      if (!audit) return failure(404, 'no audit log attached (start with --audit URL)');
      return events.open();
    }
    return failure(404, 'not found');
  }

  /** What the ledger's parked request says the instance waits for. */
  function waitingFromLedger(row: ParkedRequest, records: readonly DecisionRecord[]): InstanceWaiting {
    const pending = row.status === 'waiting' ? records : [];
    const decisions = row.waitingFor.map((wait): WaitingDecision => {
      const record = pending.find((d) => d.key === wait.key && d.status === 'pending');
      return {
        key: wait.key,
        role: wait.role ?? null,
        ...(record?.deadline != null ? { deadline: record.deadline } : {}),
      };
    });
    return { source: 'ledger', status: row.status, decisions, text: waitingText(row.status, decisions) };
  }

  function mapInstance(rounds: readonly AuditEntry[]): RecordedInstance & { known: boolean } {
    const flow = byName.get(rounds[0]!.flow);
    if (!flow) {
      const empty = { beforeStates: [], afterStates: [], visited: [], edges: [] };
      return {
        fid: rounds[0]!.fid,
        flow: rounds[0]!.flow,
        currentDefinition: false,
        rounds: rounds.map((entry) => ({ ...entry, ...empty, answers: [] })),
        visited: [],
        edges: [],
        known: false,
      };
    }
    return { ...recordedInstance(flow, graphOf(flow), rounds), known: true };
  }

  /** The origin a same-origin `fetch` of the page sends: the public URL's, or this loopback Host's. */
  const originOf = (request: Request) => (signIn ? signIn.publicUrl.origin : `http://${request.headers.get('host')}`);

  /** The sign-in's own routes (`/auth/*`), or `undefined` for any other path. */
  async function auth(request: Request, path: string): Promise<Response | undefined> {
    if (!sessions || !path.startsWith('/auth/')) return undefined;
    if (path === '/auth/login' && request.method === 'GET') return sessions.begin();
    if (path === '/auth/callback' && request.method === 'GET') return sessions.callback(request);
    if (path === '/auth/logout' && request.method === 'POST') {
      const viewer = await sessions.viewer(request);
      const token = request.headers.get('x-baton-csrf');
      if (
        !viewer ||
        request.headers.get('origin') !== originOf(request) ||
        token === null ||
        !sameToken(token, viewer.csrf)
      ) {
        return problem(403, 'forged', 'Not from this page', 'This sign-out did not come from the inspect page.');
      }
      return new Response(null, { status: 204, headers: { ...SECURITY_HEADERS, 'set-cookie': sessions.clear() } });
    }
    return problem(404, 'not_found', 'Not found', `${request.method} ${path} is not a page of baton inspect.`);
  }

  return {
    close: () => events.close(),
    async fetch(request) {
      const rejected = hostHeaderValidationResponse(request, allowed) ?? originValidationResponse(request, allowed);
      if (rejected) {
        return problem(
          403,
          'forbidden',
          'Forbidden',
          signIn
            ? `forbidden: this page answers at ${signIn.publicUrl.origin} only`
            : 'forbidden: this page answers on loopback names only',
        );
      }
      try {
        const url = new URL(request.url);
        const signing = await auth(request, url.pathname);
        if (signing) return signing;
        const viewer = sessions ? await sessions.viewer(request) : local;
        if (!viewer) {
          if (request.method === 'GET' && (url.pathname === '/' || url.pathname === '/index.html')) {
            return sessions!.begin();
          }
          return problem(401, 'unauthorized', 'Sign-in required', 'Sign in to the inspect page first (open /).');
        }
        const action = ACTION_PATH.exec(url.pathname);
        if (action && request.method === 'POST') {
          return await performAction(request, decodeURIComponent(action[1]!), action[2] as InspectAction, {
            operators: options.operators,
            viewer,
            origin: originOf(request),
            headers: SECURITY_HEADERS,
          });
        }
        if (action || (request.method !== 'GET' && request.method !== 'HEAD')) {
          const allow = action ? 'POST' : 'GET, HEAD';
          const refused = problem(405, 'method_not_allowed', 'Method not allowed', `Use ${allow} here.`);
          refused.headers.set('allow', allow);
          return refused;
        }
        return await route(url, viewer);
      } catch (error) {
        options.onError?.(error as Error);
        return problem(500, 'internal', 'Internal error', 'The inspect server failed here; its log has details.');
      }
    },
  };
}

/** Options of {@link serveInspect}. */
export interface ServeInspectOptions extends Omit<InspectHandlerOptions, 'allowedHostnames'> {
  /** Address to bind (default `127.0.0.1`); beyond loopback only with `signIn`. */
  readonly host?: string;
  /** Port (default 0: a free one). */
  readonly port?: number;
}

/** A listening inspect server. */
export interface InspectServing {
  /** The page, e.g. `http://127.0.0.1:43121/`. */
  readonly url: URL;
  close(): Promise<void>;
}

/** Largest POST body read, in bytes (an action's reason and step). */
const MAX_BODY_BYTES = 16 * 1024;

/** A POST's body, or `undefined` when larger than {@link MAX_BODY_BYTES}. */
async function readBody(req: IncomingMessage): Promise<Uint8Array | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** A response's headers for `writeHead`, every `Set-Cookie` kept. */
function nodeHeaders(response: Response): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = Object.fromEntries(response.headers);
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  return headers;
}

/**
 * Serve the inspect page: on loopback, or beyond it behind `signIn` (then only at its public URL's host).
 *
 * @throws Error when `host` is not a loopback address and there is no `signIn`.
 */
export async function serveInspect(options: ServeInspectOptions): Promise<InspectServing> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(host) && !options.signIn) {
    throw new Error(`baton inspect serves loopback only without sign-in, not ${host}`);
  }
  const handler = createInspectHandler({
    ...options,
    allowedHostnames: options.signIn ? [options.signIn.publicUrl.hostname] : loopbackHostnames(host),
  });
  const bare = host.replace(/^\[|\]$/g, '');
  const origin = `http://${bare.includes(':') ? `[${bare}]` : bare}`;
  const server = createServer(async (req, res) => {
    try {
      let posted: Uint8Array | undefined;
      if (req.method === 'POST') {
        posted = await readBody(req);
        if (!posted) {
          const tooLarge = problem(413, 'too_large', 'Request body too large', 'The body is larger than 16 KiB.');
          res.writeHead(413, nodeHeaders(tooLarge)).end(Buffer.from(await tooLarge.arrayBuffer()));
          return;
        }
      }
      const response = await handler.fetch(toFetchRequest(req, `${origin}:${port()}`, posted ? { body: posted } : {}));
      const streaming = response.headers.get('content-type')?.startsWith('text/event-stream') && response.body;
      if (streaming && req.method === 'HEAD') {
        await response.body!.cancel();
        res.writeHead(response.status, nodeHeaders(response));
        res.end();
        return;
      }
      if (streaming) {
        // A live stream: written as it comes, ended when either side closes.
        res.writeHead(response.status, nodeHeaders(response));
        res.flushHeaders();
        const reader = response.body!.getReader();
        streams.add(res);
        res.once('close', () => {
          streams.delete(res);
          void reader.cancel().catch(() => {});
        });
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          res.write(value);
        }
        res.end();
        return;
      }
      const body = req.method === 'HEAD' ? undefined : Buffer.from(await response.arrayBuffer());
      res.writeHead(response.status, nodeHeaders(response));
      res.end(body);
    } catch (error) {
      options.onError?.(error as Error);
      if (res.headersSent) return void res.end();
      const failed = problem(500, 'internal', 'Internal error', 'The inspect server failed here; its log has details.');
      res.writeHead(500, nodeHeaders(failed)).end(Buffer.from(await failed.arrayBuffer()));
    }
  });
  const port = () => (server.address() as AddressInfo).port;
  const streams = new Set<ServerResponse>();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, bare, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    url: new URL(`${origin}:${port()}/`),
    close: async () => {
      // Live streams say `bye` first (so pages stop instead of retrying): wait, bounded, until written.
      handler.close();
      const ended = [...streams].map((res) => new Promise<void>((done) => res.once('close', () => done())));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(ended),
        new Promise<void>((done) => {
          timer = setTimeout(done, 1000);
        }),
      ]);
      clearTimeout(timer);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
