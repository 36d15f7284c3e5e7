/**
 * `notifications/tasks` (the tasks extension's status notifications) on a
 * connection that can carry them: one server per connection, as `serveStdio`
 * makes. A tool call answered with a task is watched from then on
 * (`taskWatch.ts`: read from the ledger with the caller's own context, as its
 * `tasks/get` would read it, every `pollIntervalMs` of the task), and
 * each change of status or of its last update is sent as a notification with
 * the detailed task (`notifications/tasks`, params as `tasks/get` answers),
 * until the task ends or the connection closes. The server learns of changes
 * made elsewhere (a decision on another instance, a timer the scheduler fired)
 * from the ledger, as any instance does. Polling stays the contract: a client
 * that ignores these loses nothing. Over stateless Streamable HTTP a task is
 * answered at once, which ends the request's stream: a client follows its tasks
 * there with `subscriptions/listen` (`subscriptions/taskListen.ts`) instead.
 */
import type { Runner, TaskCaller, TaskSnapshot } from '@baton/engine';
import type { McpServer } from '@modelcontextprotocol/server';
import { createTaskWatcher } from './taskWatch.js';
import { detailedTask } from './wire.js';

/** The notification's method (`TaskStatusNotificationV2Schema` of `@modelcontextprotocol/ext-tasks/core/v2`). */
export const TASK_NOTIFICATION_METHOD = 'notifications/tasks';

/** What {@link createTaskNotifier} needs. */
export interface TaskNotifierOptions {
  readonly runner: Runner;
  /** Errors that never reach the client (a ledger outage, a closed transport). */
  readonly onError: (error: unknown) => void;
}

/** The watches of one connection's server. */
export interface TaskNotifier {
  /** Watch `task`, created for `context`: notify each change until it ends. */
  watch(task: TaskSnapshot, context: TaskCaller): void;
  /** Stop every watch (the connection closed). */
  close(): void;
}

/** Send `notifications/tasks` for the tasks `server`'s tool calls create (see the module comment). */
export function createTaskNotifier(server: McpServer, options: TaskNotifierOptions): TaskNotifier {
  const watcher = createTaskWatcher(options.runner, options.onError);
  return {
    watch(task, context) {
      watcher.watch(task, context, {
        changed: (changed) =>
          server.server.notification({
            method: TASK_NOTIFICATION_METHOD,
            params: detailedTask(changed) as unknown as Record<string, unknown>,
          } as never),
      });
    },
    close: () => watcher.close(),
  };
}
