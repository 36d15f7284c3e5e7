/**
 * Lets a tool callback answer with a JSON-RPC error. `McpServer`'s own
 * `tools/call` handler (SDK 2.4.0) turns every error a tool callback throws,
 * a `ProtocolError` included, into an `isError: true` result, so a rejected
 * requestState could never be the -32602 error the protocol asks for. This
 * module installs, once per server, a thin `tools/call` handler in front of
 * the SDK's: it runs the SDK's handler unchanged (argument validation,
 * enabled/disabled tools, output schemas, the 2025-era legacy shim) and, when
 * a Baton callback marked its error with {@link escapeToolError}, throws that
 * error instead of the result the SDK made of it.
 */
import type { CallToolResult, McpServer, ProtocolError, RequestId, ServerContext } from '@modelcontextprotocol/server';

type StoredHandler = (request: unknown, ctx: ServerContext) => Promise<unknown>;

/** Errors marked to escape, per server, by JSON-RPC request id (stable across the legacy shim's re-entries). */
const pending = new WeakMap<McpServer, Map<RequestId, ProtocolError>>();

/**
 * Make {@link escapeToolError} work for tools of `server`. Idempotent; call it
 * after the first `registerTool` (which installs the SDK's `tools/call` handler).
 */
export function enableToolErrorEscape(server: McpServer): void {
  if (pending.has(server)) return;
  const low = server.server as unknown as { _getRequestHandler(method: string): StoredHandler | undefined };
  const sdkHandler = low._getRequestHandler('tools/call');
  if (typeof sdkHandler !== 'function') throw new Error('Baton: McpServer has no tools/call handler yet');
  const marked = new Map<RequestId, ProtocolError>();
  pending.set(server, marked);
  server.server.removeRequestHandler('tools/call');
  server.server.setRequestHandler('tools/call', async (request, ctx) => {
    const id = ctx.mcpReq.id;
    try {
      const result = await sdkHandler(request, ctx);
      const escaped = marked.get(id);
      if (escaped) throw escaped;
      return result as CallToolResult;
    } finally {
      marked.delete(id);
    }
  });
}

/**
 * Throw `error` from a tool callback so that it reaches the client as a
 * JSON-RPC error rather than an `isError` result.
 */
export function escapeToolError(server: McpServer, ctx: ServerContext, error: ProtocolError): never {
  pending.get(server)?.set(ctx.mcpReq.id, error);
  throw error;
}
