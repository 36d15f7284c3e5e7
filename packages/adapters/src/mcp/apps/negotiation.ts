/**
 * Negotiation of MCP Apps (the extension `io.modelcontextprotocol/ui` of
 * `@modelcontextprotocol/ext-apps`): a client declares it with
 * `extensions["io.modelcontextprotocol/ui"] = { mimeTypes: ["text/html;profile=mcp-app"] }`
 * (the MIME type is required), and the server acknowledges it with
 * `extensions["io.modelcontextprotocol/ui"] = {}` and offers its UI-enabled tools
 * and `ui://` resources to that client only, as the spec says servers should
 * ("check client capabilities before registering UI-enabled tools"). On the
 * 2026-07-28 wire each request carries its client's capabilities in its own
 * `_meta` envelope and `createMcpHandler` builds one server per HTTP request,
 * from a factory that sees the `Request` but not its body: Baton's HTTP
 * handler parses bodies before the SDK does, and notes here, per `Request`
 * (as `calledTool.ts` notes the tool), whether it declared the extension. A
 * request without a note (stdio, another HTTP stack, any client that did not
 * declare it) gets exactly the tools, resources and results it got before.
 */
import { EXTENSION_ID, RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/server';
import { CLIENT_CAPABILITIES_META_KEY, type ClientCapabilities } from '@modelcontextprotocol/server';

export { EXTENSION_ID as UI_EXTENSION_ID, RESOURCE_MIME_TYPE as APP_MIME_TYPE };

/** Whether declared client capabilities name MCP Apps with the HTML app MIME type. */
export function declaresApps(capabilities: ClientCapabilities | undefined): boolean {
  const extensions = (capabilities as { extensions?: unknown } | undefined)?.extensions;
  if (typeof extensions !== 'object' || extensions === null || !Object.hasOwn(extensions, EXTENSION_ID)) return false;
  const ui = (extensions as Record<string, unknown>)[EXTENSION_ID] as { mimeTypes?: unknown } | null | undefined;
  return (
    typeof ui === 'object' && ui !== null && Array.isArray(ui.mimeTypes) && ui.mimeTypes.includes(RESOURCE_MIME_TYPE)
  );
}

const noted = new WeakSet<Request>();

/**
 * Note that `request` declared MCP Apps when `body` is one JSON-RPC request whose `_meta` envelope
 * (2026-07-28) says so (`params._meta["io.modelcontextprotocol/clientCapabilities"]`).
 */
export function noteAppsRequest(request: Request, body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const params = (body as { readonly params?: unknown }).params;
  if (typeof params !== 'object' || params === null) return;
  const meta = (params as { readonly _meta?: unknown })._meta;
  if (typeof meta !== 'object' || meta === null) return;
  const declared = (meta as Record<string, unknown>)[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;
  if (declaresApps(declared)) noted.add(request);
}

/** Whether {@link noteAppsRequest} noted that `request` declared MCP Apps. */
export function appsRequested(request: Request | undefined): boolean {
  return request !== undefined && noted.has(request);
}
