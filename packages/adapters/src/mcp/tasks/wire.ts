/**
 * Baton's tasks on the tasks extension's wire (`io.modelcontextprotocol/tasks`,
 * the 2026-07-28 shapes of `@modelcontextprotocol/ext-tasks/core/v2`): the
 * engine's transport-free {@link TaskSnapshot} (ms times) becomes the
 * `tools/call` answer `{ resultType: "task", ... }` or the detailed task of
 * `tasks/get` / `notifications/tasks` (ISO 8601 times; `inputRequests`,
 * `result` with `resultType: "complete"`, or `error` by status). Also whether
 * a request's client declared the extension.
 */
import type { TaskSnapshot } from '@baton/engine';
import {
  type CreateTaskResultV2,
  type DetailedTaskV2,
  TASKS_EXTENSION_ID_V2,
  TasksExtensionCapabilityV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import type { ClientCapabilities } from '@modelcontextprotocol/server';

export { TASKS_EXTENSION_ID_V2 as TASKS_EXTENSION_ID };

/** Whether declared client capabilities name the tasks extension (its value exactly `{}`, as its schema says). */
export function declaresTasks(capabilities: ClientCapabilities | undefined): boolean {
  const extensions = (capabilities as { extensions?: Record<string, unknown> } | undefined)?.extensions;
  if (typeof extensions !== 'object' || extensions === null || !Object.hasOwn(extensions, TASKS_EXTENSION_ID_V2)) {
    return false;
  }
  return TasksExtensionCapabilityV2Schema.safeParse(extensions[TASKS_EXTENSION_ID_V2]).success;
}

/** The fields every task shape shares. */
function base(task: TaskSnapshot) {
  return {
    taskId: task.id,
    ...(task.statusMessage === undefined ? {} : { statusMessage: task.statusMessage }),
    createdAt: new Date(task.createdAt).toISOString(),
    lastUpdatedAt: new Date(task.updatedAt).toISOString(),
    ttlMs: Math.round(task.ttlMs),
    pollIntervalMs: Math.round(task.pollIntervalMs),
  };
}

/**
 * The answer to a `tools/call` whose flow was parked: the task, created (durably) in its ledger.
 *
 * Wire: `{ resultType: 'task', taskId, status: 'working', statusMessage, createdAt, lastUpdatedAt, ttlMs, pollIntervalMs }`
 */
export function createTaskResult(task: TaskSnapshot): CreateTaskResultV2 {
  return { resultType: 'task', ...base(task), status: task.status };
}

/**
 * The task as `tasks/get` answers it (the SDK stamps `resultType: 'complete'`).
 *
 * Wire: `{ taskId, status: 'working', statusMessage, ... }`, `{ status: 'input_required', inputRequests }`,
 * `{ status: 'completed', result: { resultType: 'complete', content, structuredContent?, isError? } }`,
 * `{ status: 'failed', error: { code, message } }` or `{ status: 'cancelled' }`.
 */
export function detailedTask(task: TaskSnapshot): DetailedTaskV2 {
  const common = base(task);
  switch (task.status) {
    case 'input_required':
      return { ...common, status: 'input_required', inputRequests: task.inputRequests ?? {} } as DetailedTaskV2;
    case 'completed':
      return { ...common, status: 'completed', result: { resultType: 'complete', ...task.result } } as DetailedTaskV2;
    case 'failed':
      return { ...common, status: 'failed', error: task.error ?? { code: -32603, message: 'The task failed.' } };
    case 'cancelled':
      return { ...common, status: 'cancelled' };
    default:
      return { ...common, status: 'working' };
  }
}
