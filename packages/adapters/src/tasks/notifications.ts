/**
 * `notifications/tasks` (the tasks extension's status notifications) on a
 * connection that can carry them: one server per connection, as `serveStdio`
 * makes. A tool call answered with a task is watched from then on: its task
 * is read from the ledger (`runner.tasks.get`, with the caller's own context,
 * as its `tasks/get` would read it) every `pollIntervalMs` of the task, and
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
import { detailedTask } from './wire.js';

/** The notification's method (`TaskStatusNotificationV2Schema` of `@modelcontextprotocol/ext-tasks/core/v2`). */
export const TASK_NOTIFICATION_METHOD = 'notifications/tasks';

/** How often a watched task is read at most and at least, ms (its `pollIntervalMs`, bounded). */
const MIN_INTERVAL_MS = 250;
const MAX_INTERVAL_MS = 30_000;

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

const ended = (task: TaskSnapshot) =>
  task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled';
const mark = (task: TaskSnapshot) => `${task.status}\u0000${task.updatedAt}`;
const interval = (task: TaskSnapshot) => Math.min(MAX_INTERVAL_MS, Math.max(MIN_INTERVAL_MS, task.pollIntervalMs));

/** Send `notifications/tasks` for the tasks `server`'s tool calls create (see the module comment). */
export function createTaskNotifier(server: McpServer, options: TaskNotifierOptions): TaskNotifier {
  const { runner, onError } = options;
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let closed = false;

  const watch = (created: TaskSnapshot, context: TaskCaller) => {
    let last = mark(created);
    const schedule = (task: TaskSnapshot) => {
      if (closed) return;
      const timer = setTimeout(() => {
        timers.delete(timer);
        void tick(task);
      }, interval(task));
      timer.unref?.();
      timers.add(timer);
    };
    const tick = async (previous: TaskSnapshot) => {
      if (closed) return;
      let task: TaskSnapshot | undefined = previous;
      try {
        task = await runner.tasks.get({ id: created.id, context });
        if (!task) return; // gone (pruned): nothing more to say
        if (mark(task) !== last && !closed) {
          last = mark(task);
          await server.server.notification({
            method: TASK_NOTIFICATION_METHOD,
            params: detailedTask(task) as unknown as Record<string, unknown>,
          } as never);
        }
        if (ended(task)) return;
      } catch (error) {
        onError(error);
      }
      schedule(task ?? previous);
    };
    schedule(created);
  };

  return {
    watch,
    close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
