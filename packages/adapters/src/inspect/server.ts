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
 * - `/api/events` Server-Sent Events: `change` (data `{"instances":[fid,...]}`) whenever a round
 *   is recorded, read by polling the audit log's newest instances while someone listens; `bye`
 *   when the server closes.
 *
 * `serveInspect` mounts it on `node:http` and refuses non-loopback binds.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AuditEntry, AuditLog, DecisionRecord, Flow, Ledger, ParkedRequest } from '@baton/engine';
import { hostHeaderValidationResponse, originValidationResponse } from '@modelcontextprotocol/server';
import { isLoopbackHost, loopbackHostnames } from '../http.js';
import { toFetchRequest } from '../nodeRequest.js';
import { type FlowGraph, flowGraph } from './flowGraph.js';
import { describeInstance } from './instanceView.js';
import { type GraphLayout, layoutGraph } from './layout.js';
import { liveEvents } from './liveEvents.js';
import { loadPageAssets, type PageAssets } from './page.js';
import {
  type InstanceWaiting,
  type RecordedInstance,
  recordedInstance,
  type WaitingDecision,
  waitingText,
} from './recordedPath.js';

/** Options of {@link createInspectHandler}. */
export interface InspectHandlerOptions {
  readonly flows: readonly Flow[];
  /** Where recorded rounds are read from; without it the page shows the flows only. */
  readonly audit?: Pick<AuditLog, 'instances' | 'rounds'>;
  /** The ledger the audited servers park requests in: says what each waits for, and from whom. */
  readonly requests?: Pick<Ledger, 'getRequest' | 'listDecisions' | 'listVotes'>;
  /** Hostnames accepted in `Host` and `Origin` (default: the loopback names). */
  readonly allowedHostnames?: readonly string[];
  /** Failures of the audit log (reporting only; the request answers 500). */
  readonly onError?: (error: Error) => void;
  /** How often `/api/events` reads the audit log for new rounds while someone listens, ms (default 1000). */
  readonly pollMs?: number;
  /** The clock (ms since epoch) that decides whether a state or deadline has passed. Default `Date.now`. */
  readonly now?: () => number;
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
const failure = (status: number, message: string) => json(status, { error: message });
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
  const allowed = [...(options.allowedHostnames ?? loopbackHostnames('127.0.0.1'))];
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

  async function route(url: URL): Promise<Response> {
    const path = url.pathname;
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
      const request = await options.requests?.getRequest(fid);
      const decisions = request ? await options.requests!.listDecisions({ id: fid }) : [];
      const votes = request && options.requests?.listVotes ? await options.requests.listVotes(fid) : [];
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

  return {
    close: () => events.close(),
    async fetch(request) {
      const rejected = hostHeaderValidationResponse(request, allowed) ?? originValidationResponse(request, allowed);
      if (rejected) return failure(403, 'forbidden: this page answers on loopback names only');
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return new Response(JSON.stringify({ error: 'method not allowed' }), {
          status: 405,
          headers: { ...SECURITY_HEADERS, allow: 'GET, HEAD', 'content-type': 'application/json; charset=utf-8' },
        });
      }
      try {
        return await route(new URL(request.url));
      } catch (error) {
        options.onError?.(error as Error);
        return failure(500, `internal error: ${(error as Error).message?.split('\n')[0] ?? 'unknown'}`);
      }
    },
  };
}

/** Options of {@link serveInspect}. */
export interface ServeInspectOptions extends Omit<InspectHandlerOptions, 'allowedHostnames'> {
  /** Loopback address to bind (default `127.0.0.1`); anything else is refused. */
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

/**
 * Serve the inspect page on loopback.
 *
 * @throws Error when `host` is not a loopback address.
 */
export async function serveInspect(options: ServeInspectOptions): Promise<InspectServing> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(host)) throw new Error(`baton inspect serves loopback only, not ${host}`);
  const handler = createInspectHandler({ ...options, allowedHostnames: loopbackHostnames(host) });
  const bare = host.replace(/^\[|\]$/g, '');
  const origin = `http://${bare.includes(':') ? `[${bare}]` : bare}`;
  const server = createServer(async (req, res) => {
    try {
      const response = await handler.fetch(toFetchRequest(req, `${origin}:${port()}`));
      const streaming = response.headers.get('content-type')?.startsWith('text/event-stream') && response.body;
      if (streaming && req.method === 'HEAD') {
        await response.body!.cancel();
        res.writeHead(response.status, Object.fromEntries(response.headers));
        res.end();
        return;
      }
      if (streaming) {
        // A live stream: written as it comes, ended when either side closes.
        res.writeHead(response.status, Object.fromEntries(response.headers));
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
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(body);
    } catch (error) {
      options.onError?.(error as Error);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end();
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
