/**
 * `baton call --follow`: a call that follows an MCP Task (the
 * `io.modelcontextprotocol/tasks` extension) to its end instead of stopping at
 * the waiting result. The call goes through the official ext-tasks requester
 * (`createTaskSessionFromClient`), which declares the extension and, against
 * a 2026-07-28 server, needs a raw dispatch (the SDK client's codec does not
 * accept `resultType: "task"`): one JSON-RPC request per POST with the
 * standard headers, answered as JSON or SSE. While the task runs a status line
 * says what it waits for and how long it has waited; its questions are asked
 * through the same prompts as MRTR rounds; Ctrl-C detaches (the task goes on
 * on the server) and prints how to look at it again. Over `--stdio`, or
 * against a server without the extension, the call is an ordinary one.
 */
import type { CallToolResult, Client } from '@modelcontextprotocol/client';
import {
  type ApplicationInputRequest,
  createTaskSessionFromClient,
  type JsonRpcResponse,
  type RawClientDispatch,
  resultFromTaskOutcome,
  type TaskView,
} from '@modelcontextprotocol/ext-tasks/client';

/** The protocol revision a followed call frames its requests with. */
const PROTOCOL = '2026-07-28';

/** How the call answers what the server asks (the prompts of `call.ts`). */
export interface InputAnswers {
  elicitation(params: unknown): Promise<unknown>;
  sampling(params: unknown): Promise<unknown>;
  roots(): Promise<unknown>;
}

/** What following needs from the call. */
export interface FollowOptions {
  readonly client: Client;
  readonly url: URL;
  readonly token: string | undefined;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly clientInfo: { readonly name: string; readonly version: string };
  readonly capabilities: Record<string, unknown>;
  readonly answers: InputAnswers;
  /** One line of the conversation (stderr). */
  readonly say: (line: string) => void;
  /** The command that looks at request `id` again. */
  readonly lookAgain: (id: string) => string;
  /**
   * Called in the same turn as Ctrl-C starts to mean "stop following" (once the task exists), so
   * the caller removes its own SIGINT handler then and not earlier: no moment is left in which
   * Ctrl-C has no handler and kills the process without a word.
   */
  readonly onFollowing: () => void;
}

let nextId = 1;

/** One JSON-RPC request per POST to `url`, answered as JSON or as an SSE stream. */
function httpDispatch(url: URL, token: string | undefined): RawClientDispatch {
  return async (request, options) => {
    const message = { jsonrpc: '2.0', id: `baton-call-${nextId++}`, ...(request as object) } as unknown as {
      id: string;
      method: string;
      params?: Record<string, unknown>;
    };
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL,
      'mcp-method': message.method,
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(options?.context?.headers ?? {}),
    };
    const name = message.params?.name;
    if (typeof name === 'string' && message.method === 'tools/call') headers['mcp-name'] = name;
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify(message),
      ...(options?.signal ? { signal: options.signal } : {}),
    });
    const text = await response.text();
    const sse = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    const payloads = sse
      ? text
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => line.slice(5).trim())
      : [text];
    for (const payload of payloads) {
      let parsed: { id?: unknown; result?: unknown; error?: { code: number; message: string; data?: unknown } };
      try {
        parsed = JSON.parse(payload);
      } catch {
        continue;
      }
      if (parsed.id !== message.id) continue;
      return (
        parsed.error ? { kind: 'error', error: parsed.error } : { kind: 'result', result: parsed.result }
      ) as JsonRpcResponse;
    }
    throw new Error(`the server gave no JSON-RPC answer to ${message.method} (HTTP ${response.status})`);
  };
}

/** `1 h 2 min`, `3 min 5 s`, `12 s`. */
export function waited(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** The status line of a task: what it waits for and how long it has waited. */
export function statusLine(task: Pick<TaskView, 'taskId' | 'status' | 'statusMessage'>, since: number): string {
  const what = task.statusMessage ?? task.status;
  return `-- task ${task.taskId}: ${what} (waited ${waited(Date.now() - since)})`;
}

/** Call the tool following its task; resolves with its result (`undefined`: detached by Ctrl-C, exit 130). */
export async function followTask(options: FollowOptions): Promise<CallToolResult | undefined> {
  const { answers, say } = options;
  const session = createTaskSessionFromClient(options.client, {
    endpointId: `baton-call:${options.url.href}`,
    rawDispatch: httpDispatch(options.url, options.token),
    v2RequestFraming: {
      protocolVersion: PROTOCOL,
      clientInfo: options.clientInfo,
      clientCapabilities: options.capabilities as never,
    },
    onInputRequest: (async (request: ApplicationInputRequest) => {
      if (request.kind === 'elicitation') return answers.elicitation(request.params);
      if (request.kind === 'sampling') return answers.sampling(request.params);
      return answers.roots();
    }) as never,
  });
  try {
    const execution = await session.callTool(options.tool, options.args as never);
    if (execution.kind !== 'task') {
      return resultFromTaskOutcome((await execution.settle()).outcome) as CallToolResult;
    }
    const id = execution.handle.taskId;
    const since = Date.now();
    say(`-- task ${id}: following it on the server (Ctrl-C stops following; the task goes on) --`);
    let last = '';
    const show = (task: TaskView) => {
      const line = statusLine(task, since);
      const key = `${task.status}:${task.statusMessage ?? ''}`;
      if (process.stderr.isTTY) process.stderr.write(`\r\u001b[2K${line}`);
      else if (key !== last) say(line);
      last = key;
    };
    let current: TaskView | undefined;
    const ticker = process.stderr.isTTY ? setInterval(() => current && show(current), 1000) : undefined;
    const detached = new Promise<undefined>((resolve) => {
      options.onFollowing();
      process.once('SIGINT', () => {
        // Detached, the execution's result settles (rejected, locally): only then may the session
        // close, since closing an unsettled execution cancels its task.
        void execution
          .detach()
          .then(() => execution.result().catch(() => {}))
          .finally(() => {
            if (process.stderr.isTTY) process.stderr.write('\n');
            say(`baton: stopped following task ${id}; it goes on on the server. Look again with:`);
            say(`  ${options.lookAgain(id)}`);
            resolve(undefined);
          });
      });
    });
    try {
      const settled = execution.settle({
        close: false,
        onEvent: (event) => {
          if (event.type !== 'task') return;
          current = event.task;
          show(event.task);
        },
      });
      const ended = await Promise.race([settled, detached]);
      if (!ended) return undefined;
      if (process.stderr.isTTY) process.stderr.write('\n');
      return resultFromTaskOutcome(ended.outcome) as CallToolResult;
    } finally {
      if (ticker) clearInterval(ticker);
    }
  } finally {
    await session.close().catch(() => {});
  }
}
