/**
 * One round of a flow on behalf of an MCP request: what a flow tool, prompt or
 * resource does when it is called, apart from how the request reached it. The
 * caller's principal and roles, the capabilities its client declared (its
 * request's `_meta` envelope, else its connection's `initialize`), progress
 * reporting and task support become the runner's round context; the result is
 * the round's outcome, or for a tool the `CallToolResult` (or task) the client
 * gets. Errors are the JSON-RPC errors of `playRound.ts`, thrown as
 * `ProtocolError`s. Two callers share it: the tools, prompts and resources
 * `registerFlows.ts` puts on an `McpServer`, and the `tools/call` requests
 * `directToolCalls.ts` answers without one, so both answer alike.
 */
import { type Flow, type RoundOutcome, type Runner, taskOf } from '@baton/engine';
import {
  type CallToolResult,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { ServingMetrics } from '../observability/metrics.js';
import { withIncomingTrace } from '../observability/traceContext.js';
import { type Connection, declaredCapabilities, toInputCapabilities } from './callContext.js';
import { argumentsProblem } from './flowArguments.js';
import { missingCapabilityError } from './missingCapability.js';
import { playRound } from './playRound.js';
import { progressReporter } from './progressNotifications.js';
import { toToolResult } from './results.js';
import type { TaskNotifier } from './tasks/notifications.js';
import { requireTasks } from './tasks/required.js';
import { createTaskResult, declaresTasks } from './tasks/wire.js';

/** What a round needs of the serving set-up (a `PreparedFlows` is one). */
export interface FlowRoundServing {
  readonly runner: Runner;
  readonly principalOf: (ctx: ServerContext) => string;
  readonly rolesOf: (ctx: ServerContext) => readonly string[];
  readonly onError: (error: unknown) => void;
  readonly metrics?: ServingMetrics;
}

/** The method a flow is played through, and the target the state is bound to (its name, or the URI read). */
export interface FlowRoundCall {
  readonly flow: Flow;
  readonly method: 'tools/call' | 'prompts/get' | 'resources/read';
  readonly target: string;
  readonly args: unknown;
  /** Whether a parked flow may answer with a task, when the client declared the extension. */
  readonly tasks?: boolean;
}

/** Play one round of a flow for a request (see the module comment). */
export async function playFlowRound(
  serving: FlowRoundServing,
  connection: Connection,
  call: FlowRoundCall,
  ctx: ServerContext,
): Promise<RoundOutcome> {
  const { runner, principalOf, rolesOf, onError, metrics } = serving;
  const { flow, method, target, args } = call;
  const outcome = await playRound(
    connection,
    ctx,
    onError,
    async (requestState) => {
      if (requestState === undefined && method !== 'tools/call') {
        const problem = argumentsProblem(flow, args);
        if (problem) throw new ProtocolError(ProtocolErrorCode.InvalidParams, problem);
      }
      const declared = declaredCapabilities(connection, ctx);
      const progress = progressReporter(ctx, onError);
      // A `traceparent` in the request's `_meta` is the round's parent (over the HTTP header's).
      return withIncomingTrace(ctx.mcpReq._meta as Readonly<Record<string, unknown>> | undefined, () =>
        runner.run({
          flow: flow.name,
          args,
          context: {
            principal: principalOf(ctx),
            roles: rolesOf(ctx),
            method,
            target,
            capabilities: toInputCapabilities(declared),
            ...(call.tasks && declaresTasks(declared) ? { tasks: true } : {}),
            ...(progress ? { onProgress: progress } : {}),
          },
          ...(requestState !== undefined ? { requestState } : {}),
          ...(ctx.mcpReq.inputResponses ? { inputResponses: ctx.mcpReq.inputResponses } : {}),
        }),
      );
    },
    metrics,
  );
  // An input kind the client did not declare, on the 2026-07-28 wire: -32021 (`missingCapability.ts`).
  const missing = missingCapabilityError(outcome, ctx.mcpReq.envelope !== undefined);
  if (missing) throw missing;
  return outcome;
}

/** How a flow tool takes part in the tasks extension (see `FlowExposure.task`). */
export interface FlowToolTasks {
  /** Whether a tasks client's call is answered with a task once the flow parks. */
  readonly offered: boolean;
  /** Whether only a tasks client may call it (-32021 for any other, before anything runs). */
  readonly required: boolean;
}

/**
 * A `tools/call` of a flow tool with validated arguments: the tool's result (`toToolResult`), or
 * the task of a parked flow for a tasks client (watched by `notifier` when the connection
 * carries notifications). Throws the round's `ProtocolError`s.
 */
export async function callFlowTool(
  serving: FlowRoundServing,
  connection: Connection,
  flow: Flow,
  tasks: FlowToolTasks,
  args: unknown,
  ctx: ServerContext,
  notifier?: TaskNotifier,
): Promise<CallToolResult> {
  if (tasks.required) requireTasks(connection, ctx, `The tool "${flow.name}"`);
  const outcome = await playFlowRound(
    serving,
    connection,
    { flow, method: 'tools/call', target: flow.name, args, tasks: tasks.offered },
    ctx,
  );
  // Parked for a client that follows tasks: the task instead of the waiting result (`tasks/`).
  const parked = taskOf(outcome);
  if (parked && notifier) {
    const capabilities = toInputCapabilities(declaredCapabilities(connection, ctx));
    notifier.watch(parked, { principal: serving.principalOf(ctx), roles: serving.rolesOf(ctx), capabilities });
  }
  return parked ? (createTaskResult(parked) as unknown as CallToolResult) : (toToolResult(outcome) as CallToolResult);
}
