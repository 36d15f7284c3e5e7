/**
 * `tools/call` of a served flow answered without building an `McpServer`.
 * The SDK's stateless entry (`createMcpHandler`) makes a server per HTTP
 * request, registers the tool on it, connects a one-exchange transport and
 * validates the message again at every layer: most of what a small round
 * costs, none of it protocol. This lane answers the commonest request
 * itself, the same bytes the SDK would send, and hands everything else to
 * the SDK untouched. It serves a request only when it can tell, before
 * anything runs, that the SDK would dispatch it to the flow's tool callback:
 * one 2026-07-28 JSON-RPC request (the SDK's own `classifyInboundRequest`
 * says `modern` of its envelope; the verdict is kept per envelope) for a flow tool, its `MCP-Protocol-Version`, `MCP-Method`
 * and `MCP-Name` headers equal to the body's, params and `_meta` holding
 * only the envelope and the retry fields, answers and state of the shapes
 * the SDK passes through, arguments the tool's schema accepts, no progress
 * token, no tasks extension, and with `requireScopes` a token holding
 * `baton:call`. Any other request, an invalid one included, gets the SDK's
 * answer. The round is the one the registered tool plays (`flowRound.ts`),
 * and the result is encoded as the SDK's 2026-07-28 codec does it (the text
 * fallback of a non-object `structuredContent`, `resultType`, the server's
 * identity in `_meta`); `test/adapters.direct-calls.test.ts` compares the two
 * byte for byte.
 *
 * Wire (answered): `{"result":{…,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{…}}},"jsonrpc":"2.0","id":1}`,
 * HTTP 200; a round's JSON-RPC error: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":…,"data":…}}`,
 * HTTP 200 (400 for -32021).
 */
import {
  type AuthInfo,
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  classifyInboundRequest,
  type Implementation,
  isInputRequiredResult,
  isJsonContentType,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  SERVER_INFO_META_KEY,
  type ServerContext,
  type StandardSchemaWithJSON,
} from '@modelcontextprotocol/server';
import { BATON_SCOPES } from '../auth/oauthClaims.js';
import { NO_CONNECTION } from './callContext.js';
import { callFlowTool, type FlowToolTasks } from './flowRound.js';
import { type PreparedFlows, prepareFlows } from './registerFlows.js';
import { type FlowServerOptions, serverInfoOf } from './serverFactory.js';
import { declaresTasks } from './tasks/wire.js';

/** What the lane reads of a request's head (`http/nodeRequest.ts`'s `RequestHead` is one). */
export interface DirectCallHead {
  readonly method: string;
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal;
  /** A header's value, or `null`. */
  header(name: string): string | null;
  /** The request as a Fetch `Request` (built when first asked: a principal function may read `ctx.http.req`). */
  request(): Request;
}

/** A `tools/call` request whose body was read and parsed. */
export interface DirectToolCall {
  /** The request's head; its body is already read. */
  readonly head: DirectCallHead;
  /** The parsed JSON body. */
  readonly body: unknown;
  /** The verified bearer token, when the server has a verifier. */
  readonly authInfo?: AuthInfo;
}

/** An answer of the lane: the HTTP status and the JSON-RPC response, serialized (`application/json`). */
export interface DirectAnswer {
  readonly status: number;
  readonly body: string;
}

/** The lane: the answer to a request it serves, `undefined` for one the SDK must serve. */
export type DirectToolCalls = (call: DirectToolCall) => Promise<DirectAnswer> | undefined;

/** The only protocol revision the lane serves (2025-era traffic always goes to the SDK). */
const REVISION = '2026-07-28';
const PARAMS = new Set(['name', 'arguments', '_meta', 'inputResponses', 'requestState']);
const ENVELOPE = new Set([PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY]);
/** W3C trace context in `_meta` (the round's parent: `observability/traceContext.ts`), handed on as the request's `_meta`. */
const TRACE_CONTEXT = new Set(['traceparent', 'tracestate', 'baggage']);

/** How many distinct `_meta` envelopes the lane remembers the SDK's verdict on. */
const ENVELOPES_KEPT = 256;

/** A flow tool the lane may serve, prepared once. */
interface DirectTool {
  readonly flow: PreparedFlows['flows'][number]['flow'];
  readonly inputSchema: StandardSchemaWithJSON;
  readonly tasks: FlowToolTasks;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The lane for the flows `createFlowServerFactory(options)` serves, with the same options.
 *
 * @example
 * ```ts
 * import { createDirectToolCalls, createFlowServerFactory, serveHttp } from '@baton/adapters';
 *
 * const options = { runner };
 * await serveHttp({ factory: createFlowServerFactory(options), direct: createDirectToolCalls(options), host: '127.0.0.1', port: 8080 });
 * ```
 */
export function createDirectToolCalls(options: FlowServerOptions): DirectToolCalls {
  const prepared = prepareFlows(options);
  const info = serverInfoOf(options);
  const tools = new Map<string, DirectTool>();
  for (const { flow, tool, task, taskRequired } of prepared.flows) {
    if (!tool) continue;
    // A schema declaring `x-mcp-header` parameters makes the SDK check headers against arguments.
    const json = tool.inputSchema['~standard'].jsonSchema.input({ target: 'draft-2020-12' });
    if (JSON.stringify(json).includes('x-mcp-header')) continue;
    tools.set(flow.name, {
      flow,
      inputSchema: tool.inputSchema,
      tasks: { offered: task && prepared.tasks, required: taskRequired },
    });
  }
  const requireScopes = options.requireScopes === true;
  /**
   * The SDK's classification of a request of this shape depends only on its `_meta` envelope (the
   * headers and method being fixed here), and a client sends the same envelope every time: the
   * verdict is kept by the envelope's JSON (bounded; cleared when full).
   */
  const envelopes = new Map<string, boolean>();
  const modern = (meta: Record<string, unknown>): boolean => {
    const key = JSON.stringify(meta);
    let verdict = envelopes.get(key);
    if (verdict === undefined) {
      const classified = classifyInboundRequest({
        httpMethod: 'POST',
        protocolVersionHeader: REVISION,
        mcpMethodHeader: 'tools/call',
        body: { jsonrpc: '2.0', id: 0, method: 'tools/call', params: { _meta: meta } },
      });
      verdict = classified.kind === 'modern' && classified.classification.revision === REVISION;
      if (envelopes.size >= ENVELOPES_KEPT) envelopes.clear();
      envelopes.set(key, verdict);
    }
    return verdict;
  };

  return ({ head, body, authInfo }) => {
    if (!isPlainObject(body) || body.jsonrpc !== '2.0' || body.method !== 'tools/call') return undefined;
    const { id, params } = body;
    if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
    if (Object.keys(body).length !== 4 || !isPlainObject(params)) return undefined;
    for (const key in params) if (!PARAMS.has(key)) return undefined;
    const tool = typeof params.name === 'string' ? tools.get(params.name) : undefined;
    if (!tool || tool.tasks.required) return undefined;
    if (requireScopes && !authInfo?.scopes?.includes(BATON_SCOPES.call)) return undefined;
    if (head.method !== 'POST' || !isJsonContentType(head.header('content-type'))) return undefined;
    const version = head.header('mcp-protocol-version');
    if (version !== REVISION || head.header('mcp-method') !== 'tools/call' || head.header('mcp-name') !== params.name) {
      return undefined;
    }
    const given = params._meta;
    if (!isPlainObject(given)) return undefined;
    let traceContext: Record<string, unknown> | undefined;
    for (const key in given) {
      if (TRACE_CONTEXT.has(key)) {
        traceContext ??= {};
        traceContext[key] = given[key];
      } else if (!ENVELOPE.has(key)) return undefined;
    }
    // The envelope alone (what the SDK classifies, and the verdict's key).
    const meta = traceContext ? Object.fromEntries(Object.entries(given).filter(([key]) => ENVELOPE.has(key))) : given;
    const { arguments: args, inputResponses, requestState } = params;
    if (args !== undefined && !isPlainObject(args)) return undefined;
    if (requestState !== undefined && typeof requestState !== 'string') return undefined;
    if (inputResponses !== undefined) {
      if (!isPlainObject(inputResponses)) return undefined;
      for (const key in inputResponses) {
        const entry = inputResponses[key];
        if (!isPlainObject(entry) || 'method' in entry || 'result' in entry) return undefined;
      }
    }
    const capabilities = meta[CLIENT_CAPABILITIES_META_KEY] as Parameters<typeof declaresTasks>[0];
    if (declaresTasks(capabilities)) return undefined;
    if (!modern(meta)) return undefined;
    const validated = tool.inputSchema['~standard'].validate(args ?? {});
    if (validated instanceof Promise || validated.issues) return undefined;

    const ctx = {
      sessionId: undefined,
      mcpReq: {
        id,
        method: 'tools/call',
        _meta: traceContext,
        envelope: meta,
        ...(inputResponses !== undefined ? { inputResponses } : {}),
        requestState: () => requestState,
        signal: head.signal,
        send: () => Promise.reject(new Error('A 2026-07-28 request cannot send requests to its client')),
        notify: () => Promise.resolve(),
        log: () => Promise.resolve(),
        elicitInput: () => Promise.reject(new Error('A 2026-07-28 request answers input_required instead')),
        requestSampling: () => Promise.reject(new Error('A 2026-07-28 request answers input_required instead')),
      },
      http: {
        ...(authInfo ? { authInfo } : {}),
        get req() {
          return head.request();
        },
      },
    } as unknown as ServerContext;
    return answer(id as string | number, info, () =>
      callFlowTool(prepared, NO_CONNECTION, tool.flow, tool.tasks, validated.value, ctx),
    );
  };
}

/** Run the call and encode its outcome as the SDK's 2026-07-28 codec and per-request transport do. */
async function answer(
  id: string | number,
  info: Implementation,
  call: () => Promise<CallToolResult>,
): Promise<DirectAnswer> {
  let result: CallToolResult;
  try {
    result = await call();
  } catch (error) {
    if (!(error instanceof ProtocolError)) {
      // McpServer turns any other error of a tool callback into an error result.
      result = {
        content: [{ type: 'text', text: error instanceof Error ? error.message : String(error) }],
        isError: true,
      };
    } else {
      const code = error.code === -32002 ? ProtocolErrorCode.InvalidParams : error.code;
      const response = {
        jsonrpc: '2.0',
        id,
        error: {
          code,
          message: error.message ?? 'Internal error',
          ...(error.data !== undefined ? { data: error.data } : {}),
        },
      };
      const status = code === ProtocolErrorCode.MissingRequiredClientCapability ? 400 : 200;
      return { status, body: JSON.stringify(response) };
    }
  }
  return { status: 200, body: JSON.stringify({ result: encode(result, info), jsonrpc: '2.0', id }) };
}

/**
 * A tool result as the SDK puts it on the 2026-07-28 wire: a non-object `structuredContent` gets
 * its JSON as a text block when the result has none (SEP-2106), `resultType` defaults to
 * `complete`, and `_meta` gains the server's identity unless it names one.
 */
function encode(result: CallToolResult, info: Implementation): Record<string, unknown> {
  let encoded: Record<string, unknown> = result;
  if (!isInputRequiredResult(result)) {
    const structured = result.structuredContent as unknown;
    if (structured !== undefined && !isPlainObject(structured) && !result.content?.some((c) => c.type === 'text')) {
      encoded = {
        ...encoded,
        content: [...(result.content ?? []), { type: 'text', text: JSON.stringify(structured) }],
      };
    }
  }
  if (encoded.resultType === undefined) encoded = { ...encoded, resultType: 'complete' };
  const meta = encoded._meta;
  if (meta === undefined) return { ...encoded, _meta: { [SERVER_INFO_META_KEY]: info } };
  if (!isPlainObject(meta) || meta[SERVER_INFO_META_KEY] !== undefined) return encoded;
  return { ...encoded, _meta: { ...meta, [SERVER_INFO_META_KEY]: info } };
}
