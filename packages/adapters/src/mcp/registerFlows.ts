/**
 * `registerFlows`: a runner's flows on an official-SDK `McpServer`. Each flow
 * is a tool by default and, when its exposure says so, also a prompt and a
 * resource: the three methods that may answer `input_required`. Every
 * request becomes one `runner.run()` round with the caller's principal, the
 * method and target, the client's declared input kinds, the raw arguments,
 * and the raw `requestState` and `inputResponses` the SDK lifted off the
 * request (no SDK `requestState.verify` hook is involved: the engine's state
 * is opaque to the SDK and reaches the runner byte for byte). A 2025-era
 * client on stateless HTTP, which cannot answer input requests there, is told
 * that such flows need a 2026-07-28 client (or stdio). Params the SDK refuses
 * before any handler runs get a readable -32602 (`paramsErrors.ts`). When a
 * flow awaits decisions by others and the runner has a ledger, the decision
 * tools are registered beside the flows (`decisionTools.ts`).
 */
import type { Flow, Runner } from '@baton/engine';
import {
  type McpServer,
  ProtocolError,
  type RegisteredPrompt,
  type RegisteredResource,
  type RegisteredResourceTemplate,
  type RegisteredTool,
  type ServerContext,
  type StandardSchemaWithJSON,
  type Variables,
} from '@modelcontextprotocol/server';
import type { ServingMetrics } from '../observability/metrics.js';
import { registerFlowTool } from './apps/appTools.js';
import { defaultPrincipal, defaultRoles } from './callContext.js';
import { withCompleters } from './completions.js';
import { DECISION_TOOLS, registerDecisionTools } from './decisionTools.js';
import { argumentTypes, coerceStringArguments, listedArguments } from './flowArguments.js';
import { type FlowResource, type PreparedResource, prepareResource } from './flowResources.js';
import { callFlowTool, type FlowRoundCall, playFlowRound } from './flowRound.js';
import { readableParamsErrors } from './paramsErrors.js';
import { toPromptResult, toResourceResult } from './results.js';
import { registerTaskMethods } from './tasks/methods.js';
import { createTaskNotifier } from './tasks/notifications.js';
import { enableToolErrorEscape, escapeToolError } from './toolErrorEscape.js';

export { FLOW_RESOURCE_PREFIX, type FlowResource } from './flowResources.js';

/**
 * How one flow is served. Tools are on by default; prompts and resources are opt-in.
 *
 * - `tool`: `tools/call` with the flow's name; `inputSchema` from its zod `args`,
 *   its description and annotations.
 * - `prompt`: `prompts/get` with the flow's name; its arguments are the prompt's
 *   arguments (strings on the wire, converted to the numbers and booleans the schema
 *   declares); the finished result's content blocks (text, image, audio, embedded resources)
 *   become `user` messages; the flow's completers (`defineFlow({ complete })`) answer
 *   `completion/complete` for its arguments.
 * - `resource`: `resources/read` of `baton://flows/<name>` (`true`: a static resource when the
 *   flow takes no arguments, else the template `baton://flows/<name>{?a,b}`, query
 *   parameters in any order), or of the author's URI or URI template (`{ uri, mimeType?, name? }`,
 *   see {@link FlowResource}); the finished result's text becomes one text item (JSON for
 *   `structuredContent`), image and audio blocks `blob` items, embedded resources their contents.
 * - `task`: (default `true`) a `tools/call` of the flow from a client that declared the tasks
 *   extension answers with a task (`resultType: "task"`) once the flow is parked waiting on
 *   someone else or on its running steps; `false` keeps today's answers for every client (the
 *   held call, "retry later", the waiting result and `baton_resume`); `'required'`: the flow
 *   runs only as a task, and a client that did not declare the extension is refused with
 *   JSON-RPC -32021 (HTTP 400) before anything runs.
 */
export interface FlowExposure {
  readonly tool?: boolean;
  readonly task?: boolean | 'required';
  readonly prompt?: boolean;
  readonly resource?: boolean | FlowResource;
}

/** Options of {@link registerFlows}. */
export interface RegisterFlowsOptions {
  /** Serves the rounds; every one of its flows is registered. */
  readonly runner: Runner;
  /**
   * Which methods serve each flow: one exposure for all, or a function of the flow.
   * Default `{ tool: true }`.
   *
   * @example `expose: (flow) => (flow.name === 'expense_approval' ? { tool: true, prompt: true } : {})`
   */
  readonly expose?: FlowExposure | ((flow: Flow) => FlowExposure);
  /**
   * The principal every state is bound to. Default {@link defaultPrincipal}: the
   * verified bearer token's principal over HTTP, the local user over stdio.
   */
  readonly principal?: (ctx: ServerContext) => string;
  /**
   * The caller's roles (who may make which decisions). Default: the verified token's roles
   * over HTTP (`authInfo.extra.roles`), none otherwise.
   */
  readonly roles?: (ctx: ServerContext) => readonly string[];
  /** Errors that never reach the client (for example an unreachable ledger); default: ignored. */
  readonly onError?: (error: unknown) => void;
  /** Where rounds are counted by how they ended (`GET /metrics`); default: not counted. */
  readonly metrics?: ServingMetrics;
  /**
   * Register the decision tools (`baton_inbox`, `baton_decide`, `baton_requests`,
   * `baton_resume`, `baton_withdraw`) when a flow awaits decisions or has durable steps and the
   * runner has a ledger. Default `true`.
   */
  readonly decisionTools?: boolean;
  /**
   * Send `notifications/tasks` for the tasks this server's tool calls create, on connections
   * that carry them: a server per connection, as `serveStdio` makes (`baton serve --stdio` sets
   * it). Over stateless HTTP a client listens with `subscriptions/listen` instead
   * (`subscriptions/taskListen.ts`). Default `false`: polling `tasks/get` is the contract either way.
   */
  readonly taskNotifications?: boolean;
}

/** What {@link registerFlows} registered, by flow name (to disable, enable or remove later); `tools` includes the decision tools. */
export interface RegisteredFlows {
  readonly tools: ReadonlyMap<string, RegisteredTool>;
  readonly prompts: ReadonlyMap<string, RegisteredPrompt>;
  readonly resources: ReadonlyMap<string, RegisteredResource | RegisteredResourceTemplate>;
}

/**
 * Register a runner's flows on an `McpServer`.
 *
 * Outcomes on the wire:
 * - complete: `{ resultType: 'complete', content, structuredContent?, isError? }` (tools),
 *   `{ messages }` (prompts), `{ contents: [{ uri, mimeType, text | blob }] }` (resources);
 * - input_required: `{ resultType: 'input_required', inputRequests?, requestState }`;
 * - error: `{ content: [{ type: 'text', text }], isError: true }` (tools), JSON-RPC -32603
 *   (prompts, resources; -32602 for invalid arguments);
 * - invalid, expired, tampered, foreign or replayed state: JSON-RPC
 *   `{ code: -32602, message: 'Invalid or expired requestState', data: { reason } }`;
 * - arguments or answers nested too deeply or holding a non-finite number: JSON-RPC -32602
 *   with a sentence saying where (`InvalidParamsError`), before anything runs.
 *
 * The server must not configure the SDK's `requestState.verify` hook: Baton's
 * runner verifies its own states and needs the raw wire string. Flow tools
 * coexist with tools registered directly on the server (see `toolErrorEscape.ts`).
 *
 * @example
 * ```ts
 * import { registerFlows } from '@baton/adapters';
 * import { McpServer } from '@modelcontextprotocol/server';
 *
 * const server = new McpServer({ name: 'approvals', version: '1.0.0' });
 * registerFlows(server, { runner, expose: (flow) => ({ tool: true, prompt: flow.name === 'expense_approval' }) });
 * ```
 */
export function registerFlows(server: McpServer, options: RegisterFlowsOptions): RegisteredFlows {
  return registerPreparedFlows(server, prepareFlows(options));
}

/** A flow's registrations, computed once: configs, schemas, argument types, resource template. */
interface PreparedFlow {
  readonly flow: Flow;
  /** Whether a tasks client's call of the tool is answered with a task once the flow parks. */
  readonly task: boolean;
  /** Whether only a tasks client may call the tool (`task: 'required'`). */
  readonly taskRequired: boolean;
  readonly tool?: {
    readonly title?: string;
    readonly description: string;
    readonly inputSchema: StandardSchemaWithJSON;
    readonly annotations?: Flow['annotations'];
  };
  readonly prompt?: {
    readonly config: {
      readonly title?: string;
      readonly description: string;
      readonly argsSchema: StandardSchemaWithJSON;
    };
    readonly types: ReadonlyMap<string, string | undefined>;
  };
  readonly resource?: PreparedResource;
}

/** What {@link registerPreparedFlows} needs: everything about the flows that is the same for every server. */
export interface PreparedFlows {
  readonly runner: Runner;
  readonly principalOf: (ctx: ServerContext) => string;
  readonly rolesOf: (ctx: ServerContext) => readonly string[];
  readonly onError: (error: unknown) => void;
  readonly flows: readonly PreparedFlow[];
  readonly decisionTools: boolean;
  /** Whether a flow may answer with a task (a ledger and flows that park); the extension is offered either way. */
  readonly tasks: boolean;
  /** Whether each server sends `notifications/tasks` for the tasks it creates (a server per connection). */
  readonly taskNotifications: boolean;
  /** Where rounds are counted (see `observability/metrics.ts`), when anywhere. */
  readonly metrics?: ServingMetrics;
}

/**
 * Everything {@link registerFlows} derives from the runner's flows and the options, computed once,
 * so that a server per request (stateless HTTP) only registers: exposures, tool, prompt and
 * resource configs, listed schemas (with their JSON Schema remembered), argument types and
 * resource templates.
 */
export function prepareFlows(options: RegisterFlowsOptions): PreparedFlows {
  const { runner } = options;
  const flows: PreparedFlow[] = [];
  for (const flow of runner.flows.values()) {
    const exposure = typeof options.expose === 'function' ? options.expose(flow) : (options.expose ?? {});
    const title = flow.title ?? flow.annotations?.title;
    const titled = title ? { title } : {};
    const types = exposure.prompt ? argumentTypes(flow) : new Map<string, string | undefined>();
    flows.push({
      flow,
      task: (exposure.task ?? true) !== false && (flow.decisions.length > 0 || flow.steps.length > 0),
      taskRequired: exposure.task === 'required',
      ...((exposure.tool ?? true)
        ? {
            tool: {
              ...titled,
              description: flow.description,
              inputSchema: listedArguments(flow),
              ...(flow.annotations ? { annotations: flow.annotations } : {}),
            },
          }
        : {}),
      ...(exposure.prompt
        ? {
            prompt: {
              config: {
                ...titled,
                description: flow.description,
                argsSchema: withCompleters(flow, listedArguments(flow)),
              },
              types,
            },
          }
        : {}),
      ...(exposure.resource ? { resource: prepareResource(flow, exposure.resource, titled) } : {}),
    });
  }
  return {
    runner,
    principalOf: options.principal ?? defaultPrincipal,
    rolesOf: options.roles ?? ((ctx: ServerContext) => defaultRoles(ctx)),
    onError: options.onError ?? (() => {}),
    flows,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    // A flow with durable steps needs baton_resume too: a call whose steps outlive its wait
    // completes with a "working" result that continues there; so does one waiting for an event.
    decisionTools:
      (runner.awaitsDecisions || runner.hasDurableSteps || runner.awaitsEvents) &&
      runner.hasLedger &&
      (options.decisionTools ?? true),
    tasks: runner.hasLedger && flows.some((prepared) => prepared.task),
    taskNotifications: options.taskNotifications === true,
  };
}

/**
 * Register prepared flows (see {@link prepareFlows}) on a server: what {@link registerFlows} does.
 * With `calledTool` (a server built for one `tools/call` of that tool, see `calledTool.ts`) only
 * that tool is registered, when it is one of them; otherwise everything is. With `apps` (the
 * request's client declared MCP Apps, see `apps/negotiation.ts`) the decision tools declare the
 * decision app, the tools of flows that park the run-status app, and their resources are served.
 */
export function registerPreparedFlows(
  server: McpServer,
  prepared: PreparedFlows,
  calledTool?: string,
  apps = false,
): RegisteredFlows {
  const { runner, principalOf, rolesOf, onError, metrics } = prepared;
  const decisionCall = prepared.decisionTools && calledTool !== undefined && DECISION_TOOLS.has(calledTool);
  const flowCall = !decisionCall && prepared.flows.some(({ flow, tool }) => tool && flow.name === calledTool);
  const narrowed = decisionCall || flowCall;
  const tools = new Map<string, RegisteredTool>();
  const prompts = new Map<string, RegisteredPrompt>();
  const resources = new Map<string, RegisteredResource | RegisteredResourceTemplate>();
  // This server's connection carries notifications: watch the tasks it creates (`tasks/notifications.ts`).
  const notifier =
    prepared.tasks && prepared.taskNotifications ? createTaskNotifier(server, { runner, onError }) : undefined;
  if (notifier) {
    const previous = server.server.onclose;
    server.server.onclose = () => {
      notifier.close();
      previous?.();
    };
  }

  const round = (call: FlowRoundCall, ctx: ServerContext) => playFlowRound(prepared, server, call, ctx);

  for (const { flow, task, taskRequired, tool: toolConfig, prompt: promptConfig, resource } of prepared.flows) {
    if (narrowed && !(flowCall && flow.name === calledTool)) continue;
    if (toolConfig) {
      const tasks = { offered: task && prepared.tasks, required: taskRequired };
      // MCP Apps: a flow that parks shows its run in the run-status app (`apps/appTools.ts`).
      const parks = flow.decisions.length > 0 || flow.events.length > 0 || flow.steps.length > 0;
      const runApp = apps && prepared.decisionTools && parks;
      const tool = registerFlowTool(server, runApp, flow, toolConfig, async (args: unknown, ctx: ServerContext) => {
        try {
          return await callFlowTool(prepared, server, flow, tasks, args, ctx, notifier);
        } catch (error) {
          if (error instanceof ProtocolError) escapeToolError(server, ctx, error);
          throw error;
        }
      });
      enableToolErrorEscape(server);
      tools.set(flow.name, tool);
    }

    if (promptConfig && !narrowed) {
      const { types } = promptConfig;
      const prompt = server.registerPrompt(
        flow.name,
        promptConfig.config,
        async (args: unknown, ctx: ServerContext) => {
          const coerced = coerceStringArguments(types, (args ?? {}) as Record<string, unknown>);
          return toPromptResult(
            await round({ flow, method: 'prompts/get', target: flow.name, args: coerced }, ctx),
            flow.description,
          );
        },
      );
      prompts.set(flow.name, prompt);
    }

    if (resource && !narrowed) {
      const { types, name, uri: fixed, metadata, template } = resource;
      const read = async (uri: URL, variables: Variables, ctx: ServerContext) => {
        const args = coerceStringArguments(types, variables);
        const outcome = await round({ flow, method: 'resources/read', target: uri.href, args }, ctx);
        return toResourceResult(outcome, uri.href, metadata.mimeType);
      };
      const registered = template
        ? server.registerResource(name, template, metadata, read)
        : server.registerResource(name, fixed!, metadata, (uri, ctx) => read(uri, {}, ctx));
      resources.set(flow.name, registered);
    }
  }
  if (prepared.decisionTools && (decisionCall || !narrowed)) {
    for (const [name, tool] of registerDecisionTools(server, {
      runner,
      principal: principalOf,
      roles: rolesOf,
      onError,
      ...(metrics ? { metrics } : {}),
      ...(apps ? { apps } : {}),
    })) {
      tools.set(name, tool);
    }
  }
  registerTaskMethods(server, { runner, principal: principalOf, roles: rolesOf, onError });
  readableParamsErrors(server, ['tools/call', 'prompts/get', 'resources/read']);
  return { tools, prompts, resources };
}
