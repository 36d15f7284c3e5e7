/**
 * `subscriptions/listen` for tasks (SEP-2575 with the tasks extension's
 * SEP-2663 `taskIds` filter) on stateless Streamable HTTP. A 2026-07-28 client
 * names the tasks it follows; the stream acknowledges those it may read (its
 * own principal's: another principal's task and an unknown id are dropped
 * alike, no oracle), sends each one's current state, then `notifications/tasks`
 * (the detailed task, as `tasks/get` answers) at every change of status or of
 * its last update, each stamped with the subscription id. The state comes from
 * the ledger (`../tasks/taskWatch.ts`: `runner.tasks.get` with the listener's own
 * context, every `pollIntervalMs` of the task), so a listener on one instance sees a task
 * moved by a call on any other, a decision, a timer the scheduler fired or an
 * operator's `baton runs cancel`. The stream ends (with the listen request's
 * result) when every task it follows has ended, or when the client goes away.
 * A client that did not declare the tasks extension gets `-32021` with HTTP 400.
 * Filters without `taskIds` (list changes) stay with the SDK's own listen router.
 */
import type { Runner, TaskCaller, TaskSnapshot } from '@baton/engine';
import {
  type AuthInfo,
  CLIENT_CAPABILITIES_META_KEY,
  type ClientCapabilities,
  PROTOCOL_VERSION_META_KEY,
  SERVER_INFO_META_KEY,
  SUBSCRIPTION_ID_META_KEY,
} from '@modelcontextprotocol/server';
import { ANONYMOUS_PRINCIPAL, principalOfAuthInfo, rolesOfAuthInfo, toInputCapabilities } from '../callContext.js';
import { toProtocolError } from '../playRound.js';
import { TASK_NOTIFICATION_METHOD } from '../tasks/notifications.js';
import { createTaskWatcher, taskEnded } from '../tasks/taskWatch.js';
import { declaresTasks, detailedTask, TASKS_EXTENSION_ID } from '../tasks/wire.js';

/** The revision whose `subscriptions/listen` this serves. */
const REVISION = '2026-07-28';
/** At most this many task ids in one filter (a larger filter is left to the SDK, which refuses it). */
export const MAX_LISTENED_TASKS = 100;
/** SSE comment sent this often so proxies keep an idle stream open. */
const KEEP_ALIVE_MS = 15_000;
/** Task listens open at once in this process, at most (the SDK's listen router caps its own alike). */
export const MAX_TASK_LISTENS = 1024;

/** Options of {@link createTaskListen}. */
export interface TaskListenOptions {
  /** The runner whose ledger holds the tasks (or a promise of it, while the server starts). */
  readonly runner: () => Runner | Promise<Runner>;
  /** The listener's principal; default the verified token's, else `anonymous` (as `tools/call`'s). */
  readonly principal?: (authInfo: AuthInfo | undefined) => string;
  /** Errors that never reach the client (a ledger outage while following). */
  readonly onError?: (error: unknown) => void;
  /** `_meta['io.modelcontextprotocol/serverInfo']` of the stream's final result. */
  readonly serverInfo?: { readonly name: string; readonly version: string };
}

/**
 * Answers a `subscriptions/listen` request that names `taskIds`, or returns `undefined` for every
 * other request (the SDK answers those). `body` is the parsed JSON-RPC body.
 */
export type TaskListenRoute = (
  request: Request,
  body: unknown,
  authInfo: AuthInfo | undefined,
) => Promise<Response> | undefined;

/** A well-formed `subscriptions/listen` naming tasks: its id, task ids and declared capabilities. */
interface TaskListen {
  readonly id: string | number;
  readonly taskIds: readonly string[];
  readonly capabilities: ClientCapabilities;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The request as a task listen, when it is a well-formed one on the 2026-07-28 wire. */
function parseTaskListen(request: Request, body: unknown): TaskListen | undefined {
  if (!isObject(body) || body.jsonrpc !== '2.0' || body.method !== 'subscriptions/listen') return undefined;
  if (typeof body.id !== 'string' && typeof body.id !== 'number') return undefined;
  if (request.headers.get('mcp-method')?.trim() !== 'subscriptions/listen') return undefined;
  const params = body.params;
  if (!isObject(params) || !isObject(params.notifications) || !isObject(params._meta)) return undefined;
  const taskIds = params.notifications.taskIds;
  if (!Array.isArray(taskIds) || taskIds.length === 0 || taskIds.length > MAX_LISTENED_TASKS) return undefined;
  if (!taskIds.every((id) => typeof id === 'string' && id.length > 0 && id.length <= 256)) return undefined;
  const meta = params._meta;
  if (meta[PROTOCOL_VERSION_META_KEY] !== REVISION) return undefined;
  if (request.headers.get('mcp-protocol-version')?.trim() !== REVISION) return undefined;
  const capabilities = meta[CLIENT_CAPABILITIES_META_KEY];
  if (!isObject(capabilities)) return undefined;
  return { id: body.id, taskIds: [...new Set(taskIds as string[])], capabilities: capabilities as ClientCapabilities };
}

/**
 * The `subscriptions/listen` route for tasks (see the module comment), for `serveHttp`'s `listen`.
 *
 * Wire, in order on the SSE stream:
 * - `{ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [own ids] },
 *   _meta: { 'io.modelcontextprotocol/subscriptionId': <request id> } } }`
 * - `{ method: 'notifications/tasks', params: { taskId, status, …, _meta: { …subscriptionId } } }` per state
 * - `{ id: <request id>, result: { resultType: 'complete', _meta: { …subscriptionId } } }` once all ended
 */
export function createTaskListen(options: TaskListenOptions): TaskListenRoute {
  const onError = options.onError ?? (() => {});
  const principalOf =
    options.principal ?? ((auth: AuthInfo | undefined) => (auth ? principalOfAuthInfo(auth) : ANONYMOUS_PRINCIPAL));
  const open = new Set<object>();
  return (request, body, authInfo) => {
    const listen = parseTaskListen(request, body);
    if (!listen) return undefined;
    if (!declaresTasks(listen.capabilities)) {
      return Promise.resolve(
        rpcError(
          listen.id,
          {
            code: -32021,
            message: `Following tasks needs the ${TASKS_EXTENSION_ID} extension in the request's client capabilities`,
            data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } },
          },
          400,
        ),
      );
    }
    if (open.size >= MAX_TASK_LISTENS) {
      onError(new Error(`subscriptions/listen refused: ${MAX_TASK_LISTENS} task listens already open`));
      return Promise.resolve(rpcError(listen.id, { code: -32603, message: 'Subscription limit reached' }, 503));
    }
    const context: TaskCaller = {
      principal: principalOf(authInfo),
      roles: authInfo ? rolesOfAuthInfo(authInfo) : [],
      capabilities: toInputCapabilities(listen.capabilities),
    };
    const token = {};
    open.add(token);
    return follow(options, onError, request.signal, listen, context, () => open.delete(token)).catch((error) => {
      open.delete(token);
      // The ledger unreachable while reading the tasks: the retryable -32000 the tasks methods answer.
      const { code, message, data } = toProtocolError(error, onError);
      return rpcError(
        listen.id,
        { code, message, ...(data === undefined ? {} : { data }) },
        code === -32000 ? 503 : 500,
      );
    });
  };
}

/** A JSON-RPC error answer to the listen request. */
function rpcError(id: string | number, error: { code: number; message: string; data?: unknown }, status: number) {
  return Response.json({ jsonrpc: '2.0', id, error }, { status });
}

async function follow(
  options: TaskListenOptions,
  onError: (error: unknown) => void,
  signal: AbortSignal,
  listen: TaskListen,
  context: TaskCaller,
  onClosed: () => void,
): Promise<Response> {
  const runner = await options.runner();
  // Another principal's task reads as unknown: dropped from the acknowledgement, like a made-up id.
  const found = await Promise.all(listen.taskIds.map((id) => runner.tasks.get({ id, context })));
  const tasks = found.filter((task): task is TaskSnapshot => task !== undefined);
  const stamp = { [SUBSCRIPTION_ID_META_KEY]: listen.id };
  const encoder = new TextEncoder();
  const watcher = createTaskWatcher(runner, onError);
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  let live = tasks.filter((task) => !taskEnded(task)).length;

  const frame = (message: object) => {
    if (closed) return;
    try {
      controller.enqueue(encoder.encode(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...message })}\n\n`));
    } catch (error) {
      onError(error);
    }
  };
  const notify = (task: TaskSnapshot) =>
    frame({
      method: TASK_NOTIFICATION_METHOD,
      params: { ...(detailedTask(task) as unknown as Record<string, unknown>), _meta: stamp },
    });
  const stop = (graceful: boolean) => {
    if (closed) return;
    if (graceful) {
      const serverInfo = options.serverInfo ? { [SERVER_INFO_META_KEY]: options.serverInfo } : {};
      frame({ id: listen.id, result: { resultType: 'complete', _meta: { ...stamp, ...serverInfo } } });
    }
    closed = true;
    onClosed();
    watcher.close();
    if (keepAlive !== undefined) clearInterval(keepAlive);
    signal.removeEventListener('abort', onAbort);
    try {
      controller.close();
    } catch {}
  };
  const onAbort = () => stop(false);

  const settled = () => {
    if (--live === 0) stop(true);
  };

  const stream = new ReadableStream<Uint8Array>({
    start(streamController) {
      controller = streamController;
      frame({
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: { taskIds: tasks.map((task) => task.id) }, _meta: stamp },
      });
      for (const task of tasks) notify(task);
      if (live === 0) {
        stop(true);
        return;
      }
      for (const task of tasks) if (!taskEnded(task)) watcher.watch(task, context, { changed: notify, settled });
      keepAlive = setInterval(() => {
        if (closed) return;
        try {
          controller.enqueue(encoder.encode(': keepalive\n\n'));
        } catch {}
      }, KEEP_ALIVE_MS);
      keepAlive.unref?.();
    },
    cancel() {
      stop(false);
    },
  });
  if (signal.aborted) stop(false);
  else signal.addEventListener('abort', onAbort, { once: true });
  return new Response(stream, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    },
  });
}
