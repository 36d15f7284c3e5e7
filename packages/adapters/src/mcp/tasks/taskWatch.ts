/**
 * Following tasks from the ledger, for the two places that push task status to a client: the
 * per-connection notifier (`notifications.ts`, stdio) and `subscriptions/listen` over stateless
 * HTTP (`../subscriptions/taskListen.ts`). A watched task is read with the follower's own context
 * (`runner.tasks.get`, as its `tasks/get` would read it) every `pollIntervalMs` of the task,
 * bounded; each change of its status or of its last update is handed to `changed`, and `settled`
 * is called once when it ended or is gone (pruned). The ledger is the only source, so a change made
 * on any instance (a decision, a timer the scheduler fired, an operator's cancel) is seen alike. A
 * read that fails (a ledger outage) is reported to `onError` and tried again at the next interval.
 */
import type { Runner, TaskCaller, TaskSnapshot } from '@baton/engine';

/** How often a watched task is read at most and at least, ms (its `pollIntervalMs`, bounded). */
const MIN_INTERVAL_MS = 250;
const MAX_INTERVAL_MS = 30_000;

/** What a watch reports. */
export interface TaskWatchHandlers {
  /** The task changed (status or last update) since it was last seen. */
  readonly changed: (task: TaskSnapshot) => void | Promise<void>;
  /** The task ended (`completed`, `failed`, `cancelled`) or is gone; nothing follows. */
  readonly settled?: () => void;
}

/** The watches of one follower (a connection, a listen stream). */
export interface TaskWatcher {
  /** Watch `task`, last seen as given, read as `context` would read it. */
  watch(task: TaskSnapshot, context: TaskCaller, handlers: TaskWatchHandlers): void;
  /** Stop every watch: no read or report after this. */
  close(): void;
}

/** Whether a task has ended: no status follows these. */
export const taskEnded = (task: TaskSnapshot) =>
  task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled';

const mark = (task: TaskSnapshot) => `${task.status}\u0000${task.updatedAt}`;
const interval = (task: TaskSnapshot) => Math.min(MAX_INTERVAL_MS, Math.max(MIN_INTERVAL_MS, task.pollIntervalMs));

/** A watcher over `runner`'s ledger (see the module comment). */
export function createTaskWatcher(runner: Runner, onError: (error: unknown) => void): TaskWatcher {
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let closed = false;

  const watch = (first: TaskSnapshot, context: TaskCaller, handlers: TaskWatchHandlers) => {
    let last = mark(first);
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
        task = await runner.tasks.get({ id: first.id, context });
        if (closed) return;
        if (!task) {
          handlers.settled?.();
          return;
        }
        if (mark(task) !== last) {
          last = mark(task);
          await handlers.changed(task);
        }
        if (taskEnded(task)) {
          handlers.settled?.();
          return;
        }
      } catch (error) {
        onError(error);
      }
      schedule(task ?? previous);
    };
    schedule(first);
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
