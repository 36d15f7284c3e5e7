/**
 * Helpers for the tasks end-to-end tests: the official ext-tasks requester
 * (`createTaskSessionFromClient`) on an official SDK client over Streamable
 * HTTP, with the raw dispatch its 2026-07-28 task traffic needs (the SDK
 * client's codec rejects `resultType: "task"`): one JSON-RPC request per POST
 * with the standard headers (`MCP-Protocol-Version`, `Mcp-Method`, and the
 * `Mcp-Name` the requester sets on `tasks/*`), answered as JSON or as an SSE
 * stream. `rawRpc` is the same dispatch for the tests' own task requests.
 * `stdioTaskSession` is the requester on an SDK client over stdio
 * (`StdioClientTransport` spawning `baton serve --stdio`), whose raw dispatch
 * writes its own JSON-RPC requests on that same stdio and takes their answers
 * before the client sees them; it records the `notifications/tasks` the server
 * sends, which the client (and the requester's session) receive as well.
 */
import {
  Client,
  type ClientCapabilities,
  type JSONRPCMessage,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  type ApplicationInputRequest,
  createTaskSessionFromClient,
  type JsonRpcResponse,
  type RawClientDispatch,
  type TaskEnabledSession,
} from '@modelcontextprotocol/ext-tasks/client';

export const PROTOCOL = '2026-07-28';
const CLIENT_INFO = { name: 'baton-tasks-e2e', version: '1.0.0' };
const CAPABILITIES = { elicitation: { form: {} } } satisfies ClientCapabilities;

let nextId = 1;

/** A raw JSON-RPC dispatch to `url` as the holder of `token`. */
export function rawRpc(url: URL, token: string): RawClientDispatch {
  return async (request, options) => {
    const message = { jsonrpc: '2.0', id: nextId++, ...(request as Record<string, unknown>) } as unknown as {
      id: number;
      method: string;
      params?: Record<string, unknown>;
    };
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      'mcp-protocol-version': PROTOCOL,
      'mcp-method': message.method,
      ...(options?.context?.headers ?? {}),
    };
    const name = message.params?.name ?? message.params?.taskId;
    if (typeof name === 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'mcp-name')) {
      headers['mcp-name'] = name;
    }
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify(message),
      ...(options?.signal ? { signal: options.signal } : {}),
    });
    const text = await response.text();
    const payloads = (response.headers.get('content-type') ?? '').includes('text/event-stream')
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
      if (parsed.error) return { kind: 'error', error: parsed.error } as JsonRpcResponse;
      return { kind: 'result', result: parsed.result } as JsonRpcResponse;
    }
    throw new Error(`no JSON-RPC answer to ${message.method} (HTTP ${response.status}): ${text.slice(0, 300)}`);
  };
}

/**
 * One task request as the requester frames it (the 2026-07-28 envelope in `_meta`, the tasks
 * extension declared), sent by {@link rawRpc}.
 */
export function taskRequest(url: URL, token: string) {
  const dispatch = rawRpc(url, token);
  return (method: string, params: Record<string, unknown>) =>
    dispatch({
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': PROTOCOL,
          'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
          'io.modelcontextprotocol/clientCapabilities': {
            ...CAPABILITIES,
            extensions: { 'io.modelcontextprotocol/tasks': {} },
          },
        },
      },
    });
}

/**
 * One JSON-RPC request on the 2026-07-28 wire as `token`'s holder, with the HTTP status: the
 * envelope in `_meta` declares the tasks extension only when `tasks` is set; `headers` replace
 * the standard ones (`Mcp-Method`, `Mcp-Name` = `params.name` or `params.taskId`).
 */
export async function postRpc(
  url: URL,
  token: string,
  method: string,
  params: Record<string, unknown>,
  options: { tasks: boolean; headers?: Record<string, string> },
): Promise<{
  status: number;
  answer: { result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };
}> {
  const name = params.name ?? params.taskId;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
    'mcp-protocol-version': PROTOCOL,
    'mcp-method': method,
    ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    ...options.headers,
  };
  const capabilities = options.tasks
    ? { ...CAPABILITIES, extensions: { 'io.modelcontextprotocol/tasks': {} } }
    : CAPABILITIES;
  const id = nextId++;
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': PROTOCOL,
          'io.modelcontextprotocol/clientInfo': CLIENT_INFO,
          'io.modelcontextprotocol/clientCapabilities': capabilities,
        },
      },
    }),
  });
  const text = await response.text();
  const payload = (response.headers.get('content-type') ?? '').includes('text/event-stream')
    ? text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => JSON.parse(line.slice(5).trim()) as { id?: unknown })
        .find((message) => message.id === id)
    : JSON.parse(text);
  return { status: response.status, answer: payload as never };
}

/** Answers the session gives to `elicitation/create` requests, by the order they come. */
export type Elicit = (request: Extract<ApplicationInputRequest, { kind: 'elicitation' }>) => {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, string | number | boolean | string[]>;
};

/** A connected SDK client and its ext-tasks session, as the holder of `token`. */
export async function taskSession(
  url: URL,
  token: string,
  elicit?: Elicit,
): Promise<{ client: Client; session: TaskEnabledSession; asked: string[] }> {
  const asked: string[] = [];
  const client = new Client(CLIENT_INFO, { capabilities: CAPABILITIES, versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  const session = createTaskSessionFromClient(client, {
    endpointId: `baton-e2e-${url.port}`,
    rawDispatch: rawRpc(url, token),
    v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo: CLIENT_INFO, clientCapabilities: CAPABILITIES },
    onInputRequest: (async (request: ApplicationInputRequest) => {
      if (request.kind !== 'elicitation') throw new Error(`unexpected ${request.kind}`);
      asked.push(String((request.params as { message?: string }).message));
      return elicit ? elicit(request as never) : { action: 'cancel' };
    }) as never,
  });
  return { client, session, asked };
}

/**
 * The requester's session on an SDK client over stdio, to a `baton serve --stdio` it spawns with
 * `args` (the CLI's arguments) and `env`; `notifications` fills with the `notifications/tasks`
 * messages the server sends.
 */
export async function stdioTaskSession(
  args: readonly string[],
  env: Record<string, string>,
  spawnArgs: (args: string[]) => string[],
  cwd: string,
): Promise<{ client: Client; session: TaskEnabledSession; notifications: Record<string, any>[] }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: spawnArgs([...args]),
    cwd,
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'ignore',
  });
  const client = new Client(CLIENT_INFO, { capabilities: CAPABILITIES, versionNegotiation: { mode: 'auto' } });
  await client.connect(transport, { timeout: 30_000 });
  const notifications: Record<string, any>[] = [];
  const pending = new Map<string, (message: Record<string, any>) => void>();
  // The client's own handler stays in place for everything but the raw dispatch's answers.
  const forward = transport.onmessage;
  transport.onmessage = ((message: Record<string, any>, extra?: unknown) => {
    const answer = typeof message.id === 'string' ? pending.get(message.id) : undefined;
    if (answer && !('method' in message)) {
      pending.delete(message.id);
      answer(message);
      return;
    }
    if (message.method === 'notifications/tasks') notifications.push(message);
    (forward as ((m: unknown, e?: unknown) => void) | undefined)?.(message, extra);
  }) as typeof transport.onmessage;
  const rawDispatch: RawClientDispatch = async (request) => {
    const id = `raw-${nextId++}`;
    const answered = new Promise<Record<string, any>>((resolve) => pending.set(id, resolve));
    await transport.send({ jsonrpc: '2.0', id, ...(request as Record<string, unknown>) } as JSONRPCMessage);
    const message = await answered;
    if (message.error) return { kind: 'error', error: message.error } as JsonRpcResponse;
    return { kind: 'result', result: message.result } as JsonRpcResponse;
  };
  const session = createTaskSessionFromClient(client, {
    endpointId: 'baton-e2e-stdio',
    rawDispatch,
    v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo: CLIENT_INFO, clientCapabilities: CAPABILITIES },
  });
  return { client, session, notifications };
}
