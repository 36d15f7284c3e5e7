/**
 * One `McpServer` per serving unit. Both SDK serving entries take a factory:
 * `createMcpHandler` calls it once per HTTP request (stateless: any instance
 * can serve any round) and `serveStdio` once per connection, for 2026-07-28
 * and 2025-era clients alike. This factory builds a fresh server with the
 * runner's flows registered from a registry prepared once (`prepareFlows`);
 * the runner itself, its codec and its ledger are shared, and hold nothing
 * between rounds. A server for a `tools/call` that the HTTP handler noted
 * (`calledTool.ts`) registers that tool alone; one whose client declared MCP
 * Apps (`apps/negotiation.ts`) offers the decision app.
 */
import { McpServer, type McpServerFactory } from '@modelcontextprotocol/server';
import { appsRequested } from './apps/negotiation.js';
import { calledTool } from './calledTool.js';
import { advertiseFixedLists } from './fixedLists.js';
import { requireBatonScopes } from './protectedResource.js';
import { prepareFlows, type RegisterFlowsOptions, registerPreparedFlows } from './registerFlows.js';

/** Options of {@link createFlowServerFactory}. */
export interface FlowServerOptions extends RegisterFlowsOptions {
  /** `serverInfo.name` (default `baton`). */
  readonly name?: string;
  /** `serverInfo.version` (default `0.1.0`). */
  readonly version?: string;
  /** Server instructions shown to the client's model. */
  readonly instructions?: string;
  /**
   * Require OAuth scopes (with `createOAuthVerifier`): flows and the requester's tools need
   * `baton:call`, `baton_inbox` and `baton_decide` need `baton:decide`; a token without the scope
   * gets HTTP 403 `insufficient_scope`. Leave off with static tokens (they carry no scopes).
   */
  readonly requireScopes?: boolean;
}

/** The `serverInfo` the servers of these options name: `{ name: 'baton', version: '0.1.0' }` by default. */
export function serverInfoOf(options: Pick<FlowServerOptions, 'name' | 'version'>): { name: string; version: string } {
  return { name: options.name ?? 'baton', version: options.version ?? '0.1.0' };
}

/**
 * A factory of `McpServer`s serving the runner's flows, for `createMcpHandler` or `serveStdio`.
 *
 * @example
 * ```ts
 * import { createFlowServerFactory } from '@baton/adapters';
 * import { createMcpHandler } from '@modelcontextprotocol/server';
 *
 * const handler = createMcpHandler(createFlowServerFactory({ runner }));
 * ```
 */
export function createFlowServerFactory(options: FlowServerOptions): McpServerFactory {
  const info = serverInfoOf(options);
  const serverOptions = options.instructions ? { instructions: options.instructions } : undefined;
  // What the flows' registrations derive from the runner is computed here once; each server
  // (one per HTTP request) only registers them.
  const prepared = prepareFlows(options);
  return (ctx) => {
    const server = new McpServer(info, serverOptions);
    const registered = registerPreparedFlows(
      server,
      prepared,
      calledTool(ctx?.requestInfo),
      appsRequested(ctx?.requestInfo),
    );
    if (options.requireScopes) requireBatonScopes(registered);
    // One server per HTTP request: its lists cannot change while it serves (`fixedLists.ts`).
    if (ctx?.requestInfo) advertiseFixedLists(server);
    return server;
  };
}
