/**
 * The tasks extension's methods on an official-SDK server: the capability
 * `extensions: { "io.modelcontextprotocol/tasks": {} }` and request handlers
 * for `tasks/get`, `tasks/update` and `tasks/cancel`, registered through the
 * SDK's custom-method API (`setRequestHandler(method, { params }, handler)`,
 * params validated with the extension's own schemas), never hand-framed.
 * Each maps one of the runner's transport-free task methods
 * (`runner.tasks`) with the caller's principal: any instance answers from the
 * ledger. A request whose client did not declare the extension is refused
 * with -32021 and HTTP 400 (`required.ts`) before anything is read. An
 * unknown task and another principal's task get the same error (-32602
 * "Unknown task"); a cancel of a task that has ended is acknowledged like any
 * other (idempotent: -32602 is for unknown tasks only), a cancel refused while
 * the task goes on (its flow has no withdrawal path there) is -32602 with the
 * sentence that says why; an unreachable ledger is the retryable -32000 of
 * every round. The SDK checks the routing headers first (`Mcp-Method`, and
 * `Mcp-Name` = `params.taskId` on these three methods: -32020, HTTP 400).
 */
import type { Runner } from '@baton/engine';
import {
  CancelTaskRequestV2Schema,
  GetTaskRequestV2Schema,
  TASKS_EXTENSION_ID_V2,
  UpdateTaskRequestV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import { type McpServer, ProtocolError, ProtocolErrorCode, type ServerContext } from '@modelcontextprotocol/server';
import { declaredCapabilities, toInputCapabilities } from '../callContext.js';
import { toProtocolError } from '../playRound.js';
import { requireTasks } from './required.js';
import { detailedTask } from './wire.js';

/** The message of the error for an unknown task, and for someone else's (no oracle). */
export const UNKNOWN_TASK_MESSAGE = 'Unknown task';

/** Options of {@link registerTaskMethods}. */
export interface TaskMethodsOptions {
  readonly runner: Runner;
  readonly principal: (ctx: ServerContext) => string;
  readonly roles: (ctx: ServerContext) => readonly string[];
  readonly onError: (error: unknown) => void;
}

function unknownTask(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, UNKNOWN_TASK_MESSAGE);
}

/**
 * Advertise the tasks extension on `server` (`capabilities.extensions["io.modelcontextprotocol/tasks"]`,
 * exactly `{}`) and serve its methods from the runner's ledger; a runner without a ledger has no
 * task to show (every id is unknown).
 */
export function registerTaskMethods(server: McpServer, options: TaskMethodsOptions): void {
  const { runner, onError } = options;
  const low = server.server;
  const caller = (ctx: ServerContext) => ({
    principal: options.principal(ctx),
    roles: options.roles(ctx),
    capabilities: toInputCapabilities(declaredCapabilities(server, ctx)),
  });
  const guarded = async <T>(ctx: ServerContext, method: string, work: () => Promise<T>): Promise<T> => {
    requireTasks(server, ctx, method);
    if (!runner.hasLedger) throw unknownTask();
    try {
      return await work();
    } catch (error) {
      throw toProtocolError(error, onError);
    }
  };
  low.registerCapabilities({ extensions: { [TASKS_EXTENSION_ID_V2]: {} } });
  low.setRequestHandler('tasks/get', { params: GetTaskRequestV2Schema.shape.params }, (params, ctx) =>
    guarded(ctx, 'tasks/get', async () => {
      const task = await runner.tasks.get({ id: params.taskId, context: caller(ctx) });
      if (!task) throw unknownTask();
      return detailedTask(task) as unknown as Record<string, unknown>;
    }),
  );
  // The SDK lifts `inputResponses` off every request's params (MRTR) into `ctx.mcpReq`: read it there.
  const updateParams = UpdateTaskRequestV2Schema.shape.params.partial({ inputResponses: true });
  low.setRequestHandler('tasks/update', { params: updateParams }, (params, ctx) =>
    guarded(ctx, 'tasks/update', async () => {
      const acknowledged = await runner.tasks.update({
        id: params.taskId,
        context: caller(ctx),
        inputResponses: params.inputResponses ?? ctx.mcpReq.inputResponses,
      });
      if (!acknowledged) throw unknownTask();
      return {};
    }),
  );
  low.setRequestHandler('tasks/cancel', { params: CancelTaskRequestV2Schema.shape.params }, (params, ctx) =>
    guarded(ctx, 'tasks/cancel', async () => {
      const result = await runner.tasks.cancel({ id: params.taskId, context: caller(ctx) });
      if (!result) throw unknownTask();
      if (result.type === 'refused') throw new ProtocolError(ProtocolErrorCode.InvalidParams, result.message);
      return {};
    }),
  );
}
