/**
 * The hook of MCP Apps in the decision tools: for a server built for a
 * client that declared the extension (`negotiation.ts`), the server
 * acknowledges it (`capabilities.extensions["io.modelcontextprotocol/ui"] = {}`),
 * serves the app resources (`decisionApp.ts`), and registers `baton_inbox`
 * and `baton_decide` through ext-apps' `registerAppTool` with their
 * `_meta.ui.resourceUri` (and the legacy `_meta["ui/resourceUri"]` it adds);
 * `baton_decide` then takes the app's `answer` (`decideInApp.ts`). The tool of
 * a flow that parks (it awaits decisions, events or durable steps) declares
 * the run-status app, `ui://baton/run`, on its definition: the spec links an
 * app to a tool, not to one of its results, so the app renders every result
 * of the tool (a finished run's too) and follows a parked one through
 * `baton_run_status` (`runStatusTool.ts`). Any other server registers the
 * tools exactly as before.
 */
import type { Flow } from '@baton/engine';
import { registerAppTool } from '@modelcontextprotocol/ext-apps/server';
import type {
  McpServer,
  RegisteredTool,
  ServerContext,
  StandardSchemaWithJSON,
  ToolAnnotations,
  ToolCallback,
} from '@modelcontextprotocol/server';
import { DECIDE_APP_URI, INBOX_APP_URI, RUN_APP_URI, registerDecisionApps } from './decisionApp.js';
import { flowAppUri } from './flowApps.js';
import { UI_EXTENSION_ID } from './negotiation.js';

/** The two decision tools that declare an app. */
export type AppToolName = 'baton_inbox' | 'baton_decide';

const APP_URIS: Readonly<Record<AppToolName, string>> = {
  baton_inbox: INBOX_APP_URI,
  baton_decide: DECIDE_APP_URI,
};

/** A decision tool's configuration (what `McpServer.registerTool` takes of it). */
export interface DecisionToolConfig {
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema?: StandardSchemaWithJSON;
  readonly annotations?: ToolAnnotations;
  readonly _meta?: Record<string, unknown>;
}

/** Acknowledge MCP Apps on `server` and serve the decision app's resources. */
export function offerDecisionApps(server: McpServer): void {
  server.server.registerCapabilities({ extensions: { [UI_EXTENSION_ID]: {} } });
  registerDecisionApps(server);
}

/** Register one of the two app tools with its `_meta.ui.resourceUri`, through ext-apps' helper. */
export function registerDecisionAppTool<A>(
  server: McpServer,
  name: AppToolName,
  config: DecisionToolConfig,
  callback: (args: A, ctx: ServerContext) => ReturnType<ToolCallback>,
): RegisteredTool {
  const resourceUri = APP_URIS[name];
  return registerAppTool(
    server,
    name,
    { ...(config as object), _meta: { ...config._meta, ui: { resourceUri } } } as Parameters<typeof registerAppTool>[2],
    callback as unknown as Parameters<typeof registerAppTool>[3],
  );
}

/**
 * How the decision tools register `baton_inbox` and `baton_decide` on `server`: with their app
 * for a client that declared MCP Apps (`apps`), else exactly as any other tool.
 */
export function appToolRegistrar(server: McpServer, apps: boolean) {
  return <A>(
    name: AppToolName,
    config: DecisionToolConfig,
    callback: (args: A, ctx: ServerContext) => ReturnType<ToolCallback>,
  ): RegisteredTool =>
    apps
      ? registerDecisionAppTool(server, name, config, callback)
      : server.registerTool(name, config, callback as never);
}

/**
 * Register the tool of a flow that parks with the run-status app (`ui://baton/run`), or the
 * flow's own app, for a client that declared MCP Apps (`apps`), else exactly as any other tool.
 */
export function registerFlowTool(
  server: McpServer,
  apps: boolean,
  flow: Pick<Flow, 'name' | 'app'>,
  config: DecisionToolConfig,
  callback: (args: unknown, ctx: ServerContext) => ReturnType<ToolCallback>,
): RegisteredTool {
  const name = flow.name;
  if (!apps) return server.registerTool(name, config, callback as never);
  // A flow with its own app (`defineFlow({ app })`) declares it instead (`flowApps.ts`).
  const resourceUri = flow.app ? flowAppUri(flow) : RUN_APP_URI;
  return registerAppTool(
    server,
    name,
    { ...(config as object), _meta: { ...config._meta, ui: { resourceUri } } } as Parameters<typeof registerAppTool>[2],
    callback as unknown as Parameters<typeof registerAppTool>[3],
  );
}
