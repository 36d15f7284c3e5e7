/**
 * Apps declared by flows (`defineFlow({ app })`): for a client that declared
 * MCP Apps, each such flow's HTML document is served as
 * `ui://baton/flows/<flow>` (`text/html;profile=mcp-app`, through ext-apps'
 * `registerAppResource`, with no CSP domains: the host's strictest default,
 * so the document reaches no remote origin), and the flow's tool declares it
 * in place of Baton's run-status app (`appTools.ts`). The document is the
 * author's and static; what it shows of a run comes from `baton_run_status`,
 * whose `run.app` carries the data the flow computes from the run's context
 * for the state it waits in (`runStatusTool.ts`).
 */
import type { Flow, Runner } from '@baton/engine';
import { registerAppResource } from '@modelcontextprotocol/ext-apps/server';
import type { McpServer, RegisteredResource } from '@modelcontextprotocol/server';
import { APP_MIME_TYPE } from './negotiation.js';

/** The URI of a flow's own app. */
export function flowAppUri(flow: Pick<Flow, 'name'>): string {
  return `ui://baton/flows/${flow.name}`;
}

/** The `_meta.ui` of a flow's app resource: no CSP domains (the host's strictest default), a border. */
const UI_META = { ui: { csp: {}, prefersBorder: true } };

/** Register the apps of the runner's flows that declare one (for a client that declared MCP Apps). */
export function registerFlowApps(server: McpServer, runner: Pick<Runner, 'flows'>): RegisteredResource[] {
  const registered: RegisteredResource[] = [];
  for (const flow of runner.flows.values()) {
    const app = flow.app;
    if (!app) continue;
    const uri = flowAppUri(flow);
    registered.push(
      registerAppResource(
        server,
        app.title ?? flow.title ?? flow.name,
        uri,
        { description: `The app of ${flow.title ?? flow.name}: a run, as the flow shows it.`, _meta: UI_META },
        async () => ({ contents: [{ uri, mimeType: APP_MIME_TYPE, text: app.html, _meta: UI_META }] }),
      ),
    );
  }
  return registered;
}
