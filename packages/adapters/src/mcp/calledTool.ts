/**
 * The tool a request calls, known before the SDK builds the request's server.
 * `createMcpHandler` builds one `McpServer` per HTTP request and gives the
 * factory only the `Request`, whose body it reads itself; Baton's HTTP handler
 * parses bodies before the SDK does, so it notes here which tool a
 * `tools/call` names, and the flow server factory registers that tool alone
 * instead of every flow, prompt, resource and decision tool (registering them
 * all was most of a small round's server set-up, and grew with the number of
 * flows served). A request without a note (any other method, another HTTP
 * stack, stdio) gets everything, as before. The note is keyed by the
 * `Request` object and goes with it.
 */

const notes = new WeakMap<Request, string>();

/** Note the tool `body` calls when it is one JSON-RPC `tools/call` request with a string name. */
export function noteCalledTool(request: Request, body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const { method, params } = body as { readonly method?: unknown; readonly params?: unknown };
  if (method !== 'tools/call' || typeof params !== 'object' || params === null) return;
  const { name } = params as { readonly name?: unknown };
  if (typeof name === 'string') notes.set(request, name);
}

/** The tool noted for `request` by {@link noteCalledTool}, if any. */
export function calledTool(request: Request | undefined): string | undefined {
  return request === undefined ? undefined : notes.get(request);
}
