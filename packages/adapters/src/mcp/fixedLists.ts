/**
 * The lists a per-request server advertises as fixed. Over stateless HTTP
 * (`createMcpHandler` builds one server per request) the tools, prompts and
 * resources a `baton serve` offers are those of its flows module, loaded once
 * for the life of the process: nothing can change them while it serves, so no
 * `notifications/*\/list_changed` would ever reach a `subscriptions/listen`
 * stream. The SDK advertises `listChanged: true` on every list it registers;
 * this says `false` instead (`server/discover`), so a client does not wait for
 * notifications that never come and the SDK's listen router does not
 * acknowledge them. A server per connection (stdio) keeps the SDK's `true`:
 * there a registered tool disabled or removed is announced.
 */
import type { McpServer } from '@modelcontextprotocol/server';

/** Advertise `listChanged: false` on each list `server` offers (tools, prompts, resources). */
export function advertiseFixedLists(server: McpServer): void {
  const low = server.server;
  const offered = low.getCapabilities();
  low.registerCapabilities({
    ...(offered.tools ? { tools: { listChanged: false } } : {}),
    ...(offered.prompts ? { prompts: { listChanged: false } } : {}),
    ...(offered.resources ? { resources: { listChanged: false } } : {}),
  });
}
